//! What one turn changed in the files, for checkpoints and undo: the content every file had before the turn
//! first changed it, and the fingerprint it has after the turn.
//!
//! Two sources feed it. Writes and deletions through [`super::files::Files`] call [`Recorder::before_write`]
//! first. Shell commands in a git work tree are bracketed by [`Recorder::before_command`] and
//! [`Recorder::after_command`]: `git status` before and after (with a copy of every file already dirty before),
//! and each path that changed gets its earlier content from that copy, or from the committed text when it was
//! clean, or "absent" when it was new.
//!
//! Not covered (listed in the checkpoint as such): files over [`MAX_FILE_BYTES`], a turn past
//! [`MAX_TURN_BYTES`], shell commands outside a git work tree, files a filter driver of the repository applies
//! to when they come back from the commit (git runs no driver for tinycode), files git ignores, changes inside
//! submodules, dirty files past [`MAX_DIRTY_FILES`] when a command starts, and anything a
//! background task changes after its call has returned.
//!
//! Owns the per-turn record. Must not write files or know how checkpoints are stored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use super::git::{GitError, Repo};

/// Files larger than this are not copied.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;
/// What one turn's copies may add up to.
pub const MAX_TURN_BYTES: usize = 32 * 1024 * 1024;
/// Dirty files copied before a shell command (more are only fingerprinted).
pub const MAX_DIRTY_FILES: usize = 500;
/// A command in a tree with more dirty or untracked files than this is not tracked.
pub const MAX_STATUS_ENTRIES: usize = 20_000;

/// A file's content before the turn changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// It did not exist.
    Absent,
    Content(Vec<u8>),
}

/// One file a turn changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    pub before: Before,
    /// The SHA-256 of its content after the turn (hex), `None` when the turn deleted it.
    pub after: Option<String>,
}

/// Everything a turn changed, and what it could not record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnChanges {
    pub files: Vec<FileChange>,
    pub uncovered: Vec<String>,
}

/// The content fingerprint stored with a checkpoint.
pub fn fingerprint(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of the file at `path` now, `None` when it does not exist (or is not a file).
pub fn fingerprint_of(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|bytes| fingerprint(&bytes))
}

/// A dirty file as it was before a command.
#[derive(Debug, Clone)]
enum Copy {
    Absent,
    Content(Vec<u8>),
    /// Too big (or past the limits) to copy: its size and time, to notice that it changed.
    Stat(u64, Option<SystemTime>),
}

struct Snapshot {
    repo: Repo,
    dirty: BTreeMap<PathBuf, Copy>,
    label: String,
}

#[derive(Default)]
struct Record {
    files: BTreeMap<PathBuf, Before>,
    uncovered: Vec<String>,
    bytes: usize,
    command: Option<Snapshot>,
}

impl Record {
    fn note(&mut self, text: String) {
        if !self.uncovered.contains(&text) {
            self.uncovered.push(text);
        }
    }

    /// Keep `before` as `path`'s earliest content in this turn, within the size limits.
    fn keep(&mut self, path: &Path, before: Before) {
        if self.files.contains_key(path) {
            return;
        }
        let size = match &before {
            Before::Content(bytes) => bytes.len(),
            Before::Absent => 0,
        };
        if size > MAX_FILE_BYTES {
            self.note(format!("{} (over {} KiB)", path.display(), MAX_FILE_BYTES / 1024));
        } else if self.bytes + size > MAX_TURN_BYTES {
            self.note(format!("{} (the turn's copies passed {} MiB)", path.display(), MAX_TURN_BYTES >> 20));
        } else {
            self.bytes += size;
            self.files.insert(path.to_path_buf(), before);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn stat(path: &Path) -> Option<(u64, Option<SystemTime>)> {
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| (m.len(), m.modified().ok()))
}

/// The content of the file at `path`: absent, its bytes, or `None` when it is too big to copy.
fn read_before(path: &Path) -> Option<Before> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() as usize > MAX_FILE_BYTES => None,
        Ok(meta) if meta.is_file() => {
            Some(std::fs::read(path).map(Before::Content).unwrap_or(Before::Absent))
        }
        _ => Some(Before::Absent),
    }
}

/// One session's recorder; it records only between [`Recorder::begin`] and [`Recorder::finish`].
#[derive(Default)]
pub struct Recorder {
    record: Mutex<Option<Record>>,
}

impl Recorder {
    /// Start recording a turn (dropping whatever an unfinished one left).
    pub fn begin(&self) {
        *lock(&self.record) = Some(Record::default());
    }

    /// Something the turn's record cannot cover (shown with its checkpoint).
    pub fn note(&self, gap: String) {
        if let Some(record) = lock(&self.record).as_mut() {
            record.note(gap);
        }
    }

    /// `path` is about to be written or deleted by a tool.
    pub async fn before_write(&self, path: &Path) {
        let known = match lock(&self.record).as_ref() {
            None => return,
            Some(record) => record.files.contains_key(path),
        };
        if known {
            return;
        }
        let owned = path.to_path_buf();
        let before = tokio::task::spawn_blocking(move || read_before(&owned)).await.ok().flatten();
        if let Some(record) = lock(&self.record).as_mut() {
            match before {
                Some(before) => record.keep(path, before),
                None => record.note(format!("{} (over {} KiB)", path.display(), MAX_FILE_BYTES / 1024)),
            }
        }
    }

    /// A shell command `label` is about to run in `cwd`: take git's view of the dirty files.
    pub async fn before_command(&self, cwd: &Path, label: &str) {
        if lock(&self.record).is_none() {
            return;
        }
        let snapshot = match snapshot(cwd, label).await {
            Ok(snapshot) => Some(snapshot),
            Err(gap) => {
                if let Some(record) = lock(&self.record).as_mut() {
                    record.note(gap);
                }
                None
            }
        };
        if let Some(record) = lock(&self.record).as_mut() {
            record.command = snapshot;
        }
    }

    /// The command has returned: record what it changed.
    pub async fn after_command(&self) {
        let Some(before) = lock(&self.record).as_mut().and_then(|r| r.command.take()) else { return };
        let after = match before.repo.status().await {
            Ok(after) => after,
            Err(e) => {
                if let Some(record) = lock(&self.record).as_mut() {
                    record.note(format!("`{}`: {e}", before.label));
                }
                return;
            }
        };
        let mut paths: Vec<PathBuf> = before.dirty.keys().cloned().collect();
        paths.extend(after.keys().filter(|p| !before.dirty.contains_key(*p)).cloned());
        for path in paths {
            if lock(&self.record).as_ref().is_none_or(|r| r.files.contains_key(&path)) {
                continue;
            }
            let earlier =
                earlier_content(&before, &path, after.get(&path).is_some_and(|e| e.untracked())).await;
            if let Some(record) = lock(&self.record).as_mut() {
                match earlier {
                    Ok(Some(content)) => record.keep(&path, content),
                    Ok(None) => {}
                    Err(gap) => record.note(gap),
                }
            }
        }
    }

    /// Stop recording; what the turn changed (files whose content is back to where it started are left out).
    pub async fn finish(&self) -> TurnChanges {
        let Some(record) = lock(&self.record).take() else { return TurnChanges::default() };
        tokio::task::spawn_blocking(move || {
            let files = record
                .files
                .into_iter()
                .filter_map(|(path, before)| {
                    let now = std::fs::read(&path).ok();
                    let same = match (&before, &now) {
                        (Before::Absent, None) => true,
                        (Before::Content(old), Some(new)) => old == new,
                        _ => false,
                    };
                    (!same).then(|| FileChange { after: now.as_deref().map(fingerprint), path, before })
                })
                .collect();
            TurnChanges { files, uncovered: record.uncovered }
        })
        .await
        .unwrap_or_default()
    }
}

/// What a path held before the command: `Ok(None)` when the command did not change it.
async fn earlier_content(before: &Snapshot, path: &Path, untracked: bool) -> Result<Option<Before>, String> {
    let owned = path.to_path_buf();
    let now = tokio::task::spawn_blocking(move || read_before(&owned)).await.ok().flatten();
    match before.dirty.get(path) {
        Some(Copy::Absent) => Ok((now != Some(Before::Absent)).then_some(Before::Absent)),
        Some(Copy::Content(old)) => {
            let unchanged = matches!(&now, Some(Before::Content(new)) if new == old);
            Ok((!unchanged).then(|| Before::Content(old.clone())))
        }
        Some(Copy::Stat(len, time)) => match stat(path) == Some((*len, *time)) {
            true => Ok(None),
            false => Err(format!("{} (changed by `{}`, too big to copy)", path.display(), before.label)),
        },
        // It was clean: it held the committed text, or did not exist if git does not track it.
        None if untracked => Ok(Some(Before::Absent)),
        None => match before.repo.committed(path).await {
            Ok(Some(text)) => Ok(Some(Before::Content(text))),
            Ok(None) => Ok(Some(Before::Absent)),
            Err(e) => Err(format!("{} (changed by `{}`: {e})", path.display(), before.label)),
        },
    }
}

/// Git's dirty files in `cwd`'s work tree, copied within the limits; `Err` says why the command is not tracked.
async fn snapshot(cwd: &Path, label: &str) -> Result<Snapshot, String> {
    let untracked = |why: String| format!("changes made by `{label}` ({why})");
    let repo = Repo::open(cwd).await.map_err(|e| match e {
        GitError::NotARepository(_) => {
            untracked("shell commands outside a git work tree are not tracked".into())
        }
        other => untracked(other.to_string()),
    })?;
    let status = repo.status().await.map_err(|e| untracked(e.to_string()))?;
    if status.len() > MAX_STATUS_ENTRIES {
        return Err(untracked(format!("more than {MAX_STATUS_ENTRIES} changed or untracked files")));
    }
    let paths: Vec<PathBuf> = status.into_keys().collect();
    let dirty = tokio::task::spawn_blocking(move || {
        let mut copied = 0usize;
        let mut dirty = BTreeMap::new();
        for (n, path) in paths.into_iter().enumerate() {
            let copy = match (n < MAX_DIRTY_FILES, stat(&path)) {
                (_, None) => Copy::Absent,
                (true, Some((len, _)))
                    if (len as usize) <= MAX_FILE_BYTES && copied + len as usize <= MAX_TURN_BYTES =>
                {
                    copied += len as usize;
                    std::fs::read(&path).map(Copy::Content).unwrap_or(Copy::Absent)
                }
                (_, Some((len, time))) => Copy::Stat(len, time),
            };
            dirty.insert(path, copy);
        }
        dirty
    })
    .await
    .map_err(|e| untracked(e.to_string()))?;
    Ok(Snapshot { repo, dirty, label: label.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_turn_keeps_the_earliest_content_and_drops_files_that_ended_where_they_started() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (dir.path().join("a.txt"), dir.path().join("b.txt"), dir.path().join("c.txt"));
        std::fs::write(&a, "one").unwrap();
        std::fs::write(&b, "same").unwrap();
        let recorder = Recorder::default();
        recorder.before_write(&a).await;
        assert_eq!(recorder.finish().await, TurnChanges::default(), "nothing is recorded outside a turn");

        recorder.begin();
        recorder.before_write(&a).await;
        std::fs::write(&a, "two").unwrap();
        recorder.before_write(&a).await;
        std::fs::write(&a, "three").unwrap();
        recorder.before_write(&b).await;
        recorder.before_write(&c).await;
        std::fs::write(&c, "new").unwrap();
        let changes = recorder.finish().await;
        assert_eq!(
            changes,
            TurnChanges {
                files: vec![
                    FileChange {
                        path: a,
                        before: Before::Content(b"one".to_vec()),
                        after: Some(fingerprint(b"three"))
                    },
                    FileChange { path: c, before: Before::Absent, after: Some(fingerprint(b"new")) },
                ],
                uncovered: vec![],
            }
        );
    }

    #[tokio::test]
    async fn files_over_the_size_limit_are_listed_as_not_covered() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.bin");
        std::fs::write(&big, vec![b'x'; MAX_FILE_BYTES + 1]).unwrap();
        let recorder = Recorder::default();
        recorder.begin();
        recorder.before_write(&big).await;
        std::fs::write(&big, "small now").unwrap();
        let changes = recorder.finish().await;
        assert_eq!(changes.files, vec![]);
        assert_eq!(changes.uncovered, vec![format!("{} (over 1024 KiB)", big.display())]);
    }

    #[tokio::test]
    async fn commands_outside_a_git_work_tree_are_noted_as_not_tracked() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::default();
        recorder.begin();
        recorder.before_command(dir.path(), "touch x").await;
        std::fs::write(dir.path().join("x"), "").unwrap();
        recorder.after_command().await;
        let changes = recorder.finish().await;
        assert_eq!(changes.files, vec![]);
        assert_eq!(
            changes.uncovered,
            vec!["changes made by `touch x` (shell commands outside a git work tree are not tracked)"]
        );
    }
}
