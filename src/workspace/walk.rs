//! The directory walk shared by `grep`, `glob`, `read` (globs) and `discover`: the ignore stack
//! (`ignore_rules`: version-control directories, `.tinycodeignore`, `.ignore`, `.gitignore` also outside a git
//! repository, `.git/info/exclude`, the global git excludes, the built-in defaults), and parallel visiting that
//! stops when the turn is cancelled or a deadline passes. Only regular files are visited (links are not
//! followed; FIFOs, sockets and devices are passed over), the virtual file systems (`/proc`, `/sys`, `/dev`)
//! are never entered, and secret files are left out (counted, never named): a search reaches one only when the
//! user approves it by name.
//!
//! Every thread of a walk takes the newest directory queued, lists it, checks and visits its files itself and
//! queues its subdirectories (newest first keeps the queue as small as a depth-first walk's, and no file is
//! handed between threads). A directory's ignore files are read only when its listing shows them. Nothing here opens a file but the ignore files, read safely.
//!
//! The API: [`Walker`] (`Walker::new(root, &stack)` with `max_depth`, `keep`, `cancel`, `deadline`, then
//! `files`, `visit` or `paths`). [`visit`] and [`files`] are the older entry points (the built-in defaults
//! anchored at the root, no global excludes).
//!
//! Owns which files a search may see. Must not read file contents.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use listing::{Entry, Kind, Listing};

use tokio_util::sync::CancellationToken;

use super::ignore_rules::{Level, Present, Stack};
use super::regular;
use super::secret_files::is_secret_path;

/// Most threads a walk uses.
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
        self.run(Visitor::Path(visit))
    }

    /// Call `visit` for every file that passes, with its size and modification time, on worker threads.
    pub fn visit(&self, visit: &(dyn Fn(Found) + Sync)) -> Summary {
        self.run(Visitor::Found(visit))
    }

    fn run(&self, visit: Visitor<'_>) -> Summary {
        if regular::is_virtual(self.root) {
            return Summary::default();
        }
        let run = Run {
            walker: self,
            secret: AtomicUsize::new(0),
            timed_out: AtomicBool::new(false),
            queue: Mutex::new(Queue {
                dirs: vec![Dir { path: self.root.to_path_buf(), depth: 0, rules: None }],
                busy: 0,
            }),
            wake: Condvar::new(),
        };
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(MAX_WORKERS);
        std::thread::scope(|scope| {
            for _ in 1..workers {
                scope.spawn(|| run.work(visit));
            }
            run.work(visit);
        });
        Summary { secret_files: run.secret.into_inner(), timed_out: run.timed_out.into_inner() }
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

/// What a walk calls for each file that passes.
#[derive(Clone, Copy)]
enum Visitor<'v> {
    /// The path alone, not inspected.
    Path(&'v (dyn Fn(PathBuf) + Sync)),
    /// The path with its size and modification time (read through the directory, not the whole path).
    Found(&'v (dyn Fn(Found) + Sync)),
}

impl Visitor<'_> {
    fn call(self, listing: &Listing, entry: &Entry, path: PathBuf) {
        match self {
            Visitor::Path(visit) => visit(path),
            Visitor::Found(visit) => {
                if let Some(stat) = listing.file(entry) {
                    visit(Found { path, modified: stat.modified, len: stat.len });
                }
            }
        }
    }
}

/// A directory waiting to be listed, with the rules of the directory above it (`None`: the root, whose rules
/// are the stack's level for it).
struct Dir {
    path: PathBuf,
    depth: usize,
    rules: Option<Level>,
}

/// The directories still to list, and how many threads are listing one (they may add more).
struct Queue {
    dirs: Vec<Dir>,
    busy: usize,
}

/// One walk in progress: every thread takes a directory, lists it, visits its files itself and queues its
/// subdirectories. Taking the newest directory first keeps the queue as small as a depth-first walk's.
struct Run<'w, 'a> {
    walker: &'w Walker<'a>,
    secret: AtomicUsize,
    timed_out: AtomicBool,
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// A directory being listed: when dropped (also if `visit` panics, so no thread waits forever) its
/// subdirectories join the queue and the lister is no longer busy.
struct Listed<'r, 'w, 'a> {
    run: &'r Run<'w, 'a>,
    subdirs: Vec<Dir>,
}

impl Drop for Listed<'_, '_, '_> {
    fn drop(&mut self) {
        let mut queue = self.run.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.busy -= 1;
        let more = !self.subdirs.is_empty();
        queue.dirs.append(&mut self.subdirs);
        if more || queue.busy == 0 {
            self.run.wake.notify_all();
        }
    }
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

    /// One thread's share: list directories until none is left and no other thread can add one.
    fn work(&self, visit: Visitor<'_>) {
        while let Some(dir) = self.next() {
            let mut listed = Listed { run: self, subdirs: Vec::new() };
            if !self.stopped() {
                listed.subdirs = self.list(dir, visit);
            }
        }
    }

    /// The next directory to list, or `None` when the walk is over.
    fn next(&self) -> Option<Dir> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(dir) = queue.dirs.pop() {
                queue.busy += 1;
                return Some(dir);
            }
            if queue.busy == 0 {
                return None;
            }
            queue = self.wake.wait(queue).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// List `dir`: visit the files that pass and return the subdirectories to walk. A file's path is made only
    /// once its name passes `keep` (tested on a buffer reused for the whole directory).
    fn list(&self, dir: Dir, visit: Visitor<'_>) -> Vec<Dir> {
        let Some(listing) = Listing::read(&dir.path) else { return Vec::new() };
        let mut present = Present::default();
        for entry in listing.entries() {
            present.note(listing.name(entry));
        }
        // The root's own files were read with the levels above it.
        let rules = match &dir.rules {
            Some(above) => above.enter(&dir.path, present),
            None => self.walker.stack.level(&dir.path),
        };
        let mut subdirs = Vec::new();
        let mut rel = RelativeName::new(relative(&dir.path, self.walker.root));
        for entry in listing.entries() {
            let name = listing.name(entry);
            match entry.kind {
                Kind::Dir => {
                    let deeper = self.walker.max_depth.is_none_or(|max| dir.depth + 1 < max);
                    let path = joined(&dir.path, name);
                    if deeper && !regular::is_virtual(&path) && !rules.ignores(&path, true) {
                        subdirs.push(Dir { path, depth: dir.depth + 1, rules: Some(rules.clone()) });
                    }
                }
                Kind::File if (self.walker.keep)(rel.with(name)) => {
                    let path = joined(&dir.path, name);
                    if !self.passes(&path, &rules) {
                        continue;
                    }
                    if self.stopped() {
                        break;
                    }
                    visit.call(&listing, entry, path);
                }
                _ => {}
            }
        }
        subdirs
    }

    /// Whether the file `path`, whose name was kept, is visited: not ignored, and not a secret (which is
    /// counted).
    fn passes(&self, path: &Path, rules: &Level) -> bool {
        if rules.ignores(path, false) {
            return false;
        }
        if is_secret_path(path) {
            self.secret.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }
}

/// `dir/name`, allocated once at its final size (`Path::join` copies, then grows).
fn joined(dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let mut path = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
    path.push(dir);
    path.push(name);
    path
}

/// A file's path relative to the walk's root, for `keep`: the directory's part, then each name in turn.
struct RelativeName {
    buffer: std::ffi::OsString,
    base: usize,
}

impl RelativeName {
    fn new(dir: &Path) -> Self {
        let mut buffer = dir.as_os_str().to_os_string();
        if !buffer.is_empty() {
            buffer.push(std::path::MAIN_SEPARATOR_STR);
        }
        let base = buffer.len();
        Self { buffer, base }
    }

    fn with(&mut self, name: &std::ffi::OsStr) -> &Path {
        truncate(&mut self.buffer, self.base);
        self.buffer.push(name);
        Path::new(&self.buffer)
    }
}

/// Cut `text` back to its first `len` bytes, a length it had before (so a boundary).
fn truncate(text: &mut std::ffi::OsString, len: usize) {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        if text.as_bytes().len() > len {
            let mut bytes = std::mem::take(text).into_vec();
            bytes.truncate(len);
            *text = std::ffi::OsString::from_vec(bytes);
        }
    }
    #[cfg(not(unix))]
    {
        let kept = text.as_encoded_bytes()[..len].to_vec();
        // SAFETY: `len` is a length `text` had after a whole push, so the bytes are a valid encoding.
        *text = unsafe { std::ffi::OsString::from_encoded_bytes_unchecked(kept) };
    }
}

/// `path` relative to `root`, which it was built from by joining names: the bytes after the root and one
/// separator (comparing components would cost more than the rest of a file's checks).
#[cfg(unix)]
fn relative<'p>(path: &'p Path, root: &Path) -> &'p Path {
    use std::os::unix::ffi::OsStrExt;
    let (bytes, head) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
    let rest = match bytes.strip_prefix(head) {
        Some([b'/', rest @ ..]) => rest,
        Some(rest) if head.ends_with(b"/") => rest,
        _ => return path.strip_prefix(root).unwrap_or(path),
    };
    Path::new(std::ffi::OsStr::from_bytes(rest))
}

#[cfg(not(unix))]
fn relative<'p>(path: &'p Path, root: &Path) -> &'p Path {
    path.strip_prefix(root).unwrap_or(path)
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

mod listing;

#[cfg(test)]
mod tests;
