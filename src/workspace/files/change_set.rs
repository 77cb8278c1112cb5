//! A set of file changes made all or nothing (what `apply_patch` writes). Every path is checked against the
//! boundary and told to the turn's record first. Without the editor, the whole set is staged on disk and then
//! committed ([`staging`]): a full or read-only disk fails before any file is touched. When the editor takes
//! writes (`fs/write_text_file`), deletions are staged on disk (the protocol has no delete), the files are written
//! through the editor one by one, and a refusal undoes what it already took: the earlier text is given back
//! through the editor, files it created are removed with the folders made for them, and the staged deletions are
//! dropped. Formatters run only once every change is in place.
//!
//! Owns the order and the undo of a change set. Must not decide what to write.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ClientFs, EditorError, Files, Via, Written, multi_threaded};
use crate::tool::error::ToolError;
use crate::workspace::encoding::{self, Encoding};
use crate::workspace::{atomic, regular, staging};

/// One file's change: from `old` (its text before, `None`: missing) to `new` (`None`: deleted). A set names each
/// path once.
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    pub path: &'a Path,
    pub old: Option<&'a str>,
    pub new: Option<&'a str>,
}

/// Why a change set was not made. Handled by the tool, which tells the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetError {
    /// A path was refused before anything was written.
    Refused(ToolError),
    /// A write or deletion failed; what was already done was undone (see [`SetFailure::unrestored`]).
    Failed(SetFailure),
}

/// The change that failed and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetFailure {
    pub path: PathBuf,
    pub deleting: bool,
    /// Why, as a phrase: `File name too long (os error 36)`, `the editor could not save it: ...`.
    pub reason: String,
    /// Files the undo could not put back as they were, with why. Empty: nothing changed.
    pub unrestored: Vec<(PathBuf, String)>,
}

impl From<staging::Failure> for SetFailure {
    fn from(f: staging::Failure) -> Self {
        SetFailure {
            path: f.path,
            deleting: f.deleting,
            reason: f.error.to_string(),
            unrestored: f.unrestored,
        }
    }
}

/// How to undo one change the editor path made.
enum Undo {
    /// The editor took `path`: give it `old` back, or remove the file it created and the folders made for it.
    Editor { path: PathBuf, old: Option<String>, dirs: Vec<PathBuf> },
    /// Written on disk instead (the editor does not take writes after all).
    Disk(staging::Transaction),
}

/// The encoding the file at `path` is stored in (a missing file: UTF-8).
async fn stored_encoding(path: &Path) -> Encoding {
    let owned = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        regular::read(&owned, 4).map(|head| Encoding::detect(&head.bytes)).unwrap_or_default()
    })
    .await
    .unwrap_or_default()
}

/// The bytes `text` is written as to `path` on disk: in the file's own encoding (UTF-16 stays UTF-16).
async fn bytes_for<'a>(path: &Path, text: &'a str) -> Cow<'a, [u8]> {
    match stored_encoding(path).await {
        Encoding::Utf8 => Cow::Borrowed(text.as_bytes()),
        other => Cow::Owned(encoding::encode(text, other)),
    }
}

/// Stage and commit `ops` on a blocking thread (in place where the runtime allows, so texts are not copied).
async fn apply_on_disk(ops: Vec<staging::Op<'_>>) -> Result<staging::Transaction, SetFailure> {
    if multi_threaded() {
        return tokio::task::block_in_place(|| staging::apply(ops)).map_err(SetFailure::from);
    }
    let first = ops.first().map(|op| (op.path.clone(), op.content.is_none())).unwrap_or_default();
    let owned: Vec<staging::Op<'static>> = ops.into_iter().map(staging::Op::into_owned).collect();
    match tokio::task::spawn_blocking(move || staging::apply(owned)).await {
        Ok(applied) => applied.map_err(SetFailure::from),
        Err(e) => Err(SetFailure {
            path: first.0,
            deleting: first.1,
            reason: e.to_string(),
            unrestored: Vec::new(),
        }),
    }
}

/// Drop the kept files of finished transactions and flush the written ones after the call returns.
fn finish(transactions: Vec<staging::Transaction>) {
    let flushes: Vec<atomic::Unflushed> =
        transactions.into_iter().flat_map(staging::Transaction::finish).collect();
    if !flushes.is_empty() {
        tokio::task::spawn_blocking(move || flushes.into_iter().for_each(atomic::Unflushed::flush));
    }
}

/// The missing folders a new file at `path` needs, deepest first.
fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|dir| std::fs::symlink_metadata(dir).is_err())
        .map(Path::to_path_buf)
        .collect()
}

impl Files {
    /// Make every change of `changes`, or none: see the module documentation. Returns what each write left in
    /// its file (`None` for deletions), in order.
    pub async fn change_all<'a>(
        &self,
        changes: &[Change<'a>],
        cwd: &Path,
    ) -> Result<Vec<Option<Written<'a>>>, SetError> {
        for change in changes {
            // The tools check before they ask; checking again here keeps any writer from reaching outside.
            let checked = self.check_boundary(change.path).map_err(SetError::Refused)?;
            if change.new.is_some() && checked != change.path {
                return Err(SetError::Refused(ToolError::retry(format!(
                    "{} now leads to {} through a symbolic link. Read it again and redo the change.",
                    change.path.display(),
                    checked.display()
                ))));
            }
        }
        if let Some(recorder) = &self.changes {
            for change in changes {
                recorder.before_write(change.path).await;
            }
        }
        let via = match self.editor_writes() {
            Some(client) => self.through_editor(client, changes).await,
            None => self.on_disk(changes).await,
        }
        .map_err(SetError::Failed)?;
        let mut written = Vec::with_capacity(changes.len());
        for change in changes {
            match change.new {
                Some(content) => {
                    let done = Written { via, content: Cow::Borrowed(content), formatter_error: None };
                    written.push(Some(self.settle(change.path, done, cwd).await));
                }
                None => {
                    self.ledger().remove(change.path);
                    written.push(None);
                }
            }
        }
        Ok(written)
    }

    async fn on_disk(&self, changes: &[Change<'_>]) -> Result<Via, SetFailure> {
        let mut ops = Vec::with_capacity(changes.len());
        for change in changes {
            let content = match change.new {
                Some(text) => Some(bytes_for(change.path, text).await),
                None => None,
            };
            ops.push(staging::Op { path: change.path.to_path_buf(), content });
        }
        finish(vec![apply_on_disk(ops).await?]);
        Ok(Via::Disk)
    }

    /// Deletions staged on disk, writes through the editor; any failure undoes the rest.
    async fn through_editor(
        &self,
        client: Arc<dyn ClientFs>,
        changes: &[Change<'_>],
    ) -> Result<Via, SetFailure> {
        let deletions: Vec<staging::Op<'static>> = changes
            .iter()
            .filter(|c| c.new.is_none())
            .map(|c| staging::Op { path: c.path.to_path_buf(), content: None })
            .collect();
        let mut deleted =
            tokio::task::spawn_blocking(move || staging::stage(deletions)).await.map_err(|e| {
                SetFailure {
                    path: changes.first().map(|c| c.path.to_path_buf()).unwrap_or_default(),
                    deleting: true,
                    reason: e.to_string(),
                    unrestored: Vec::new(),
                }
            })??;
        let mut undo = Vec::new();
        for change in changes {
            let Some(text) = change.new else { continue };
            let failed = match self.write_one(&client, change, text, &mut undo).await {
                Ok(()) => continue,
                Err(failed) => failed,
            };
            let mut failed = failed;
            failed.unrestored.extend(self.undo(&client, undo).await);
            failed.unrestored.extend(deleted.roll_back());
            return Err(failed);
        }
        let committed = tokio::task::spawn_blocking(move || deleted.commit().map(|()| deleted)).await;
        match committed {
            Ok(Ok(deleted)) => {
                let mut transactions = vec![deleted];
                transactions.extend(undo.into_iter().filter_map(|u| match u {
                    Undo::Disk(transaction) => Some(transaction),
                    Undo::Editor { .. } => None,
                }));
                finish(transactions);
                Ok(Via::Editor)
            }
            Ok(Err(failure)) => {
                let mut failed = SetFailure::from(failure);
                failed.unrestored.extend(self.undo(&client, undo).await);
                Err(failed)
            }
            Err(e) => {
                let mut failed = SetFailure {
                    path: changes.first().map(|c| c.path.to_path_buf()).unwrap_or_default(),
                    deleting: true,
                    reason: e.to_string(),
                    unrestored: Vec::new(),
                };
                failed.unrestored.extend(self.undo(&client, undo).await);
                Err(failed)
            }
        }
    }

    /// Write one file through the editor (on disk if it turns out not to take writes), noting how to undo it.
    async fn write_one(
        &self,
        client: &Arc<dyn ClientFs>,
        change: &Change<'_>,
        text: &str,
        undo: &mut Vec<Undo>,
    ) -> Result<(), SetFailure> {
        let dirs = if change.old.is_none() { missing_dirs(change.path) } else { Vec::new() };
        match client.write(change.path, text).await {
            Ok(()) => {
                undo.push(Undo::Editor {
                    path: change.path.to_path_buf(),
                    old: change.old.map(String::from),
                    dirs,
                });
                Ok(())
            }
            Err(EditorError::Unsupported) => {
                let content = Some(bytes_for(change.path, text).await);
                let op = staging::Op { path: change.path.to_path_buf(), content };
                undo.push(Undo::Disk(apply_on_disk(vec![op]).await?));
                Ok(())
            }
            Err(EditorError::Failed(message)) => Err(SetFailure {
                path: change.path.to_path_buf(),
                deleting: false,
                reason: format!("the editor could not save it: {message}"),
                unrestored: Vec::new(),
            }),
        }
    }

    /// Undo the editor path's changes, last first. Returns the files that could not be put back, with why.
    async fn undo(&self, client: &Arc<dyn ClientFs>, undo: Vec<Undo>) -> Vec<(PathBuf, String)> {
        let mut unrestored = Vec::new();
        for step in undo.into_iter().rev() {
            match step {
                Undo::Disk(mut transaction) => unrestored.extend(transaction.roll_back()),
                Undo::Editor { path, old: Some(old), .. } => {
                    self.ledger().remove(&path);
                    if let Err(e) = client.write(&path, &old).await {
                        let why = match e {
                            EditorError::Unsupported => "the editor no longer takes writes".to_string(),
                            EditorError::Failed(message) => {
                                format!("the editor could not save it: {message}")
                            }
                        };
                        unrestored.push((path, why));
                    }
                }
                Undo::Editor { path, old: None, dirs } => {
                    self.ledger().remove(&path);
                    match tokio::fs::remove_file(&path).await {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            unrestored.push((path, format!("the file it created could not be removed: {e}")));
                        }
                        _ => {
                            for dir in dirs {
                                let _ = tokio::fs::remove_dir(dir).await;
                            }
                        }
                    }
                }
            }
        }
        unrestored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::files::FileLocks;
    use futures::future::BoxFuture;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// An editor that saves to disk and refuses `refused`, logging every write.
    struct Editor {
        refused: PathBuf,
        writes: Mutex<Vec<(PathBuf, String)>>,
    }

    impl ClientFs for Editor {
        fn can_read(&self) -> bool {
            false
        }
        fn can_write(&self) -> bool {
            true
        }
        fn read(&self, _: &Path) -> BoxFuture<'_, Result<String, EditorError>> {
            Box::pin(async { Err(EditorError::Unsupported) })
        }
        fn write<'a>(&'a self, path: &'a Path, content: &'a str) -> BoxFuture<'a, Result<(), EditorError>> {
            Box::pin(async move {
                self.writes.lock().unwrap().push((path.to_path_buf(), content.to_string()));
                if path == self.refused {
                    return Err(EditorError::Failed("no space left".into()));
                }
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, content).unwrap();
                Ok(())
            })
        }
    }

    #[tokio::test]
    async fn a_refused_editor_save_undoes_the_writes_before_it_and_keeps_the_file_to_delete() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (a, new, gone, refused) =
            (root.join("a.txt"), root.join("n/new.txt"), root.join("gone.txt"), root.join("r.txt"));
        std::fs::write(&a, "old a").unwrap();
        std::fs::write(&gone, "bye").unwrap();
        let editor = Arc::new(Editor { refused: refused.clone(), writes: Mutex::new(Vec::new()) });
        let client: Arc<dyn ClientFs> = editor.clone();
        let files = Files::new(
            vec![root.to_path_buf()],
            Some(client),
            Arc::new(FileLocks::default()),
            BTreeMap::new(),
        );
        let changes = [
            Change { path: &a, old: Some("old a"), new: Some("new a") },
            Change { path: &gone, old: Some("bye"), new: None },
            Change { path: &new, old: None, new: Some("fresh") },
            Change { path: &refused, old: None, new: Some("never") },
        ];
        let failure = files.change_all(&changes, root).await.unwrap_err();
        assert_eq!(
            failure,
            SetError::Failed(SetFailure {
                path: refused.clone(),
                deleting: false,
                reason: "the editor could not save it: no space left".into(),
                unrestored: Vec::new(),
            })
        );
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        assert_eq!(std::fs::read_to_string(&gone).unwrap(), "bye");
        let mut names: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, vec!["a.txt", "gone.txt"], "the new file, its folder and every kept file are gone");
        assert_eq!(
            *editor.writes.lock().unwrap(),
            vec![
                (a.clone(), "new a".to_string()),
                (new.clone(), "fresh".to_string()),
                (refused.clone(), "never".to_string()),
                (a.clone(), "old a".to_string()),
            ]
        );
    }
}
