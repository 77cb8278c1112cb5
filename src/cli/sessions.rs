//! `tinycode sessions`: the stored sessions, newest first, as an aligned table for people or one JSON object per
//! line for scripts. Reads the database directly; never creates one.
//!
//! Owns the listing's format. The SQL belongs to `store`.

use std::path::Path;

use serde_json::json;

use crate::store::sessions::SessionRow;
use crate::store::{Store, StoreError};

/// Open the database at `path` if it exists (`None` when nothing was ever stored there).
pub fn open_existing(path: &Path) -> Result<Option<Store>, StoreError> {
    if !path.exists() {
        return Ok(None);
    }
    Store::open(path).map(Some)
}

/// Up to `limit` sessions, newest first, of `cwd` (every project when `None`). Sessions never prompted are
/// left out, as in the editor's history.
pub async fn newest(store: &Store, cwd: Option<&Path>, limit: usize) -> Result<Vec<SessionRow>, StoreError> {
    let cwd = cwd.map(|c| c.display().to_string());
    Ok(store.list_sessions(cwd, None, limit).await?.sessions)
}

/// An aligned table: id, last update (UTC), the directory when `with_cwd`, and the title last.
pub fn table(rows: &[SessionRow], with_cwd: bool) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![r.id.clone(), crate::clock::iso8601(r.updated_at)];
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

/// One JSON object per line.
pub fn json_lines(rows: &[SessionRow]) -> String {
    rows.iter()
        .map(|r| {
            let object = json!({
                "id": r.id, "cwd": r.cwd, "title": r.title, "mode": r.mode, "model": r.model,
                "createdAt": crate::clock::iso8601(r.created_at),
                "updatedAt": crate::clock::iso8601(r.updated_at),
            });
            format!("{object}\n")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let rows = [row("sess_a", "/p", "Fix\tthe\nbug", 1_000), row("sess_long", "/project", "Add", 0)];
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
            json_lines(&[row("sess_a", "/p", "T", 1_000)]),
            "{\"id\":\"sess_a\",\"cwd\":\"/p\",\"title\":\"T\",\"mode\":\"build\",\"model\":\"m\",\"createdAt\":\"1970-01-01T00:00:00.000Z\",\"updatedAt\":\"1970-01-01T00:00:01.000Z\"}\n"
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
