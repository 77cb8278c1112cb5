//! Several changes to files on disk made all or nothing. Staging writes every new content to a temporary sibling
//! of its target ([`atomic::stage`], missing directories created) and keeps every file that will be replaced or
//! deleted under a hard link beside it (a copy where the file system has no hard links); a failure there removes
//! what staging made, so nothing changed. Committing renames the temporary files over their targets and unlinks
//! the deleted files; a failure there first puts back what was already done (the kept files renamed back, created
//! files and directories removed). [`Transaction::finish`] drops the kept files once every change is in place; a
//! transaction dropped before that is rolled back.
//!
//! A disk that is full or read-only, or a name the file system refuses, fails while staging, before any target
//! is touched.
//!
//! Owns that protocol, on top of [`atomic`]. Blocking: call it from a blocking thread. Must not decide what to
//! write.

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

use super::atomic::{self, Staged, Unflushed};

/// One change: write `content` to `path` (symlinks followed, as [`atomic`] does), or delete `path` (`None`).
pub struct Op<'a> {
    pub path: PathBuf,
    pub content: Option<Cow<'a, [u8]>>,
}

impl Op<'_> {
    /// The same change, holding its bytes.
    pub fn into_owned(self) -> Op<'static> {
        Op { path: self.path, content: self.content.map(|c| Cow::Owned(c.into_owned())) }
    }
}

/// Why a change set failed. Handled by the caller, which tells the user or the model.
#[derive(Debug)]
pub struct Failure {
    /// The path whose change failed, as the op named it.
    pub path: PathBuf,
    /// The failed change was a deletion.
    pub deleting: bool,
    pub error: io::Error,
    /// Files the roll-back could not put back, with why. Empty: nothing changed.
    pub unrestored: Vec<(PathBuf, String)>,
}

struct Step {
    /// The path as the op named it.
    named: PathBuf,
    /// The file changed: for a write the file the rename replaces, for a deletion the path itself.
    target: PathBuf,
    deleting: bool,
    /// A write's new content, until committed.
    staged: Option<Staged>,
    /// The earlier file, kept beside the target.
    kept: Option<PathBuf>,
    /// Directories staging created, deepest first.
    dirs: Vec<PathBuf>,
    /// The change is in place.
    done: bool,
}

/// Staged changes; see the module documentation.
pub struct Transaction {
    steps: Vec<Step>,
    flushes: Vec<Unflushed>,
}

/// Stage every op, in order. On a failure nothing is left of the staging.
pub fn stage(ops: Vec<Op<'_>>) -> Result<Transaction, Failure> {
    let mut transaction = Transaction { steps: Vec::new(), flushes: Vec::new() };
    for op in ops {
        let deleting = op.content.is_none();
        let mut step = Step {
            named: op.path.clone(),
            target: op.path.clone(),
            deleting,
            staged: None,
            kept: None,
            dirs: Vec::new(),
            done: false,
        };
        let prepared = prepare(&mut step, &op);
        transaction.steps.push(step);
        if let Err(error) = prepared {
            let unrestored = transaction.roll_back();
            return Err(Failure { path: op.path, deleting, error, unrestored });
        }
    }
    Ok(transaction)
}

/// Stage and commit every op: all of them are in place, or none.
pub fn apply(ops: Vec<Op<'_>>) -> Result<Transaction, Failure> {
    let mut transaction = stage(ops)?;
    transaction.commit()?;
    Ok(transaction)
}

fn prepare(step: &mut Step, op: &Op<'_>) -> io::Result<()> {
    let Some(content) = &op.content else {
        step.kept = keep(&step.target)?;
        return Ok(());
    };
    step.target = atomic::write_target(&op.path);
    let dir = step.target.parent().ok_or_else(|| io::Error::other("path has no parent directory"))?;
    step.dirs = atomic::create_dirs(dir)?;
    let staged = atomic::stage(&step.target, content)?;
    let existed = staged.existed();
    step.staged = Some(staged);
    if existed {
        step.kept = keep(&step.target)?;
    }
    Ok(())
}

/// Keep the file at `path` (not following a final symlink) under a new name beside it; `None` when there is none.
fn keep(path: &Path) -> io::Result<Option<PathBuf>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let kept = atomic::sibling(path, "orig")?;
    match std::fs::hard_link(path, &kept) {
        Ok(()) => Ok(Some(kept)),
        Err(_) if meta.is_file() => {
            std::fs::copy(path, &kept)?;
            Ok(Some(kept))
        }
        Err(e) => Err(e),
    }
}

impl Transaction {
    /// Put every staged change in place, in order. On a failure what was done is put back first.
    pub fn commit(&mut self) -> Result<(), Failure> {
        for index in 0..self.steps.len() {
            let step = &mut self.steps[index];
            let result = match step.staged.take() {
                Some(staged) => staged.commit().map(|(_, unflushed)| self.flushes.push(unflushed)),
                None if step.deleting && step.kept.is_some() => std::fs::remove_file(&step.target),
                None => Ok(()),
            };
            match result {
                Ok(()) => step.done = true,
                Err(error) => {
                    let (path, deleting) = (step.named.clone(), step.deleting);
                    let unrestored = self.roll_back();
                    return Err(Failure { path, deleting, error, unrestored });
                }
            }
        }
        Ok(())
    }

    /// Undo every change made and remove everything staging made, last change first. Returns the files that
    /// could not be put back, with why (their earlier content stays kept beside them).
    pub fn roll_back(&mut self) -> Vec<(PathBuf, String)> {
        let mut unrestored = Vec::new();
        for mut step in self.steps.drain(..).rev() {
            drop(step.staged.take());
            if step.done {
                let undone = match (&step.kept, step.deleting) {
                    (Some(kept), _) => std::fs::rename(kept, &step.target),
                    (None, false) => std::fs::remove_file(&step.target),
                    (None, true) => Ok(()),
                };
                match undone {
                    Ok(()) => step.kept = None,
                    Err(e) => {
                        let note = match step.kept.take() {
                            Some(kept) => format!("{e}; its earlier content is kept in {}", kept.display()),
                            None => e.to_string(),
                        };
                        unrestored.push((step.named.clone(), note));
                    }
                }
            }
            if let Some(kept) = step.kept.take() {
                let _ = std::fs::remove_file(kept);
            }
            for dir in &step.dirs {
                // Only an empty directory goes: one that still holds something was not only ours.
                let _ = std::fs::remove_dir(dir);
            }
        }
        self.flushes.clear();
        unrestored
    }

    /// Every change is in place: drop the kept files. Returns the flushes of the written files.
    pub fn finish(mut self) -> Vec<Unflushed> {
        for step in self.steps.drain(..) {
            if let Some(kept) = step.kept {
                let _ = std::fs::remove_file(kept);
            }
        }
        std::mem::take(&mut self.flushes)
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.steps.is_empty() {
            let unrestored = self.roll_back();
            if !unrestored.is_empty() {
                tracing::warn!(?unrestored, "a dropped change set could not be rolled back in full");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) -> Op<'static> {
        Op { path: path.to_path_buf(), content: Some(Cow::Owned(text.as_bytes().to_vec())) }
    }

    fn delete(path: &Path) -> Op<'static> {
        Op { path: path.to_path_buf(), content: None }
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_change_set_is_applied_whole_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let (a, gone, new) =
            (dir.path().join("a.txt"), dir.path().join("gone.txt"), dir.path().join("d/new.txt"));
        std::fs::write(&a, "old a").unwrap();
        std::fs::write(&gone, "bye").unwrap();
        let done = apply(vec![write(&a, "new a"), delete(&gone), write(&new, "fresh")]).unwrap();
        assert_eq!(done.finish().len(), 2);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new a");
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "fresh");
        assert_eq!(entries(dir.path()), vec!["a.txt", "d"]);
        assert_eq!(entries(&dir.path().join("d")), vec!["new.txt"]);
    }

    #[test]
    fn a_failure_while_staging_changes_nothing_and_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        std::fs::write(&a, "old a").unwrap();
        // A legal name whose temporary sibling is too long for the file system.
        let long = dir.path().join("new").join(format!("{}.txt", "n".repeat(250)));
        let failure = apply(vec![write(&a, "new a"), write(&long, "x")]).err().unwrap();
        assert_eq!((failure.path, failure.deleting), (long, false));
        assert_eq!(failure.error.raw_os_error(), Some(libc::ENAMETOOLONG));
        assert!(failure.unrestored.is_empty());
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        assert_eq!(entries(dir.path()), vec!["a.txt"], "the created folder and the staged files are gone");
    }

    #[test]
    fn a_failure_while_committing_puts_back_every_change_already_made() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (a, gone, new, last) = (
            dir.path().join("a.txt"),
            dir.path().join("gone.txt"),
            dir.path().join("d/new.txt"),
            dir.path().join("last.txt"),
        );
        std::fs::write(&a, "old a").unwrap();
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o750)).unwrap();
        std::fs::write(&gone, "bye").unwrap();
        let mut staged =
            stage(vec![write(&a, "new a"), delete(&gone), write(&new, "fresh"), write(&last, "late")])
                .unwrap();
        // Something takes the last staged file away before the commit reaches it.
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.starts_with(".last.txt.tinycode-") {
                std::fs::remove_file(dir.path().join(name)).unwrap();
            }
        }
        let failure = staged.commit().unwrap_err();
        assert_eq!(failure.path, last);
        assert_eq!(failure.error.kind(), io::ErrorKind::NotFound);
        assert!(failure.unrestored.is_empty());
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        assert_eq!(
            std::fs::metadata(&a).unwrap().permissions().mode() & 0o777,
            0o750,
            "the same file came back"
        );
        assert_eq!(std::fs::read_to_string(&gone).unwrap(), "bye");
        assert_eq!(entries(dir.path()), vec!["a.txt", "gone.txt"]);
    }

    #[test]
    fn a_transaction_dropped_before_it_finishes_is_rolled_back() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        std::fs::write(&a, "old a").unwrap();
        drop(apply(vec![write(&a, "new a")]).unwrap());
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        assert_eq!(entries(dir.path()), vec!["a.txt"]);
    }
}
