//! File access for one session: reads through the editor (`fs/read_text_file`, unsaved buffers) when it offers
//! that and from disk otherwise; writes through the editor (`fs/write_text_file`, so its review, buffers and
//! format-on-save see them) or atomically to disk. It keeps the read ledger behind read-before-overwrite and
//! stale-write detection, the workspace boundary, and the per-file locks that serialise edits.
//!
//! Owns every byte the tools read or write. Must not decide what to write.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;

use super::changes::Recorder;
use super::{atomic, format};
use crate::shell::environment::Environment;
use crate::tool::error::ToolError;

/// The editor's file system, as the core sees it. Implemented by the `acp` layer.
pub trait ClientFs: Send + Sync {
    fn can_read(&self) -> bool;
    fn can_write(&self) -> bool;
    /// The editor's current text of `path` (including unsaved changes).
    fn read(&self, path: &Path) -> BoxFuture<'_, Result<String, String>>;
    /// Replace `path` in the editor (which saves it and shows the change for review).
    fn write<'a>(&'a self, path: &'a Path, content: &'a str) -> BoxFuture<'a, Result<(), String>>;
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
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// How a write reached the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Editor,
    Disk,
}

/// The outcome of [`Files::write`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub via: Via,
    /// The text now in the file (after the formatter, if one ran).
    pub content: String,
    /// A formatter failure, reported to the model; the write stands.
    pub formatter_error: Option<String>,
}

/// A session's file access.
pub struct Files {
    /// Replaced when the session moves into or out of a worktree.
    roots: RwLock<Vec<PathBuf>>,
    client: Option<Arc<dyn ClientFs>>,
    locks: Arc<FileLocks>,
    /// Replaced when the user trusts the project that configures them.
    formatters: Mutex<BTreeMap<String, Vec<String>>>,
    /// The environment formatters run with.
    environment: Arc<Environment>,
    ledger: Mutex<HashMap<PathBuf, ReadRecord>>,
    /// Told about every write and deletion first (the turn's checkpoint).
    changes: Option<Arc<Recorder>>,
}

/// Lexically resolve `.` and `..`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `path` with symlinks resolved as far as the file system has it (the missing tail is kept as is).
fn resolve_existing(path: &Path) -> PathBuf {
    let mut tail = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&current) {
            return tail.iter().rev().fold(real, |acc: PathBuf, part: &std::ffi::OsString| acc.join(part));
        }
        match (current.file_name().map(|n| n.to_os_string()), current.parent()) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                current = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

impl Files {
    pub fn new(
        roots: Vec<PathBuf>,
        client: Option<Arc<dyn ClientFs>>,
        locks: Arc<FileLocks>,
        formatters: BTreeMap<String, Vec<String>>,
    ) -> Self {
        let environment = Arc::new(Environment::default());
        Self {
            roots: RwLock::new(roots),
            client,
            locks,
            formatters: Mutex::new(formatters),
            environment,
            ledger: Mutex::new(HashMap::new()),
            changes: None,
        }
    }

    /// Tell `recorder` about every write and deletion before it happens.
    pub fn with_changes(mut self, recorder: Arc<Recorder>) -> Self {
        self.changes = Some(recorder);
        self
    }

    /// Bound the tools by `roots` from now on (the session moved into or out of a worktree).
    pub fn set_roots(&self, roots: Vec<PathBuf>) {
        *match self.roots.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        } = roots;
    }

    fn roots(&self) -> Vec<PathBuf> {
        match self.roots.read() {
            Ok(roots) => roots.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
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

    /// Run formatters with `environment` (the session's command environment).
    pub fn with_environment(mut self, environment: Arc<Environment>) -> Self {
        self.environment = environment;
        self
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, ReadRecord>> {
        match self.ledger.lock() {
            Ok(ledger) => ledger,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn editor_reads(&self) -> Option<&Arc<dyn ClientFs>> {
        self.client.as_ref().filter(|c| c.can_read())
    }

    fn editor_writes(&self) -> Option<&Arc<dyn ClientFs>> {
        self.client.as_ref().filter(|c| c.can_write())
    }

    /// Refuse paths outside the session's roots, including `..` and symlink escapes. Returns the normalised path.
    pub fn check_boundary(&self, path: &Path) -> Result<PathBuf, ToolError> {
        let normal = normalize(path);
        let real = resolve_existing(&normal);
        let roots = self.roots();
        let inside = roots.iter().any(|root| real.starts_with(resolve_existing(root)));
        if inside {
            return Ok(normal);
        }
        let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        Err(ToolError::retry(format!(
            "Refusing to change {}: it is outside the workspace ({}). Only files inside the session's directory can be changed.",
            normal.display(),
            roots.join(", ")
        )))
    }

    /// The current text of `path`: the editor's buffer when available, else the disk. `None` when missing.
    pub async fn read_text(&self, path: &Path) -> Result<Option<String>, ToolError> {
        if let Some(client) = self.editor_reads()
            && let Ok(text) = client.read(path).await
        {
            return Ok(Some(text));
        }
        match tokio::fs::read(path).await {
            Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ToolError::execution(format!("cannot read {}: {e}", path.display()))),
        }
    }

    /// Remember that the model saw `content` of `path` (`full`: all of it).
    pub fn record_read(&self, path: &Path, content: &str, full: bool) {
        let mut ledger = self.ledger();
        let full = full || ledger.get(path).is_some_and(|r| r.full && r.hash == hash(content));
        ledger.insert(path.to_path_buf(), ReadRecord { hash: hash(content), full });
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

    /// Write `content` to `path`: through the editor when it can, else atomically to disk. Then run the
    /// formatter, and record the result as read so the model can keep editing.
    pub async fn write(&self, path: &Path, content: &str, cwd: &Path) -> Result<Written, ToolError> {
        if let Some(changes) = &self.changes {
            changes.before_write(path).await;
        }
        let via = match self.editor_writes() {
            Some(client) => {
                client.write(path, content).await.map_err(|e| {
                    ToolError::execution(format!("the editor could not write {}: {e}", path.display()))
                })?;
                Via::Editor
            }
            None => {
                let (target, bytes) = (path.to_path_buf(), content.as_bytes().to_vec());
                tokio::task::spawn_blocking(move || atomic::write(&target, &bytes))
                    .await
                    .map_err(|e| ToolError::execution(e.to_string()))?
                    .map_err(|e| ToolError::execution(format!("cannot write {}: {e}", path.display())))?;
                Via::Disk
            }
        };
        let mut written = Written { via, content: content.to_string(), formatter_error: None };
        if let Some(command) = self.formatter_for(path) {
            match format::run(&command, cwd, &self.environment).await {
                Err(e) => written.formatter_error = Some(e),
                Ok(()) => self.adopt_formatted(path, &mut written).await,
            }
        }
        self.record_read(path, &written.content, true);
        Ok(written)
    }

    /// After a formatter rewrote the file on disk, make the editor's buffer match it.
    async fn adopt_formatted(&self, path: &Path, written: &mut Written) {
        let Ok(formatted) = tokio::fs::read_to_string(path).await else { return };
        if formatted == written.content {
            return;
        }
        if written.via == Via::Editor
            && let Some(client) = self.editor_writes()
            && let Err(e) = client.write(path, &formatted).await
        {
            written.formatter_error = Some(format!("the editor did not take the formatted text: {e}"));
            return;
        }
        written.content = formatted;
    }

    /// Delete `path` from disk (the editor protocol has no delete).
    pub async fn delete(&self, path: &Path) -> Result<(), ToolError> {
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
    /// text, so the editor shows the change for review; else atomically on disk. A symlink found at `path` is
    /// removed first, never written through (it may have been planted to point elsewhere since). No formatter
    /// runs, and the model must read the file again before changing it.
    pub async fn restore(&self, path: &Path, content: &[u8]) -> Result<Via, String> {
        self.ledger().remove(path);
        let link = tokio::fs::symlink_metadata(path).await.is_ok_and(|m| m.file_type().is_symlink());
        if link {
            tokio::fs::remove_file(path).await.map_err(|e| format!("cannot replace the symlink: {e}"))?;
        }
        if let (Some(client), Ok(text), false) = (self.editor_writes(), std::str::from_utf8(content), link) {
            client.write(path, text).await?;
            return Ok(Via::Editor);
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
