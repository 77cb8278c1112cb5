//! The directory walk shared by `grep`, `glob`, `read` (globs) and `discover`: the ignore stack
//! (`ignore_rules`: version-control directories, `.tinycodeignore`, `.ignore`, `.gitignore` also outside a git
//! repository, `.git/info/exclude`, the global git excludes, the built-in defaults), and parallel visiting that
//! stops when the turn is cancelled or a deadline passes. Only regular files are visited (links are not
//! followed; FIFOs, sockets and devices are passed over), the virtual file systems (`/proc`, `/sys`, `/dev`)
//! are never entered, and secret files are left out (counted, never named): a search reaches one only when the
//! user approves it by name.
//!
//! One thread walks depth first (memory stays bounded by the directories still to visit) and hands paths to
//! worker threads through a bounded queue; the workers inspect and visit them. A directory's ignore files are
//! read only when its listing shows them. Nothing here opens a file but the ignore files, read safely.
//!
//! The API: [`Walker`] (`Walker::new(root, &stack)` with `max_depth`, `keep`, `cancel`, `deadline`, then
//! `files`, `visit` or `paths`). [`visit`] and [`files`] are the older entry points (the built-in defaults
//! anchored at the root, no global excludes).
//!
//! Owns which files a search may see. Must not read file contents.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Instant, SystemTime};

use tokio_util::sync::CancellationToken;

use super::ignore_rules::{Level, Present, Stack};
use super::regular;
use super::secret_files::is_secret_path;

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

/// How a walk ended, besides what it visited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Secret files that passed `keep` and were left out.
    pub secret_files: usize,
    /// The deadline passed before the walk finished: what was visited is partial.
    pub timed_out: bool,
}

/// A walk of one directory tree. Build it, then call [`Walker::files`], [`Walker::visit`] or
/// [`Walker::paths`].
pub struct Walker<'a> {
    root: &'a Path,
    stack: &'a Stack,
    max_depth: Option<usize>,
    keep: &'a (dyn Fn(&Path) -> bool + Sync),
    cancel: Option<&'a CancellationToken>,
    deadline: Option<Instant>,
}

impl<'a> Walker<'a> {
    /// A walk of `root` that leaves out what `stack` ignores.
    pub fn new(root: &'a Path, stack: &'a Stack) -> Self {
        Self { root, stack, max_depth: None, keep: &|_| true, cancel: None, deadline: None }
    }

    /// Visit files at most `depth` levels below the root (1: the root's own files).
    pub fn max_depth(mut self, depth: Option<usize>) -> Self {
        self.max_depth = depth;
        self
    }

    /// Visit only files whose path relative to the root passes `keep`.
    pub fn keep(mut self, keep: &'a (dyn Fn(&Path) -> bool + Sync)) -> Self {
        self.keep = keep;
        self
    }

    /// Stop early when `cancel` fires.
    pub fn cancel(mut self, cancel: &'a CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Stop when `deadline` passes; the summary then says the walk timed out.
    pub fn deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// Call `visit` with the path of every file that passes, on worker threads (several at once). The path
    /// was a regular file when listed; nothing was opened or inspected yet.
    pub fn paths(&self, visit: &(dyn Fn(PathBuf) + Sync)) -> Summary {
        if regular::is_virtual(self.root) {
            return Summary::default();
        }
        let run = Run { walker: self, secret: AtomicUsize::new(0), timed_out: AtomicBool::new(false) };
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(MAX_WORKERS);
        let (sender, receiver) = std::sync::mpsc::sync_channel::<PathBuf>(QUEUE);
        let receiver = Mutex::new(receiver);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let next = match receiver.lock() {
                            Ok(receiver) => receiver.recv(),
                            Err(_) => return,
                        };
                        let Ok(path) = next else { return };
                        if !run.stopped() {
                            visit(path);
                        }
                    }
                });
            }
            run.walk(&|path| {
                let _ = sender.send(path);
            });
            drop(sender);
        });
        Summary { secret_files: run.secret.into_inner(), timed_out: run.timed_out.into_inner() }
    }

    /// Call `visit` for every file that passes, with its size and modification time, on worker threads.
    pub fn visit(&self, visit: &(dyn Fn(Found) + Sync)) -> Summary {
        self.paths(&|path| {
            let Ok(meta) = std::fs::symlink_metadata(&path) else { return };
            if meta.is_file() {
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                visit(Found { path, modified, len: meta.len() });
            }
        })
    }

    /// Every file that passes.
    pub fn files(&self) -> Walked {
        let found = Mutex::new(Vec::new());
        let summary = self.visit(&|hit| {
            if let Ok(mut all) = found.lock() {
                all.push(hit);
            }
        });
        Walked {
            files: found.into_inner().unwrap_or_default(),
            secret_files: summary.secret_files,
            timed_out: summary.timed_out,
        }
    }
}

/// One walk in progress.
struct Run<'w, 'a> {
    walker: &'w Walker<'a>,
    secret: AtomicUsize,
    timed_out: AtomicBool,
}

impl Run<'_, '_> {
    /// Cancelled, or past the deadline (which is then recorded).
    fn stopped(&self) -> bool {
        if self.walker.cancel.is_some_and(CancellationToken::is_cancelled) {
            return true;
        }
        if self.timed_out.load(Ordering::Relaxed) {
            return true;
        }
        if self.walker.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Walk depth first from the root, sending every file that passes to `send`.
    fn walk(&self, send: &dyn Fn(PathBuf)) {
        let root = self.walker.root;
        let mut pending: Vec<(PathBuf, usize, Level)> =
            vec![(root.to_path_buf(), 0, self.walker.stack.level(root))];
        let mut first = true;
        while let Some((dir, depth, above)) = pending.pop() {
            if self.stopped() {
                return;
            }
            let Ok(listing) = std::fs::read_dir(&dir) else { continue };
            let mut entries = Vec::new();
            let mut present = Present::default();
            for entry in listing.flatten() {
                present.note(&entry.file_name());
                entries.push(entry);
            }
            // The root's own files were read with the levels above it.
            let rules = if first { above } else { above.enter(&dir, present) };
            first = false;
            for entry in entries {
                let Ok(kind) = entry.file_type() else { continue };
                let path = entry.path();
                if kind.is_dir() {
                    let deeper = self.walker.max_depth.is_none_or(|max| depth + 1 < max);
                    if deeper && !regular::is_virtual(&path) && !rules.ignores(&path, true) {
                        pending.push((path, depth + 1, rules.clone()));
                    }
                } else if kind.is_file() && !rules.ignores(&path, false) {
                    self.file(path, send);
                }
            }
        }
    }

    fn file(&self, path: PathBuf, send: &dyn Fn(PathBuf)) {
        let rel = path.strip_prefix(self.walker.root).unwrap_or(&path);
        if !(self.walker.keep)(rel) {
            return;
        }
        if is_secret_path(&path) {
            self.secret.fetch_add(1, Ordering::Relaxed);
            return;
        }
        send(path);
    }
}

/// Call `visit` for every regular file under `root` (to `max_depth` levels) whose path relative to `root` passes
/// `keep`, with the built-in defaults anchored at `root` and no global excludes. `visit` runs on worker
/// threads, several at once; the walk stops early when `cancel` fires. Returns how many secret files that
/// passed `keep` were left out. A root inside a virtual file system yields nothing.
pub fn visit(
    root: &Path,
    max_depth: Option<usize>,
    keep: &(dyn Fn(&Path) -> bool + Sync),
    cancel: &CancellationToken,
    visit: &(dyn Fn(Found) + Sync),
) -> usize {
    let stack = Stack::plain(root);
    Walker::new(root, &stack).max_depth(max_depth).keep(keep).cancel(cancel).visit(visit).secret_files
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walked {
    pub files: Vec<Found>,
    /// Secret files left out.
    pub secret_files: usize,
    /// The deadline passed: the list is partial.
    pub timed_out: bool,
}

/// Every regular file under `root` whose relative path passes `keep` (the rules of [`visit`]), collected by the
/// walking thread itself: handing each file to workers that only store it would cost more than it saves.
pub fn files(
    root: &Path,
    max_depth: Option<usize>,
    keep: &(dyn Fn(&Path) -> bool + Sync),
    cancel: &CancellationToken,
) -> Walked {
    let stack = Stack::plain(root);
    Walker::new(root, &stack).max_depth(max_depth).keep(keep).cancel(cancel).files()
}

#[cfg(test)]
mod tests;
