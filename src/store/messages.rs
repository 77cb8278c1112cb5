//! Messages and their parts, appended one completed event at a time (a user prompt, a model response, a tool
//! call starting, a tool result), each in its own transaction, so a crash loses at most the event in flight.
//! Also todos and token usage.
//!
//! Owns the `messages`, `parts`, `todos` and `usage` tables. Parts are JSON the caller defines.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{Store, StoreError};

/// A stored message: its role and its parts, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub role: String,
    pub parts: Vec<(String, Value)>,
    pub created_at: i64,
}

fn write_todos(
    c: &mut rusqlite::Connection,
    session: &str,
    items: &Value,
    at: i64,
) -> Result<(), rusqlite::Error> {
    c.execute(
        "INSERT INTO todos (session_id, items, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT (session_id) DO UPDATE SET items = excluded.items, updated_at = excluded.updated_at",
        params![session, items.to_string(), at],
    )
    .map(|_| ())
}

/// Insert one message with its parts in a transaction, and bump the session's activity time.
pub(super) fn insert(
    c: &mut rusqlite::Connection,
    session: &str,
    message: &StoredMessage,
) -> rusqlite::Result<()> {
    let StoredMessage { role, parts, created_at: at } = message;
    let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let seq: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE session_id = ?1",
        [&session],
        |r| r.get(0),
    )?;
    tx.execute(
        "INSERT INTO messages (session_id, seq, role, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![session, seq, role, at],
    )?;
    let message = tx.last_insert_rowid();
    for (i, (kind, data)) in parts.iter().enumerate() {
        tx.execute(
            "INSERT INTO parts (message_id, seq, kind, data) VALUES (?1, ?2, ?3, ?4)",
            params![message, i as i64, kind, data.to_string()],
        )?;
    }
    tx.execute("UPDATE sessions SET updated_at = MAX(updated_at, ?2) WHERE id = ?1", params![session, at])?;
    tx.commit()
}

impl Store {
    /// Append a message (with its parts) to a session and bump the session's activity time.
    pub async fn append(
        &self,
        session: &str,
        role: &str,
        parts: Vec<(String, Value)>,
        at: i64,
    ) -> Result<(), StoreError> {
        let (session, message) =
            (session.to_string(), StoredMessage { role: role.to_string(), parts, created_at: at });
        self.call(move |c| insert(c, &session, &message)).await
    }

    /// [`Store::append`] without waiting: queued now, written in order (held, and still read back by
    /// [`Store::messages`], while the database refuses writes).
    pub fn append_later(&self, session: &str, role: &str, parts: Vec<(String, Value)>, at: i64) {
        let message = StoredMessage { role: role.to_string(), parts, created_at: at };
        self.write_later("the conversation", super::Kind::Message { session: session.to_string(), message });
    }

    /// Every message of a session, oldest first (those still held in memory last).
    pub async fn messages(&self, session: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let session = session.to_string();
        self.seeing_held(move |c, held| {
            let mut statement = c.prepare_cached(
                "SELECT m.id, m.role, m.created_at, p.kind, p.data FROM messages m LEFT JOIN parts p ON p.message_id = m.id WHERE m.session_id = ?1 ORDER BY m.seq, p.seq",
            )?;
            let mut out: Vec<StoredMessage> = Vec::new();
            let mut last: Option<i64> = None;
            let mut rows = statement.query([&session])?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                if last != Some(id) {
                    out.push(StoredMessage { role: r.get(1)?, parts: Vec::new(), created_at: r.get(2)? });
                    last = Some(id);
                }
                let kind: Option<String> = r.get(3)?;
                let data: Option<String> = r.get(4)?;
                if let (Some(kind), Some(data), Some(message)) = (kind, data, out.last_mut()) {
                    message.parts.push((kind, serde_json::from_str(&data).unwrap_or(Value::Null)));
                }
            }
            out.extend(held.messages(&session).cloned());
            Ok(out)
        })
        .await
    }

    pub async fn set_todos(&self, session: &str, items: Value, at: i64) -> Result<(), StoreError> {
        let session = session.to_string();
        self.call(move |c| write_todos(c, &session, &items, at)).await
    }

    /// Replace a session's to-do list without waiting (in order with the other writes).
    pub fn set_todos_later(&self, session: &str, items: Value, at: i64) {
        let session = session.to_string();
        self.submit("the to-do list", move |c| write_todos(c, &session, &items, at));
    }

    pub async fn todos(&self, session: &str) -> Result<Option<Value>, StoreError> {
        let session = session.to_string();
        self.call(move |c| {
            let text: Option<String> = c
                .query_row("SELECT items FROM todos WHERE session_id = ?1", [session], |r| r.get(0))
                .optional()?;
            Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
        })
        .await
    }

    /// The context used by the last response that reported usage (its input plus output tokens).
    pub async fn last_usage(&self, session: &str) -> Result<Option<u64>, StoreError> {
        let session = session.to_string();
        self.call(move |c| {
            c.query_row(
                "SELECT input_tokens + output_tokens FROM usage WHERE session_id = ?1 AND via IS NULL ORDER BY id DESC LIMIT 1",
                [session],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|used| used.map(|n| n.max(0) as u64))
        })
        .await
    }

    /// The tokens (input plus output) the subagents of a session spent, its subagents' subagents included.
    pub async fn subagent_tokens(&self, session: &str) -> Result<u64, StoreError> {
        let session = session.to_string();
        self.call(move |c| {
            c.query_row(
                "SELECT COALESCE(SUM(input_tokens + output_tokens), 0) FROM usage WHERE session_id = ?1 AND via IS NOT NULL",
                [session],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
        })
        .await
    }

    /// Record one model response's token usage.
    pub async fn record_usage(
        &self,
        session: &str,
        model: &str,
        tokens: [i64; 4],
        at: i64,
    ) -> Result<(), StoreError> {
        let (session, model) = (session.to_string(), model.to_string());
        self.call(move |c| {
            c.execute(
                "INSERT INTO usage (session_id, model, input_tokens, output_tokens, cached_tokens, reasoning_tokens, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![session, model, tokens[0], tokens[1], tokens[2], tokens[3], at],
            )
            .map(|_| ())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sessions::SessionRow;
    use serde_json::json;

    async fn store_with_session(dir: &std::path::Path) -> Store {
        let store = Store::open(&dir.join("db")).unwrap();
        let row = SessionRow {
            id: "s".into(),
            cwd: "/p".into(),
            title: None,
            mode: "build".into(),
            model: None,
            thought_level: None,
            created_at: 1,
            updated_at: 1,
        };
        store.create_session(row).await.unwrap();
        store
    }

    #[tokio::test]
    async fn messages_come_back_in_order_with_their_parts_and_bump_the_session() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_session(dir.path()).await;
        store.append("s", "user", vec![("text".into(), json!({"text": "hi"}))], 10).await.unwrap();
        store
            .append(
                "s",
                "assistant",
                vec![("text".into(), json!({"text": "a"})), ("tool_calls".into(), json!([1]))],
                20,
            )
            .await
            .unwrap();
        store.append("s", "empty", vec![], 30).await.unwrap();
        let messages = store.messages("s").await.unwrap();
        assert_eq!(
            messages,
            vec![
                StoredMessage {
                    role: "user".into(),
                    parts: vec![("text".into(), json!({"text": "hi"}))],
                    created_at: 10
                },
                StoredMessage {
                    role: "assistant".into(),
                    parts: vec![("text".into(), json!({"text": "a"})), ("tool_calls".into(), json!([1]))],
                    created_at: 20
                },
                StoredMessage { role: "empty".into(), parts: vec![], created_at: 30 },
            ]
        );
        assert_eq!(store.session("s").await.unwrap().unwrap().updated_at, 30);
    }

    #[tokio::test]
    async fn todos_are_replaced_whole_and_go_with_their_session() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_session(dir.path()).await;
        store.set_todos("s", json!([{"content": "a"}]), 1).await.unwrap();
        store.set_todos("s", json!([{"content": "b"}]), 2).await.unwrap();
        assert_eq!(store.todos("s").await.unwrap(), Some(json!([{"content": "b"}])));
        store.record_usage("s", "m", [10, 2, 0, 0], 3).await.unwrap();
        store.delete_session("s").await.unwrap();
        assert_eq!(store.todos("s").await.unwrap(), None);
        assert!(store.messages("s").await.unwrap().is_empty());
    }
}
