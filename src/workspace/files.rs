//! File access for one session: reads through the editor (`fs/read_text_file`, unsaved buffers) when it offers
//! that and from disk otherwise; writes through the editor (`fs/write_text_file`, so its review, buffers and
//! format-on-save see them) or atomically to disk. It keeps the read ledger behind read-before-overwrite and
//! stale-write detection, the workspace boundary (`boundary`), and the per-file locks that serialise edits.
//!
//! Every read first asks the disk what the path is: a missing file is `None` without asking the editor, and
//! anything but a regular file is refused before anyone opens it. Disk reads stop at [`MAX_TEXT_BYTES`]. An
//! editor that refuses a read is believed: only "method not found" falls back to the disk.
//!
//! Owns every byte the tools read or write. Must not decide what to write.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;

use super::boundary::{Located, Roots};
use super::changes::Recorder;
use super::ignore_rules::Stack;
use super::{atomic, encoding, format, regular};

mod change_set;
use crate::shell::environment::Environment;
use crate::shell::launch::Launcher;
use crate::tool::error::ToolError;
pub use change_set::{Change, SetError, SetFailure};

/// Text files larger than this are refused by reads and edits (a read never holds more in memory).
pub const MAX_TEXT_BYTES: u64 = 16 * 1024 * 1024;
/// Changes to files larger than this (old plus new text, in bytes) are shown as their changed region only,
/// unless the config's `max_diff_bytes` says otherwise.
pub const DEFAULT_DIFF_LIMIT: usize = 2 * 1024 * 1024;

/// Why the editor did not serve an `fs/*` request. Handled by [`Files`]: only `Unsupported` may fall back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorError {
    /// The editor does not implement the method (JSON-RPC "method not found"): use the disk instead.
    Unsupported,
    /// The editor answered with an error: reported, never bypassed.
    Failed(String),
}

/// The editor's file system, as the core sees it. Implemented by the `acp` layer.
pub trait ClientFs: Send + Sync {
    fn can_read(&self) -> bool;
    fn can_write(&self) -> bool;
    /// The editor's current text of `path` (including unsaved changes).
    fn read(&self, path: &Path) -> BoxFuture<'_, Result<String, EditorError>>;
    /// Replace `path` in the editor (which saves it and shows the change for review).
    fn write<'a>(&'a self, path: &'a Path, content: &'a str) -> BoxFuture<'a, Result<(), EditorError>>;
}

/// Per-path locks shared by every session of the process, so two edits of one file never interleave.
#[derive(Default)]
pub struct FileLocks {
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

/// Unused locks are dropped once the map holds this many entries.
pub const FILE_LOCK_CLEANUP_THRESHOLD: usize = 1_000;

impl FileLocks {
    pub async fn lock(&self, path: &Path) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = match self.locks.lock() {
                Ok(locks) => locks,
                Err(poisoned) => poisoned.into_inner(),
            };
            if locks.len() >= FILE_LOCK_CLEANUP_THRESHOLD {
                locks.retain(|_, lock| Arc::strong_count(lock) > 1);
            }
            locks.entry(path.to_path_buf()).or_default().clone()
        };
        lock.lock_owned().await
    }

    pub fn len(&self) -> usize {
        self.locks.lock().map(|l| l.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ReadRecord {
    hash: u64,
    full: bool,
}

fn hash(text: &str) -> u64 {
    let mut hasher = TextHash::default();
    hasher.write(text);
    hasher.finish()
}

/// The read ledger's hash of a text given in pieces (a streamed read): the same as of the whole text.
/// XXH3 streams: the pieces' boundaries do not change the value, and the length is part of it.
#[derive(Default)]
pub struct TextHash(xxhash_rust::xxh3::Xxh3Default);

impl TextHash {
    pub fn write(&mut self, piece: &str) {
        self.0.update(piece.as_bytes());
    }

    pub fn finish(self) -> u64 {
        self.0.digest()
    }
}

/// A file's identity, size and times as a read left them. A stamp taken after reading a file whose last change
/// (its ctime) came strictly before the read began vouches for the text read: any later write sets the ctime to
/// the kernel's clock at that moment, which is at or past the read's start, so an unchanged stamp means
/// unchanged bytes. The ctime cannot be set by `touch` or `utimes`. A file system with whole-second times
/// (a zero nanosecond part) gives no stamp: two writes within a second would look alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The stamp of the file at `path` now (symlinks followed, as reads follow them); `None` if it cannot be
    /// taken or is not a regular file.
    async fn now(path: &Path) -> Option<Stamp> {
        let owned = path.to_path_buf();
        let meta = tokio::task::spawn_blocking(move || std::fs::metadata(owned)).await.ok()?.ok()?;
        meta.is_file().then(|| Stamp::of(&meta))
    }

    /// The clock the kernel stamps file changes with (the coarse real-time clock, which the fine-grained
    /// stamps some file systems use never fall behind), as (seconds, nanoseconds).
    fn clock() -> (i64, i64) {
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `now` is a valid, writable timespec; the call only writes it.
        let status = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut now) };
        if status != 0 {
            return (i64::MIN, 0);
        }
        (now.tv_sec, now.tv_nsec)
    }

    /// Whether the file's last change came strictly before `clock` on a file system with sub-second times.
    fn settled_before(&self, clock: (i64, i64)) -> bool {
        self.ctime.1 != 0 && self.ctime < clock
    }
}

/// How a write reached the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Editor,
    Disk,
}

/// The outcome of [`Files::write`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written<'a> {
    pub via: Via,
    /// The text now in the file: the text given (not copied), or what the formatter made of it.
    pub content: Cow<'a, str>,
    /// A formatter failure, reported to the model; the write stands.
    pub formatter_error: Option<String>,
}

/// A session's file access.
pub struct Files {
    roots: RwLock<Roots>,
    client: RwLock<Option<Arc<dyn ClientFs>>>,
    locks: Arc<FileLocks>,
    /// Replaced when the user trusts the project that configures them.
    formatters: Mutex<BTreeMap<String, Vec<String>>>,
    /// What starts formatters (the session's: it knows the project's roots and trust).
    launcher: Arc<Launcher>,
    ledger: Mutex<HashMap<PathBuf, ReadRecord>>,
    /// Told about every write and deletion first (the turn's checkpoint).
    changes: Option<Arc<Recorder>>,
    /// Changes to larger files are shown as their changed region (config `max_diff_bytes`).
    diff_limit: std::sync::atomic::AtomicUsize,
    /// What searches and listings leave out.
    ignores: RwLock<Arc<Stack>>,
}

fn read_lock<T: Clone>(lock: &RwLock<T>) -> T {
    match lock.read() {
        Ok(value) => value.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

fn write_lock<T>(lock: &RwLock<T>, value: T) {
    match lock.write() {
        Ok(mut guard) => *guard = value,
        Err(poisoned) => *poisoned.into_inner() = value,
    }
}

/// The model-facing error for a path that is not a regular file (or cannot be inspected).
pub fn open_error(path: &Path, error: regular::OpenError) -> ToolError {
    match error {
        regular::OpenError::NotRegular(kind) => ToolError::retry(format!(
            "{} is {kind}, not a regular file. Only regular files can be read or changed.",
            path.display()
        )),
        other => ToolError::execution(format!("cannot read {}: {other}", path.display())),
    }
}

fn too_large(path: &Path) -> ToolError {
    ToolError::retry(format!(
        "{} is larger than {} MB, too large to read whole. Use grep to find the lines you need.",
        path.display(),
        MAX_TEXT_BYTES / (1024 * 1024)
    ))
}

/// Read the regular file `path` from disk, whole or not at all. `None` when it does not exist.
async fn read_disk(path: &Path) -> Result<Option<String>, ToolError> {
    let owned = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || regular::read(&owned, MAX_TEXT_BYTES))
        .await
        .map_err(|e| ToolError::execution(e.to_string()))?;
    match read {
        Ok(capped) if capped.complete => Ok(Some(encoding::decode_owned(capped.bytes).0)),
        Ok(_) => Err(too_large(path)),
        Err(regular::OpenError::NotFound) => Ok(None),
        Err(e) => Err(open_error(path, e)),
    }
}

/// Write `content` to `path` on disk, atomically, in the encoding the file has (UTF-16 stays UTF-16; a new file is
/// UTF-8). UTF-8 text is written from the caller's string where the runtime allows blocking in place (the
/// multi-threaded runtime the binary runs), so a 10 MB edit is not copied once more to be written, and flushed to
/// the disk on a blocking thread after the call returns (see [`atomic`]).
async fn write_disk(path: &Path, content: &str) -> std::io::Result<()> {
    let target = path.to_path_buf();
    let stored = tokio::task::spawn_blocking(move || {
        regular::read(&target, 4).map(|head| encoding::Encoding::detect(&head.bytes)).unwrap_or_default()
    })
    .await
    .map_err(std::io::Error::other)?;
    if stored == encoding::Encoding::Utf8 && multi_threaded() {
        let (_, unflushed) = tokio::task::block_in_place(|| atomic::replace(path, content.as_bytes()))?;
        // The file is in place: the tool answers while the disk catches up.
        tokio::task::spawn_blocking(move || unflushed.flush());
        return Ok(());
    }
    let (target, bytes) = (path.to_path_buf(), encoding::encode(content, stored));
    tokio::task::spawn_blocking(move || atomic::write(&target, &bytes))
        .await
        .map_err(std::io::Error::other)?
        .map(|_| ())
}

/// Whether the regular file `path` holds exactly the bytes `expected`, read in chunks on one blocking thread
/// (a 10 MB file in 1 MiB reads, not one hop to the blocking pool per read). False on any doubt.
/// Equal bytes are valid UTF-8 without a UTF-16 mark (`expected` is a `str`), so they decode to `expected`.
async fn same_bytes(path: &Path, expected: &[u8]) -> bool {
    if multi_threaded() {
        return tokio::task::block_in_place(|| file_holds(path, expected));
    }
    let (owned, expected) = (path.to_path_buf(), expected.to_vec());
    tokio::task::spawn_blocking(move || file_holds(&owned, &expected)).await.unwrap_or(false)
}

/// Whether the runtime lets a task block in place (the binary's multi-threaded runtime; not a test's).
fn multi_threaded() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Whether reading the regular file `path` to its end gives exactly `expected`.
fn file_holds(path: &Path, expected: &[u8]) -> bool {
    use std::io::Read;
    let Ok((mut file, meta)) = regular::open(path) else { return false };
    if meta.len() != expected.len() as u64 {
        return false;
    }
    let mut buf = vec![0u8; (1 << 20).min(expected.len() + 1)];
    let mut at = 0;
    loop {
        let n = match file.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        };
        if n == 0 {
            return at == expected.len();
        }
        if expected.get(at..at + n) != Some(&buf[..n]) {
            return false;
        }
        at += n;
    }
}

impl Files {
    /// `roots` are absolute: the session's directory first, then the editor's additional directories.
    pub fn new(
        roots: Vec<PathBuf>,
        client: Option<Arc<dyn ClientFs>>,
        locks: Arc<FileLocks>,
        formatters: BTreeMap<String, Vec<String>>,
    ) -> Self {
        let launcher = Arc::new(Launcher::new(&roots, Arc::new(Environment::default())));
        let anchor = roots.first().cloned().unwrap_or_else(|| PathBuf::from("/"));
        Self {
            ignores: RwLock::new(Arc::new(Stack::plain(&anchor))),
            roots: RwLock::new(Roots::new(&roots)),
            client: RwLock::new(client),
            locks,
            formatters: Mutex::new(formatters),
            launcher,
            ledger: Mutex::new(HashMap::new()),
            changes: None,
            diff_limit: std::sync::atomic::AtomicUsize::new(DEFAULT_DIFF_LIMIT),
        }
    }

    /// Show changes to files larger than `bytes` (old plus new text) as their changed region.
    pub fn with_diff_limit(self, bytes: usize) -> Self {
        self.diff_limit.store(bytes, std::sync::atomic::Ordering::Relaxed);
        self
    }

    /// The size above which a change is shown as its changed region.
    pub fn diff_limit(&self) -> usize {
        self.diff_limit.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Tell `recorder` about every write and deletion before it happens.
    pub fn with_changes(mut self, recorder: Arc<Recorder>) -> Self {
        self.changes = Some(recorder);
        self
    }

    /// Bound the tools by `roots` from now on (the session moved into or out of a worktree); the editor
    /// connection stays.
    pub fn set_roots(&self, roots: Vec<PathBuf>) {
        self.launcher.add_roots(&roots);
        write_lock(&self.roots, Roots::new(&roots));
    }

    /// Use these formatters from the next write on.
    pub fn set_formatters(&self, formatters: BTreeMap<String, Vec<String>>) {
        *match self.formatters.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        } = formatters;
    }

    fn formatter_for(&self, path: &Path) -> Option<Vec<String>> {
        match self.formatters.lock() {
            Ok(formatters) => format::command_for(&formatters, path),
            Err(poisoned) => format::command_for(&poisoned.into_inner(), path),
        }
    }

    /// The ignore stack searches, listings and suggestions use.
    pub fn ignores(&self) -> Arc<Stack> {
        read_lock(&self.ignores)
    }

    /// Use `stack` from the next search on (the session's directory and the user's global excludes).
    pub fn set_ignores(&self, stack: Stack) {
        write_lock(&self.ignores, Arc::new(stack));
    }

    /// Whether the model has read `path` in this session (any part of it).
    pub fn was_read(&self, path: &Path) -> bool {
        self.ledger().contains_key(path)
    }

    /// Start formatters through `launcher` (the session's).
    pub fn with_launcher(mut self, launcher: Arc<Launcher>) -> Self {
        self.launcher = launcher;
        self
    }

    /// File access for a subagent of this session: the same roots, editor, locks, formatters and environment,
    /// with a read ledger of its own (it must read a file before changing it, whatever its parent read).
    pub fn for_child(&self) -> Files {
        Files {
            roots: RwLock::new(Roots::new(&self.roots())),
            client: RwLock::new(read_lock(&self.client)),
            locks: self.locks.clone(),
            formatters: Mutex::new(match self.formatters.lock() {
                Ok(f) => f.clone(),
                Err(poisoned) => poisoned.into_inner().clone(),
            }),
            launcher: self.launcher.clone(),
            ledger: Mutex::new(HashMap::new()),
            diff_limit: std::sync::atomic::AtomicUsize::new(self.diff_limit()),
            ignores: RwLock::new(self.ignores()),
            changes: self.changes.clone(),
        }
    }

    /// A new editor connection took the session over: its file system and its roots apply from now on.
    pub fn rebind(&self, roots: Vec<PathBuf>, client: Option<Arc<dyn ClientFs>>) {
        self.launcher.add_roots(&roots);
        write_lock(&self.roots, Roots::new(&roots));
        write_lock(&self.client, client);
    }

    /// The session's roots: its directory, then the additional directories.
    pub fn roots(&self) -> Vec<PathBuf> {
        read_lock(&self.roots).dirs()
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, ReadRecord>> {
        match self.ledger.lock() {
            Ok(ledger) => ledger,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn editor_reads(&self) -> Option<Arc<dyn ClientFs>> {
        read_lock(&self.client).filter(|c| c.can_read())
    }

    fn editor_writes(&self) -> Option<Arc<dyn ClientFs>> {
        read_lock(&self.client).filter(|c| c.can_write())
    }

    /// Where the absolute `path` really leads (every symlink resolved, also through a missing tail) and
    /// whether that is inside the session's roots.
    pub fn locate(&self, path: &Path) -> Result<Located, ToolError> {
        read_lock(&self.roots)
            .locate(path)
            .map_err(|e| ToolError::retry(format!("cannot resolve {}: {e}", path.display())))
    }

    /// The path a change to `path` must be made at: resolved, and inside the session's roots. Paths outside
    /// (by `..`, an absolute path, or a symlink, dangling or not) are refused with the resolved path named.
    pub fn check_boundary(&self, path: &Path) -> Result<PathBuf, ToolError> {
        let located = self.locate(path)?;
        if located.inside {
            return Ok(located.path);
        }
        let roots: Vec<String> = self.roots().iter().map(|r| r.display().to_string()).collect();
        let via = if located.path == path {
            String::new()
        } else {
            format!(" ({} leads there through a symbolic link)", path.display())
        };
        Err(ToolError::retry(format!(
            "Refusing to change {}{via}: it is outside the workspace ({}). Only files inside the session's directories can be changed.",
            located.path.display(),
            roots.join(", ")
        )))
    }

    /// The current text of `path`: the editor's buffer when available, else the disk. `None` when missing.
    /// Anything but a regular file is refused without being opened.
    pub async fn read_text(&self, path: &Path) -> Result<Option<String>, ToolError> {
        let owned = path.to_path_buf();
        let meta = tokio::task::spawn_blocking(move || regular::check(&owned))
            .await
            .map_err(|e| ToolError::execution(e.to_string()))?;
        match meta {
            Err(regular::OpenError::NotFound) => return Ok(None),
            Err(e) => return Err(open_error(path, e)),
            Ok(meta) if meta.len() > MAX_TEXT_BYTES => return Err(too_large(path)),
            Ok(_) => {}
        }
        if let Some(client) = self.editor_reads() {
            match client.read(path).await {
                Ok(text) => return Ok(Some(text)),
                Err(EditorError::Unsupported) => {}
                Err(EditorError::Failed(message)) => {
                    return Err(ToolError::execution(format!(
                        "the editor could not read {}: {message}",
                        path.display()
                    )));
                }
            }
        }
        read_disk(path).await
    }

    /// [`Files::read_text`], with the file's [`Stamp`] when the text came from the disk and the stamp can vouch
    /// for it later.
    pub async fn read_text_stamped(&self, path: &Path) -> Result<(Option<String>, Option<Stamp>), ToolError> {
        if self.editor_reads().is_some() {
            return Ok((self.read_text(path).await?, None));
        }
        let before = Stamp::clock();
        let text = self.read_text(path).await?;
        if text.is_none() {
            return Ok((None, None));
        }
        let stamp = Stamp::now(path).await.filter(|stamp| stamp.settled_before(before));
        Ok((text, stamp))
    }

    /// [`Files::holds`] for a text read with [`Files::read_text_stamped`]: a file whose stamp is unchanged is
    /// not read again (a 10 MB file took 8–12 ms to read and compare).
    pub async fn holds_stamped(
        &self,
        path: &Path,
        seen: Option<&str>,
        stamp: Option<Stamp>,
    ) -> Result<bool, ToolError> {
        if let (None, Some(stamp)) = (self.editor_reads(), stamp)
            && Stamp::now(path).await == Some(stamp)
        {
            return Ok(true);
        }
        self.holds(path, seen).await
    }

    /// Whether `path` still holds `seen` (`None`: missing), as [`Files::read_text`] would tell. A UTF-8 file on
    /// disk is compared chunk by chunk without being held; anything else (the editor's buffer, UTF-16, bytes
    /// that are not UTF-8) is read whole and compared.
    pub async fn holds(&self, path: &Path, seen: Option<&str>) -> Result<bool, ToolError> {
        if let (None, Some(text)) = (self.editor_reads(), seen)
            && same_bytes(path, text.as_bytes()).await
        {
            return Ok(true);
        }
        Ok(self.read_text(path).await?.as_deref() == seen)
    }

    /// Remember that the model saw `content` of `path` (`full`: all of it).
    pub fn record_read(&self, path: &Path, content: &str, full: bool) {
        self.record_read_hash(path, hash(content), full);
    }

    /// [`Files::record_read`] for a text hashed in pieces ([`TextHash`]) and not held.
    pub fn record_read_hash(&self, path: &Path, hash: u64, full: bool) {
        let mut ledger = self.ledger();
        let full = full || ledger.get(path).is_some_and(|r| r.full && r.hash == hash);
        ledger.insert(path.to_path_buf(), ReadRecord { hash, full });
    }

    /// Whether reads go through the editor (its buffers) rather than the disk.
    pub fn reads_through_editor(&self) -> bool {
        self.editor_reads().is_some()
    }

    /// Check that the model has read `path` (fully, if `need_full`) and that `current` is still what it read.
    pub fn check_fresh(&self, path: &Path, current: &str, need_full: bool) -> Result<(), ToolError> {
        let record = self.ledger().get(path).copied();
        match record {
            None => Err(ToolError::retry(format!(
                "You must read {} before changing it. Use the read tool first.",
                path.display()
            ))),
            Some(r) if r.hash != hash(current) => Err(ToolError::retry(format!(
                "{} has changed since you last read it (on disk or in the editor). Read it again before changing it.",
                path.display()
            ))),
            Some(r) if need_full && !r.full => Err(ToolError::retry(format!(
                "You have only read part of {}. Read the whole file before overwriting it.",
                path.display()
            ))),
            Some(_) => Ok(()),
        }
    }

    pub async fn lock(&self, path: &Path) -> tokio::sync::OwnedMutexGuard<()> {
        self.locks.lock(path).await
    }

    /// Write `content` to `path` (already checked by [`Files::check_boundary`]): through the editor when it
    /// can, else atomically to disk. Then run the formatter, and record the result as read so the model can
    /// keep editing.
    pub async fn write<'a>(
        &self,
        path: &Path,
        content: &'a str,
        cwd: &Path,
    ) -> Result<Written<'a>, ToolError> {
        // The tools check before they ask; checking again here keeps any writer from reaching outside.
        let checked = self.check_boundary(path)?;
        if checked != path {
            return Err(ToolError::retry(format!(
                "{} now leads to {} through a symbolic link. Read it again and redo the change.",
                path.display(),
                checked.display()
            )));
        }
        if let Some(changes) = &self.changes {
            changes.before_write(path).await;
        }
        let editor = match self.editor_writes() {
            Some(client) => client.write(path, content).await,
            None => Err(EditorError::Unsupported),
        };
        let via = match editor {
            Ok(()) => Via::Editor,
            Err(EditorError::Failed(e)) => {
                return Err(ToolError::execution(format!(
                    "the editor could not write {}: {e}",
                    path.display()
                )));
            }
            Err(EditorError::Unsupported) => {
                write_disk(path, content)
                    .await
                    .map_err(|e| ToolError::execution(format!("cannot write {}: {e}", path.display())))?;
                Via::Disk
            }
        };
        Ok(self
            .settle(path, Written { via, content: Cow::Borrowed(content), formatter_error: None }, cwd)
            .await)
    }

    /// After a write: run the formatter, and record the result as read so the model can keep editing.
    async fn settle<'a>(&self, path: &Path, mut written: Written<'a>, cwd: &Path) -> Written<'a> {
        if let Some(command) = self.formatter_for(path) {
            match format::run(&command, cwd, &self.launcher).await {
                Err(e) => written.formatter_error = Some(e),
                Ok(()) => self.adopt_formatted(path, &mut written).await,
            }
        }
        self.record_read(path, &written.content, true);
        written
    }

    /// After a formatter rewrote the file on disk, make the editor's buffer match it.
    async fn adopt_formatted(&self, path: &Path, written: &mut Written<'_>) {
        let Ok(Some(formatted)) = read_disk(path).await else { return };
        if formatted == written.content {
            return;
        }
        if written.via == Via::Editor
            && let Some(client) = self.editor_writes()
            && let Err(e) = client.write(path, &formatted).await
        {
            let message = match e {
                EditorError::Unsupported => "the editor does not take writes".to_string(),
                EditorError::Failed(message) => message,
            };
            written.formatter_error = Some(format!("the editor did not take the formatted text: {message}"));
            return;
        }
        written.content = Cow::Owned(formatted);
    }

    /// Delete `path` from disk (the editor protocol has no delete).
    pub async fn delete(&self, path: &Path) -> Result<(), ToolError> {
        self.check_boundary(path)?;
        if let Some(changes) = &self.changes {
            changes.before_write(path).await;
        }
        tokio::fs::remove_file(path)
            .await
            .map_err(|e| ToolError::execution(format!("cannot delete {}: {e}", path.display())))?;
        self.ledger().remove(path);
        Ok(())
    }

    /// Put `content` back into `path` exactly (an undo): through the editor when it can write and the content is
    /// text, so the editor shows the change for review; else atomically on disk. The directory must lie inside
    /// the session's roots; a symlink found at `path` is removed first, never written through (it may have been
    /// planted to point elsewhere since). No formatter runs, and the model must read the file again before
    /// changing it.
    pub async fn restore(&self, path: &Path, content: &[u8]) -> Result<Via, String> {
        self.restore_at(path, content, false).await
    }

    /// [`Files::restore`] at `path` outside the session's roots, which the user allowed after being shown it
    /// (resolved: the caller passes the real path).
    pub async fn restore_outside(&self, path: &Path, content: &[u8]) -> Result<Via, String> {
        self.restore_at(path, content, true).await
    }

    async fn restore_at(&self, path: &Path, content: &[u8], allowed_outside: bool) -> Result<Via, String> {
        let parent = path.parent().ok_or_else(|| format!("{} names no file", path.display()))?;
        if !allowed_outside {
            self.check_boundary(parent).map_err(|e| e.to_string())?;
        }
        self.ledger().remove(path);
        let link = tokio::fs::symlink_metadata(path).await.is_ok_and(|m| m.file_type().is_symlink());
        if link {
            tokio::fs::remove_file(path).await.map_err(|e| format!("cannot replace the symlink: {e}"))?;
        }
        if let (Some(client), Ok(text), false) = (self.editor_writes(), std::str::from_utf8(content), link) {
            match client.write(path, text).await {
                Ok(()) => return Ok(Via::Editor),
                Err(EditorError::Failed(e)) => return Err(format!("the editor could not write it: {e}")),
                Err(EditorError::Unsupported) => {}
            }
        }
        let (target, bytes) = (path.to_path_buf(), content.to_vec());
        tokio::task::spawn_blocking(move || atomic::write(&target, &bytes))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        Ok(Via::Disk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(root: &Path) -> Files {
        Files::new(vec![root.to_path_buf()], None, Arc::new(FileLocks::default()), BTreeMap::new())
    }

    #[test]
    fn paths_outside_the_root_are_refused_including_dot_dot_and_symlink_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("escape")).unwrap();
        let f = files(&root);
        assert_eq!(f.check_boundary(&root.join("src/new/a.rs")).unwrap(), root.join("src/new/a.rs"));
        assert!(f.check_boundary(&root.join("src/../../outside.txt")).is_err());
        assert!(f.check_boundary(&root.join("escape/outside.txt")).is_err());
        assert!(f.check_boundary(Path::new("/etc/passwd")).is_err());
    }

    /// An editor whose every `fs/*` request fails with `error`.
    struct Refusing(EditorError);

    impl ClientFs for Refusing {
        fn can_read(&self) -> bool {
            true
        }
        fn can_write(&self) -> bool {
            true
        }
        fn read(&self, _: &Path) -> BoxFuture<'_, Result<String, EditorError>> {
            Box::pin(async move { Err(self.0.clone()) })
        }
        fn write<'a>(&'a self, _: &'a Path, _: &'a str) -> BoxFuture<'a, Result<(), EditorError>> {
            Box::pin(async move { Err(self.0.clone()) })
        }
    }

    fn with_editor(root: &Path, error: EditorError) -> Files {
        let client: Arc<dyn ClientFs> = Arc::new(Refusing(error));
        Files::new(vec![root.to_path_buf()], Some(client), Arc::new(FileLocks::default()), BTreeMap::new())
    }

    #[tokio::test]
    async fn an_editor_error_is_reported_and_only_method_not_found_falls_back_to_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "disk").unwrap();
        let refused = with_editor(dir.path(), EditorError::Failed("denied".into()));
        assert_eq!(
            refused.read_text(&path).await.unwrap_err(),
            ToolError::execution(format!("the editor could not read {}: denied", path.display()))
        );
        assert_eq!(
            refused.write(&path, "new", dir.path()).await.unwrap_err(),
            ToolError::execution(format!("the editor could not write {}: denied", path.display()))
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "disk",
            "a refused write is not done behind its back"
        );
        let unsupported = with_editor(dir.path(), EditorError::Unsupported);
        assert_eq!(unsupported.read_text(&path).await.unwrap(), Some("disk".to_string()));
        assert_eq!(unsupported.write(&path, "new", dir.path()).await.unwrap().via, Via::Disk);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(
            refused.read_text(&dir.path().join("missing")).await.unwrap(),
            None,
            "a missing file asks nobody"
        );
    }

    #[tokio::test]
    async fn special_and_oversized_files_are_refused_without_being_read() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("pipe");
        let name = std::ffi::CString::new(pipe.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let f = files(dir.path());
        assert_eq!(
            f.read_text(&pipe).await.unwrap_err(),
            ToolError::retry(format!(
                "{} is a FIFO (named pipe), not a regular file. Only regular files can be read or changed.",
                pipe.display()
            ))
        );
        let big = dir.path().join("big.log");
        std::fs::File::create(&big).unwrap().set_len(MAX_TEXT_BYTES + 1).unwrap();
        assert_eq!(
            f.read_text(&big).await.unwrap_err(),
            ToolError::retry(format!(
                "{} is larger than 16 MB, too large to read whole. Use grep to find the lines you need.",
                big.display()
            ))
        );
    }

    #[tokio::test]
    async fn a_write_to_a_path_that_is_not_resolved_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink("real.txt", root.join("link.txt")).unwrap();
        let f = files(&root);
        let err = f.write(&root.join("link.txt"), "x", &root).await.unwrap_err();
        assert_eq!(
            err,
            ToolError::retry(format!(
                "{} now leads to {} through a symbolic link. Read it again and redo the change.",
                root.join("link.txt").display(),
                root.join("real.txt").display()
            ))
        );
        assert!(!root.join("real.txt").exists());
    }

    #[test]
    fn the_ledger_requires_a_read_a_full_read_for_overwrites_and_unchanged_content() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path());
        let path = dir.path().join("a.txt");
        let err = f.check_fresh(&path, "x", false).unwrap_err();
        assert_eq!(
            err,
            ToolError::retry(format!(
                "You must read {} before changing it. Use the read tool first.",
                path.display()
            ))
        );
        f.record_read(&path, "x", false);
        assert!(f.check_fresh(&path, "x", false).is_ok());
        assert!(
            f.check_fresh(&path, "x", true)
                .unwrap_err()
                .to_string()
                .starts_with("You have only read part of")
        );
        assert!(
            f.check_fresh(&path, "y", false)
                .unwrap_err()
                .to_string()
                .contains("has changed since you last read it")
        );
        f.record_read(&path, "x", true);
        assert!(f.check_fresh(&path, "x", true).is_ok());
        f.record_read(&path, "x", false);
        assert!(
            f.check_fresh(&path, "x", true).is_ok(),
            "a later partial read of unchanged text keeps the full read"
        );
    }

    #[tokio::test]
    async fn the_lock_map_drops_unused_entries_at_the_threshold() {
        let locks = FileLocks::default();
        let held = locks.lock(Path::new("/held")).await;
        for i in 1..FILE_LOCK_CLEANUP_THRESHOLD {
            drop(locks.lock(Path::new(&format!("/f{i}"))).await);
        }
        assert_eq!(locks.len(), FILE_LOCK_CLEANUP_THRESHOLD);
        drop(locks.lock(Path::new("/one-more")).await);
        assert_eq!(locks.len(), 2, "only the held lock and the new one survive the cleanup");
        drop(held);
    }

    #[tokio::test]
    async fn a_restore_replaces_a_symlink_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "keep me\n").unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let planted = root.join("a.txt");
        std::os::unix::fs::symlink(&outside, &planted).unwrap();
        let f = files(&root);
        assert_eq!(f.restore(&planted, b"old a\n").await, Ok(Via::Disk));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me\n");
        assert!(!std::fs::symlink_metadata(&planted).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&planted).unwrap(), "old a\n");
    }

    #[tokio::test]
    async fn a_restore_outside_the_roots_is_refused_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let outside = dir.path().join("elsewhere.txt");
        let f = files(&root);
        let refused = f.restore(&outside, b"planted\n").await.unwrap_err();
        assert!(refused.contains("outside the workspace"), "{refused}");
        assert!(!outside.exists());
    }

    /// Wait (polling the clock, not sleeping) until the kernel's change clock has passed `path`'s last change.
    fn until_settled(path: &Path) {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).unwrap();
        while Stamp::clock() <= (meta.ctime(), meta.ctime_nsec()) {
            std::thread::yield_now();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stamp_vouches_for_an_unchanged_file_and_never_for_a_rewritten_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "abc\n").unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        until_settled(&path);
        let f = files(dir.path());
        let (text, stamp) = f.read_text_stamped(&path).await.unwrap();
        assert_eq!(text.as_deref(), Some("abc\n"));
        assert!(stamp.is_some());
        assert!(f.holds_stamped(&path, Some("abc\n"), stamp).await.unwrap());
        // The stamp stands for the text it was read with: the file is not read again while it is unchanged.
        assert!(f.holds_stamped(&path, Some("not what was read"), stamp).await.unwrap());

        // Rewritten in place with as many bytes and its modification time put back: the ctime still moved.
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::io::Write::write_all(&mut file, b"xyz\n").unwrap();
        file.set_times(std::fs::FileTimes::new().set_modified(modified)).unwrap();
        drop(file);
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), modified);
        assert!(!f.holds_stamped(&path, Some("abc\n"), stamp).await.unwrap());
        assert!(f.holds_stamped(&path, Some("xyz\n"), stamp).await.unwrap(), "compared by content instead");
    }

    #[test]
    fn only_a_change_strictly_before_the_read_on_a_sub_second_file_system_settles_a_stamp() {
        let stamp = |ctime| Stamp { dev: 1, ino: 2, len: 3, mtime: ctime, ctime };
        assert!(stamp((100, 5)).settled_before((100, 6)));
        assert!(stamp((100, 5)).settled_before((101, 0)));
        assert!(!stamp((100, 5)).settled_before((100, 5)), "a change in the same tick could follow the read");
        assert!(!stamp((100, 5)).settled_before((99, 999_999_999)));
        assert!(!stamp((100, 0)).settled_before((200, 0)), "whole-second times cannot tell two writes apart");
    }

    #[tokio::test]
    async fn two_lockers_of_one_path_are_serialised() {
        let locks = Arc::new(FileLocks::default());
        let first = locks.lock(Path::new("/same")).await;
        let second = tokio::spawn({
            let locks = locks.clone();
            async move { locks.lock(Path::new("/same")).await }
        });
        tokio::task::yield_now().await;
        assert!(!second.is_finished());
        drop(first);
        second.await.unwrap();
    }
}
