//! `tinycode sessions`: the stored sessions, newest first, as an aligned table for people or one JSON object per
//! line for scripts; each session's subagents (and theirs) follow it, indented and marked `└` (in JSON: with
//! `parentId`, `depth` and `agent`). Reads the database directly; never creates one.
//!
//! Owns the listing's format. The SQL belongs to `store`.

use std::path::Path;

use serde_json::json;

use crate::store::sessions::SessionRow;
use crate::store::{Store, StoreError};

/// One line of the listing: a session, or a subagent's session under its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub row: SessionRow,
    /// The parent session, for a subagent's.
    pub parent_id: Option<String>,
    /// 0 for a session, 1 for its subagents, 2 for theirs.
    pub depth: u32,
    /// The agent a subagent's session runs.
    pub agent: Option<String>,
}

/// Open the database at `path` if it exists (`None` when nothing was ever stored there). A damaged one is an
/// error and stays where it is: only the agent moves it aside.
pub fn open_existing(path: &Path) -> Result<Option<Store>, StoreError> {
    if !path.exists() {
        return Ok(None);
    }
    let reading = crate::store::Tuning { sideline_damaged: false, ..crate::store::Tuning::default() };
    Store::open_with(path, reading).map(Some)
}

/// Up to `limit` sessions, newest first, of `cwd` (every project when `None`). Sessions never prompted are
/// left out, as in the editor's history.
pub async fn newest(store: &Store, cwd: Option<&Path>, limit: usize) -> Result<Vec<SessionRow>, StoreError> {
    let cwd = cwd.map(|c| c.display().to_string());
    Ok(store.list_sessions(cwd, None, limit).await?.sessions)
}

/// Each of `rows` followed by its subagents' sessions, depth first, oldest child first.
pub async fn with_children(store: &Store, rows: Vec<SessionRow>) -> Result<Vec<Listed>, StoreError> {
    let mut listed = Vec::new();
    for row in rows {
        let mut pending = vec![Listed { row, parent_id: None, depth: 0, agent: None }];
        while let Some(entry) = pending.pop() {
            let children = store.children(&entry.row.id).await?;
            listed.push(entry);
            // Reversed, so the oldest child is listed first.
            pending.extend(children.into_iter().rev().map(|c| Listed {
                row: c.session,
                parent_id: Some(c.parent_id),
                depth: c.depth.max(1),
                agent: Some(c.agent),
            }));
        }
    }
    Ok(listed)
}

/// The id cell: a subagent's session is indented under its parent and marked.
fn id_cell(entry: &Listed) -> String {
    match entry.depth {
        0 => entry.row.id.clone(),
        depth => format!("{}└ {}", "  ".repeat(depth as usize), entry.row.id),
    }
}

/// An aligned table: id, last update (UTC), the directory when `with_cwd`, and the title last.
pub fn table(rows: &[Listed], with_cwd: bool) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|entry| {
            let r = &entry.row;
            let mut cells = vec![id_cell(entry), crate::clock::iso8601(r.updated_at)];
            if with_cwd {
                cells.push(r.cwd.clone());
            }
            cells.push(r.title.clone().unwrap_or_default().replace(['\n', '\t'], " "));
            cells
        })
        .collect();
    let mut header = vec!["ID", "UPDATED"];
    if with_cwd {
        header.push("DIRECTORY");
    }
    header.push("TITLE");
    let widths: Vec<usize> = (0..header.len())
        .map(|i| cells.iter().map(|c| c[i].chars().count()).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let line = |cells: Vec<&str>| {
        let last = cells.len() - 1;
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| if i == last { c.to_string() } else { format!("{c:<width$}", width = widths[i]) })
            .collect();
        format!("{}\n", padded.join("  "))
    };
    let mut out = line(header);
    for row in &cells {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// One JSON object per line; a subagent's session also says its `parentId`, `depth` and `agent`.
pub fn json_lines(rows: &[Listed]) -> String {
    rows.iter()
        .map(|entry| {
            let r = &entry.row;
            let mut object = json!({
                "id": r.id, "cwd": r.cwd, "title": r.title, "mode": r.mode, "model": r.model,
                "createdAt": crate::clock::iso8601(r.created_at),
                "updatedAt": crate::clock::iso8601(r.updated_at),
            });
            if let Some(parent) = &entry.parent_id {
                object["parentId"] = json!(parent);
                object["depth"] = json!(entry.depth);
                object["agent"] = json!(entry.agent);
            }
            format!("{object}\n")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(row: SessionRow) -> Listed {
        Listed { row, parent_id: None, depth: 0, agent: None }
    }

    fn row(id: &str, cwd: &str, title: &str, updated_at: i64) -> SessionRow {
        SessionRow {
            id: id.into(),
            cwd: cwd.into(),
            title: Some(title.into()),
            mode: "build".into(),
            model: Some("m".into()),
            thought_level: None,
            created_at: 0,
            updated_at,
        }
    }

    #[test]
    fn the_table_aligns_columns_and_keeps_titles_on_one_line() {
        let rows =
            [top(row("sess_a", "/p", "Fix\tthe\nbug", 1_000)), top(row("sess_long", "/project", "Add", 0))];
        assert_eq!(
            table(&rows, false),
            "ID         UPDATED                   TITLE\n\
             sess_a     1970-01-01T00:00:01.000Z  Fix the bug\n\
             sess_long  1970-01-01T00:00:00.000Z  Add\n"
        );
        assert_eq!(
            table(&rows[..1], true),
            "ID      UPDATED                   DIRECTORY  TITLE\n\
             sess_a  1970-01-01T00:00:01.000Z  /p         Fix the bug\n"
        );
    }

    #[test]
    fn json_lines_carry_every_field_one_session_per_line() {
        assert_eq!(
            json_lines(&[top(row("sess_a", "/p", "T", 1_000))]),
            "{\"id\":\"sess_a\",\"cwd\":\"/p\",\"title\":\"T\",\"mode\":\"build\",\"model\":\"m\",\"createdAt\":\"1970-01-01T00:00:00.000Z\",\"updatedAt\":\"1970-01-01T00:00:01.000Z\"}\n"
        );
    }

    #[tokio::test]
    async fn subagent_sessions_follow_their_parent_indented_and_marked_and_say_their_parent_in_json() {
        use crate::store::sessions::ChildRow;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let child = |id: &str, parent: &str, depth: u32, at: i64| ChildRow {
            session: row(id, "/p", &format!("{id} (@explore subagent)"), at),
            parent_id: parent.into(),
            depth,
            agent: "explore".into(),
        };
        store.create_session(row("sess_a", "/p", "Parent", 1_000)).await.unwrap();
        store.create_session(row("sess_b", "/p", "Other", 500)).await.unwrap();
        store.create_child_later(child("sess_c2", "sess_a", 1, 30));
        store.create_child_later(child("sess_c1", "sess_a", 1, 20));
        store.create_child_later(child("sess_g", "sess_c1", 2, 25));
        let rows = with_children(&store, newest(&store, None, 10).await.unwrap()).await.unwrap();
        assert_eq!(
            table(&rows, false),
            "ID            UPDATED                   TITLE\n\
             sess_a        1970-01-01T00:00:01.000Z  Parent\n\
             \x20 └ sess_c1   1970-01-01T00:00:00.020Z  sess_c1 (@explore subagent)\n\
             \x20   └ sess_g  1970-01-01T00:00:00.025Z  sess_g (@explore subagent)\n\
             \x20 └ sess_c2   1970-01-01T00:00:00.030Z  sess_c2 (@explore subagent)\n\
             sess_b        1970-01-01T00:00:00.500Z  Other\n"
        );
        let json: Vec<serde_json::Value> =
            json_lines(&rows).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(json[0].get("parentId"), None);
        assert_eq!(
            (&json[2]["id"], &json[2]["parentId"], &json[2]["depth"], &json[2]["agent"]),
            (&json!("sess_g"), &json!("sess_c1"), &json!(2), &json!("explore"))
        );
    }

    #[tokio::test]
    async fn listing_a_directory_without_a_database_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tinycode.db");
        assert!(open_existing(&path).unwrap().is_none());
        assert!(!path.exists());
    }
}
