//! Session rows: create, read, update (title, mode, model, reasoning level, last activity), list newest first
//! with a `cwd` filter and an opaque cursor, delete.
//!
//! Owns the `sessions` table.

use base64::Engine;
use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError};

/// One stored session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub cwd: String,
    pub title: Option<String>,
    pub mode: String,
    pub model: Option<String>,
    pub thought_level: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A subagent's session: its row, its parent, how deep it is nested and which agent runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildRow {
    pub session: SessionRow,
    pub parent_id: String,
    pub depth: u32,
    pub agent: String,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub sessions: Vec<SessionRow>,
    pub next: Option<String>,
}

/// A listing cursor that cannot be understood. Handled by the ACP layer as invalid params.
pub const BAD_CURSOR: &str = "invalid cursor";

fn encode_cursor(updated_at: i64, id: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{updated_at}|{id}"))
}

fn decode_cursor(cursor: &str) -> Option<(i64, String)> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (at, id) = text.split_once('|')?;
    Some((at.parse().ok()?, id.to_string()))
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: r.get(0)?,
        cwd: r.get(1)?,
        title: r.get(2)?,
        mode: r.get(3)?,
        model: r.get(4)?,
        thought_level: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
    })
}

const COLUMNS: &str = "id, cwd, title, mode, model, thought_level, created_at, updated_at";

/// Insert a session's row.
pub(super) fn insert(c: &mut rusqlite::Connection, session: &SessionRow) -> rusqlite::Result<()> {
    c.execute(
        "INSERT INTO sessions (id, cwd, title, mode, model, thought_level, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![session.id, session.cwd, session.title, session.mode, session.model, session.thought_level, session.created_at, session.updated_at],
    )
    .map(|_| ())
}

impl Store {
    pub async fn create_session(&self, session: SessionRow) -> Result<(), StoreError> {
        self.call(move |c| insert(c, &session)).await
    }

    /// Queue a new session's row (written before anything queued after it; held, and still found by
    /// [`Store::session`], while the database refuses writes).
    pub fn create_session_later(&self, session: SessionRow) {
        self.write_later("the new session", super::Kind::Session(session));
    }

    /// Queue the row of a subagent's session (written before anything it journals later).
    pub fn create_child_later(&self, child: ChildRow) {
        self.submit("the subagent's session", move |c| {
            let s = &child.session;
            c.execute(
                "INSERT INTO sessions (id, cwd, title, mode, model, thought_level, created_at, updated_at, parent_id, depth, agent) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![s.id, s.cwd, s.title, s.mode, s.model, s.thought_level, s.created_at, s.updated_at, child.parent_id, child.depth, child.agent],
            )
            .map(|_| ())
        });
    }

    /// The subagent sessions started by `parent`, oldest first.
    pub async fn children(&self, parent: &str) -> Result<Vec<ChildRow>, StoreError> {
        let parent = parent.to_string();
        self.call(move |c| {
            let sql = format!(
                "SELECT {COLUMNS}, parent_id, depth, agent FROM sessions WHERE parent_id = ?1 ORDER BY created_at, id"
            );
            let mut statement = c.prepare_cached(&sql)?;
            let rows = statement.query_map([parent], |r| {
                Ok(ChildRow {
                    session: row(r)?,
                    parent_id: r.get(8)?,
                    depth: r.get::<_, i64>(9)?.max(0) as u32,
                    agent: r.get::<_, Option<String>>(10)?.unwrap_or_default(),
                })
            })?;
            rows.collect()
        })
        .await
    }

    /// A stored session, or one whose row is still held in memory.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        let id = id.to_string();
        self.seeing_held(move |c, held| {
            let stored = c
                .query_row(&format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"), [&id], row)
                .optional()?;
            Ok(stored.or_else(|| held.session(&id)))
        })
        .await
    }

    /// Save the session's settings and bump its activity time.
    pub async fn update_session(&self, session: SessionRow) -> Result<(), StoreError> {
        self.call(move |c| {
            c.execute(
                "UPDATE sessions SET title = ?2, mode = ?3, model = ?4, thought_level = ?5, updated_at = ?6 WHERE id = ?1",
                params![session.id, session.title, session.mode, session.model, session.thought_level, session.updated_at],
            )
            .map(|_| ())
        })
        .await
    }

    /// Sessions newest first, `limit` at a time, optionally only those rooted at `cwd`.
    pub async fn list_sessions(
        &self,
        cwd: Option<String>,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let after = match cursor.as_deref() {
            Some(c) => Some(decode_cursor(c).ok_or_else(|| StoreError::Sql(BAD_CURSOR.into()))?),
            None => None,
        };
        self.call(move |c| {
            let (at, id) = after.unwrap_or((i64::MAX, String::new()));
            let bound = after_bound(&at, &id);
            let sql = format!(
                "SELECT {COLUMNS} FROM sessions WHERE title IS NOT NULL AND parent_id IS NULL AND (?1 IS NULL OR cwd = ?1) AND (updated_at < ?2 OR (updated_at = ?2 AND id < ?3)) ORDER BY updated_at DESC, id DESC LIMIT ?4"
            );
            let mut statement = c.prepare_cached(&sql)?;
            let mut sessions: Vec<SessionRow> =
                statement.query_map(params![cwd, bound.0, bound.1, limit as i64 + 1], row)?.collect::<Result<_, _>>()?;
            let next = if sessions.len() > limit {
                sessions.truncate(limit);
                sessions.last().map(|s| encode_cursor(s.updated_at, &s.id))
            } else {
                None
            };
            Ok(Page { sessions, next })
        })
        .await
    }

    /// Delete a session and everything that belongs to it. Returns whether it existed.
    pub async fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.call(move |c| c.execute("DELETE FROM sessions WHERE id = ?1", [id]).map(|n| n > 0)).await
    }
}

/// The first page starts above every real row; later pages start after the cursor's row.
fn after_bound(at: &i64, id: &str) -> (i64, String) {
    if *at == i64::MAX { (i64::MAX, "\u{10ffff}".to_string()) } else { (*at, id.to_string()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, cwd: &str, updated_at: i64) -> SessionRow {
        SessionRow {
            id: id.into(),
            cwd: cwd.into(),
            title: Some(format!("title {id}")),
            mode: "build".into(),
            model: Some("m".into()),
            thought_level: None,
            created_at: 1,
            updated_at,
        }
    }

    #[tokio::test]
    async fn listing_pages_newest_first_with_a_cwd_filter_and_opaque_cursors_skipping_untitled_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        for i in 0..7 {
            let cwd = if i % 2 == 0 { "/a" } else { "/b" };
            store.create_session(session(&format!("s{i}"), cwd, 100 + i / 2)).await.unwrap();
        }
        // Never prompted: not worth a line in the editor's history.
        store.create_session(SessionRow { title: None, ..session("empty", "/a", 500) }).await.unwrap();
        let first = store.list_sessions(None, None, 3).await.unwrap();
        let ids: Vec<&str> = first.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, vec!["s6", "s5", "s4"]);
        let second = store.list_sessions(None, first.next.clone(), 3).await.unwrap();
        let ids: Vec<&str> = second.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, vec!["s3", "s2", "s1"]);
        let third = store.list_sessions(None, second.next.clone(), 3).await.unwrap();
        assert_eq!(third.sessions.len(), 1);
        assert_eq!(third.next, None);
        let only_a = store.list_sessions(Some("/a".into()), None, 10).await.unwrap();
        let ids: Vec<&str> = only_a.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, vec!["s6", "s4", "s2", "s0"]);
        assert_eq!(
            store.list_sessions(None, Some("%%%".into()), 3).await.unwrap_err(),
            StoreError::Sql(BAD_CURSOR.into())
        );
    }

    #[tokio::test]
    async fn subagent_sessions_are_listed_under_their_parent_never_in_the_history_and_go_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        store.create_session(session("p", "/a", 10)).await.unwrap();
        let child = ChildRow {
            session: session("c", "/a", 20),
            parent_id: "p".into(),
            depth: 1,
            agent: "explore".into(),
        };
        store.create_child_later(child.clone());
        let listed = store.list_sessions(None, None, 10).await.unwrap();
        assert_eq!(listed.sessions.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), vec!["p"]);
        assert_eq!(store.children("p").await.unwrap(), vec![child]);
        assert!(store.delete_session("p").await.unwrap());
        assert_eq!(store.session("c").await.unwrap(), None);
    }

    #[tokio::test]
    async fn updates_and_deletes_are_visible_to_the_next_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        store.create_session(session("x", "/p", 1)).await.unwrap();
        let mut changed = session("x", "/p", 5);
        changed.mode = "plan".into();
        changed.title = Some("renamed".into());
        store.update_session(changed.clone()).await.unwrap();
        assert_eq!(store.session("x").await.unwrap(), Some(changed));
        assert!(store.delete_session("x").await.unwrap());
        assert!(!store.delete_session("x").await.unwrap());
        assert_eq!(store.session("x").await.unwrap(), None);
    }
}
