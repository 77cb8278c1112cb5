//! Checkpoints: per turn that changed files, the content each file had before the turn (`NULL`: it did not
//! exist) and the fingerprint it had after, what the record could not cover, and when the user undid it. Each
//! session keeps its newest [`KEPT_CHECKPOINTS`], numbered from 1 for good (pruning never renumbers). They go
//! with their session (`ON DELETE CASCADE`). Also the worktree a session works in.
//!
//! Owns the `checkpoints` and `checkpoint_files` tables and `sessions.worktree`.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError};

/// Checkpoints a session keeps; older ones are deleted as new ones come.
pub const KEPT_CHECKPOINTS: i64 = 100;

/// One file of a checkpoint, as saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedFile {
    pub path: String,
    /// The content before the turn; `None` when the file did not exist.
    pub before: Option<Vec<u8>>,
    /// The SHA-256 (hex) after the turn; `None` when the turn deleted it.
    pub after: Option<String>,
}

/// A checkpoint as listed: its files' paths and fingerprints, not their content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRow {
    pub id: i64,
    /// Its number in the session, from 1.
    pub number: i64,
    pub prompt: String,
    /// What the record could not cover.
    pub uncovered: Vec<String>,
    pub created_at: i64,
    pub undone_at: Option<i64>,
    /// `(path, after)` of each file.
    pub files: Vec<(String, Option<String>)>,
}

impl Store {
    /// Save one turn's checkpoint; returns its id.
    pub async fn add_checkpoint(
        &self,
        session: &str,
        prompt: &str,
        uncovered: &[String],
        files: Vec<SavedFile>,
        at: i64,
    ) -> Result<i64, StoreError> {
        let (session, prompt) = (session.to_string(), prompt.to_string());
        let uncovered = serde_json::to_string(uncovered).unwrap_or_else(|_| "[]".into());
        self.call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT INTO checkpoints (session_id, number, prompt, uncovered, created_at) VALUES (?1, (SELECT COALESCE(MAX(number), 0) + 1 FROM checkpoints WHERE session_id = ?1), ?2, ?3, ?4)",
                params![session, prompt, uncovered, at],
            )?;
            let id = tx.last_insert_rowid();
            tx.execute(
                "DELETE FROM checkpoints WHERE session_id = ?1 AND id NOT IN (SELECT id FROM checkpoints WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2)",
                params![session, KEPT_CHECKPOINTS],
            )?;
            for file in files {
                tx.execute(
                    "INSERT INTO checkpoint_files (checkpoint_id, path, before, after) VALUES (?1, ?2, ?3, ?4)",
                    params![id, file.path, file.before, file.after],
                )?;
            }
            tx.commit()?;
            Ok(id)
        })
        .await
    }

    /// A session's checkpoints, oldest first.
    pub async fn checkpoints(&self, session: &str) -> Result<Vec<CheckpointRow>, StoreError> {
        let session = session.to_string();
        self.call(move |c| {
            let mut statement = c.prepare_cached(
                "SELECT id, number, prompt, uncovered, created_at, undone_at FROM checkpoints WHERE session_id = ?1 ORDER BY id",
            )?;
            let mut rows: Vec<CheckpointRow> = statement
                .query_map([&session], |r| {
                    let uncovered: String = r.get(3)?;
                    Ok(CheckpointRow {
                        id: r.get(0)?,
                        number: r.get(1)?,
                        prompt: r.get(2)?,
                        uncovered: serde_json::from_str(&uncovered).unwrap_or_default(),
                        created_at: r.get(4)?,
                        undone_at: r.get(5)?,
                        files: Vec::new(),
                    })
                })?
                .collect::<Result<_, _>>()?;
            let mut files = c.prepare_cached(
                "SELECT path, after FROM checkpoint_files WHERE checkpoint_id = ?1 ORDER BY path",
            )?;
            for row in &mut rows {
                row.files = files.query_map([row.id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
            }
            Ok(rows)
        })
        .await
    }

    /// The saved files of one checkpoint, with their earlier content.
    pub async fn checkpoint_files(&self, checkpoint: i64) -> Result<Vec<SavedFile>, StoreError> {
        self.call(move |c| {
            let mut statement = c.prepare_cached(
                "SELECT path, before, after FROM checkpoint_files WHERE checkpoint_id = ?1 ORDER BY path",
            )?;
            statement
                .query_map([checkpoint], |r| {
                    Ok(SavedFile { path: r.get(0)?, before: r.get(1)?, after: r.get(2)? })
                })?
                .collect()
        })
        .await
    }

    /// Mark checkpoints as undone.
    pub async fn undo_checkpoints(&self, ids: Vec<i64>, at: i64) -> Result<(), StoreError> {
        self.call(move |c| {
            let tx = c.transaction()?;
            for id in ids {
                tx.execute("UPDATE checkpoints SET undone_at = ?2 WHERE id = ?1", params![id, at])?;
            }
            tx.commit()
        })
        .await
    }

    /// Save the worktree a session works in (JSON), or that it works in its own directory.
    pub fn set_worktree_later(&self, session: &str, worktree: Option<String>) {
        let session = session.to_string();
        self.submit("the session's worktree", move |c| {
            c.execute("UPDATE sessions SET worktree = ?2 WHERE id = ?1", params![session, worktree])
                .map(|_| ())
        });
    }

    /// The worktree a stored session works in (JSON), if any.
    pub async fn worktree(&self, session: &str) -> Result<Option<String>, StoreError> {
        let session = session.to_string();
        self.call(move |c| {
            c.query_row("SELECT worktree FROM sessions WHERE id = ?1", [session], |r| r.get(0))
                .optional()
                .map(Option::flatten)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sessions::SessionRow;

    #[tokio::test]
    async fn checkpoints_keep_their_files_are_numbered_for_good_and_go_with_their_session() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let row = SessionRow {
            id: "s1".into(),
            cwd: "/w".into(),
            title: None,
            mode: "build".into(),
            model: None,
            thought_level: None,
            created_at: 1,
            updated_at: 1,
        };
        store.create_session(row).await.unwrap();
        let files = vec![
            SavedFile { path: "/w/a".into(), before: Some(b"old".to_vec()), after: Some("h1".into()) },
            SavedFile { path: "/w/b".into(), before: None, after: None },
            SavedFile { path: "/w/empty".into(), before: Some(Vec::new()), after: Some("h2".into()) },
        ];
        let id =
            store.add_checkpoint("s1", "fix it", &["x (too big)".into()], files.clone(), 5).await.unwrap();
        assert_eq!(store.checkpoint_files(id).await.unwrap(), files);
        store.undo_checkpoints(vec![id], 9).await.unwrap();
        let listed = store.checkpoints("s1").await.unwrap();
        assert_eq!(
            listed,
            vec![CheckpointRow {
                id,
                number: 1,
                prompt: "fix it".into(),
                uncovered: vec!["x (too big)".into()],
                created_at: 5,
                undone_at: Some(9),
                files: vec![
                    ("/w/a".into(), Some("h1".into())),
                    ("/w/b".into(), None),
                    ("/w/empty".into(), Some("h2".into()))
                ],
            }]
        );
        for n in 0..KEPT_CHECKPOINTS {
            store.add_checkpoint("s1", &format!("more {n}"), &[], vec![], 10 + n).await.unwrap();
        }
        let kept = store.checkpoints("s1").await.unwrap();
        assert_eq!(kept.len() as i64, KEPT_CHECKPOINTS, "the oldest one went");
        assert_eq!((kept[0].number, kept[0].prompt.as_str()), (2, "more 0"), "numbers stay");
        assert_eq!(store.checkpoint_files(id).await.unwrap(), vec![]);
        store.set_worktree_later("s1", Some("{}".into()));
        assert_eq!(store.worktree("s1").await.unwrap(), Some("{}".into()));
        assert!(store.delete_session("s1").await.unwrap());
        assert_eq!(store.checkpoints("s1").await.unwrap(), vec![]);
    }
}
