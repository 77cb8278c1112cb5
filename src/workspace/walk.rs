//! The directory walk shared by `grep` and `glob`: skip dirs of seed 000 §8.5, ignore files (`ignore_rules`:
//! `.gitignore` also outside a git repository, `.ignore`, `.git/info/exclude`), and parallel visiting that stops
//! when the turn is cancelled. Only regular files are visited (links are not followed; FIFOs, sockets and
//! devices are passed over), the virtual file systems (`/proc`, `/sys`, `/dev`) are never entered, and secret
//! files are left out (counted, never named): a search reaches one only when the user approves it by name.
//!
//! One thread walks depth first (memory stays bounded by the directories still to visit) and hands files to
//! worker threads through a bounded queue. Nothing here opens a file but the ignore files, read safely.
//!
//! Owns which files a search may see. Must not read file contents.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use super::ignore_rules::Chain;
use super::regular;
use super::secret_files::is_secret_path;

/// Directories never searched (seed 000 §8.5), matched against a whole path component.
pub const SKIP_DIRS: [&str; 4] = [".git", "node_modules", "vendor", ".tinycode"];

/// Files waiting for a worker.
const QUEUE: usize = 1_024;
/// Most worker threads a walk uses.
const MAX_WORKERS: usize = 8;

/// A file found by the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    pub modified: SystemTime,
    pub len: u64,
}

/// Sort newest first; ties broken by path so results are deterministic.
pub fn sort_newest_first(files: &mut [Found]) {
    files.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.path.cmp(&b.path)));
}

/// What the walking thread needs.
struct Walk<'a> {
    root: &'a Path,
    max_depth: Option<usize>,
    keep: &'a (dyn Fn(&Path) -> bool + Sync),
    cancel: &'a CancellationToken,
    secret: AtomicUsize,
}

impl Walk<'_> {
    /// Walk depth first from the root, sending every file that passes to `send`.
    fn run(&self, send: &dyn Fn(Found)) {
        let mut pending: Vec<(PathBuf, usize, Arc<Chain>)> =
            vec![(self.root.to_path_buf(), 0, Chain::above(self.root))];
        while let Some((dir, depth, above)) = pending.pop() {
            if self.cancel.is_cancelled() {
                return;
            }
            let rules = above.enter(&dir);
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                if self.cancel.is_cancelled() {
                    return;
                }
                let Ok(kind) = entry.file_type() else { continue };
                let path = entry.path();
                if kind.is_dir() {
                    let skipped =
                        SKIP_DIRS.iter().any(|d| entry.file_name() == *d) || regular::is_virtual(&path);
                    let deeper = self.max_depth.is_none_or(|max| depth + 1 < max);
                    if !skipped && deeper && !rules.ignores(&path, true) {
                        pending.push((path, depth + 1, rules.clone()));
                    }
                } else if kind.is_file() && !rules.ignores(&path, false) {
                    self.file(&entry, path, send);
                }
            }
        }
    }

    fn file(&self, entry: &std::fs::DirEntry, path: PathBuf, send: &dyn Fn(Found)) {
        let rel = path.strip_prefix(self.root).unwrap_or(&path);
        if !(self.keep)(rel) {
            return;
        }
        if is_secret_path(&path) {
            self.secret.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Ok(meta) = entry.metadata() else { return };
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        send(Found { path, modified, len: meta.len() });
    }
}

/// Call `visit` for every regular file under `root` (to `max_depth` levels) whose path relative to `root` passes
/// `keep`. `visit` runs on worker threads, several at once; the walk stops early when `cancel` fires. Returns
/// how many secret files that passed `keep` were left out. A root inside a virtual file system yields nothing.
pub fn visit(
    root: &Path,
    max_depth: Option<usize>,
    keep: &(dyn Fn(&Path) -> bool + Sync),
    cancel: &CancellationToken,
    visit: &(dyn Fn(Found) + Sync),
) -> usize {
    if regular::is_virtual(root) {
        return 0;
    }
    let walk = Walk { root, max_depth, keep, cancel, secret: AtomicUsize::new(0) };
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(MAX_WORKERS);
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Found>(QUEUE);
    let receiver = Mutex::new(receiver);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let next = match receiver.lock() {
                        Ok(receiver) => receiver.recv(),
                        Err(_) => return,
                    };
                    let Ok(found) = next else { return };
                    if !cancel.is_cancelled() {
                        visit(found);
                    }
                }
            });
        }
        walk.run(&|found| {
            let _ = sender.send(found);
        });
        drop(sender);
    });
    walk.secret.into_inner()
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walked {
    pub files: Vec<Found>,
    /// Secret files left out.
    pub secret_files: usize,
}

/// Every regular file under `root` whose relative path passes `keep` (see [`visit`]).
pub fn files(
    root: &Path,
    max_depth: Option<usize>,
    keep: &(dyn Fn(&Path) -> bool + Sync),
    cancel: &CancellationToken,
) -> Walked {
    let found = Mutex::new(Vec::new());
    let secret_files = visit(root, max_depth, keep, cancel, &|hit| {
        if let Ok(mut all) = found.lock() {
            all.push(hit);
        }
    });
    Walked { files: found.into_inner().unwrap_or_default(), secret_files }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, rel: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }

    fn names(root: &Path) -> Vec<String> {
        let mut all: Vec<String> = files(root, None, &|_| true, &CancellationToken::new())
            .files
            .into_iter()
            .map(|f| f.path.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        all.sort();
        all
    }

    #[test]
    fn skip_dirs_match_whole_components_and_gitignore_applies_without_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for rel in [
            ".git/x",
            "node_modules/x",
            "vendor/x",
            "a/node_modules/x",
            ".tinycode/x",
            "myvendor/x",
            "src/bin/x",
            ".hidden/x",
            "ignored.txt",
            "kept.txt",
        ] {
            touch(root, rel);
        }
        std::fs::write(root.join(".gitignore"), "ignored.txt\n").unwrap();
        assert_eq!(names(root), vec![".gitignore", ".hidden/x", "kept.txt", "myvendor/x", "src/bin/x"]);
    }

    #[test]
    fn a_cancelled_walk_returns_without_visiting_everything() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..50 {
            touch(dir.path(), &format!("d{i}/f"));
        }
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(files(dir.path(), None, &|_| true, &cancel).files.is_empty());
    }

    #[test]
    fn secret_files_and_fifos_are_left_out_and_secrets_counted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for rel in ["src/main.rs", ".env", "config/.env.production", ".env.example", "keys/server.pem"] {
            touch(root, rel);
        }
        let pipe = std::ffi::CString::new(root.join("pipe").into_os_string().into_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(pipe.as_ptr(), 0o600) }, 0);
        let walked = files(root, None, &|_| true, &CancellationToken::new());
        assert_eq!(walked.secret_files, 3);
        assert_eq!(names(root), vec![".env.example", "src/main.rs"]);
    }

    #[test]
    fn a_fifo_named_like_an_ignore_file_neither_blocks_the_walk_nor_hides_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(root, "src/a.rs");
        touch(root, "sub/b.rs");
        for name in [".gitignore", ".ignore", "sub/.gitignore"] {
            let path = std::ffi::CString::new(root.join(name).into_os_string().into_encoded_bytes()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        }
        assert_eq!(names(root), vec!["src/a.rs", "sub/b.rs"]);
    }

    #[test]
    fn max_depth_counts_levels_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        for rel in ["a.rs", "src/b.rs", "src/deep/c.rs"] {
            touch(dir.path(), rel);
        }
        let at = |depth| {
            let mut all: Vec<String> = files(dir.path(), Some(depth), &|_| true, &CancellationToken::new())
                .files
                .into_iter()
                .map(|f| f.path.strip_prefix(dir.path()).unwrap().to_string_lossy().into_owned())
                .collect();
            all.sort();
            all
        };
        assert_eq!(at(1), vec!["a.rs"]);
        assert_eq!(at(2), vec!["a.rs", "src/b.rs"]);
        assert_eq!(at(3), vec!["a.rs", "src/b.rs", "src/deep/c.rs"]);
    }

    #[test]
    fn the_virtual_file_systems_are_never_entered() {
        let walked = files(Path::new("/proc/self"), Some(1), &|_| true, &CancellationToken::new());
        assert!(walked.files.is_empty());
        let dev = files(Path::new("/"), Some(2), &|rel| rel.starts_with("dev"), &CancellationToken::new());
        assert!(dev.files.is_empty(), "{:?}", dev.files);
    }
}
