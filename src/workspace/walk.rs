//! The directory walk shared by `grep` and `glob`: skip dirs of seed 000 §8.5, `.gitignore` (also outside a git
//! repository), `.ignore`, and a parallel walk that stops when the turn is cancelled. Only regular files are
//! visited (links are not followed; FIFOs, sockets and devices are passed over), the virtual file systems
//! (`/proc`, `/sys`, `/dev`) are never entered, and secret files are left out (counted, never named): a search
//! reaches one only when the user approves it by name.
//!
//! Owns which files a search may see. Must not read file contents.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use ignore::{WalkBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use super::regular;
use super::secret_files::is_secret_path;

/// Directories never searched (seed 000 §8.5), matched against a whole path component.
pub const SKIP_DIRS: [&str; 4] = [".git", "node_modules", "vendor", ".tinycode"];

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

fn builder(root: &Path, max_depth: Option<usize>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let skipped =
                SKIP_DIRS.iter().any(|d| entry.file_name() == *d) || regular::is_virtual(entry.path());
            !(is_dir && entry.depth() > 0 && skipped)
        });
    builder
}

/// Call `visit` for every regular file under `root` (to `max_depth` levels) whose path relative to `root` passes
/// `keep`. Walks in parallel, so `visit` runs on several threads; stops early when `cancel` fires. Returns how
/// many secret files that passed `keep` were left out. A root inside a virtual file system yields nothing.
pub fn visit(
    root: &Path,
    max_depth: Option<usize>,
    keep: &(dyn Fn(&Path) -> bool + Sync),
    cancel: &CancellationToken,
    visit: &(dyn Fn(Found) + Sync),
) -> usize {
    let secret = AtomicUsize::new(0);
    if regular::is_virtual(root) {
        return 0;
    }
    builder(root, max_depth).build_parallel().run(|| {
        Box::new(|entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
            if !keep(rel) {
                return WalkState::Continue;
            }
            if is_secret_path(entry.path()) {
                secret.fetch_add(1, Ordering::Relaxed);
                return WalkState::Continue;
            }
            let Ok(meta) = entry.metadata() else { return WalkState::Continue };
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            visit(Found { path: entry.path().to_path_buf(), modified, len: meta.len() });
            WalkState::Continue
        })
    });
    secret.into_inner()
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
    fn the_virtual_file_systems_are_never_entered() {
        let walked = files(Path::new("/proc/self"), Some(1), &|_| true, &CancellationToken::new());
        assert!(walked.files.is_empty());
        let dev = files(Path::new("/"), Some(2), &|rel| rel.starts_with("dev"), &CancellationToken::new());
        assert!(dev.files.is_empty(), "{:?}", dev.files);
    }
}
