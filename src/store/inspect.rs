//! What `tinycode doctor` says about the session database, found without changing it: whether it exists, reads
//! whole (`PRAGMA quick_check`), takes writes (a write transaction begun and rolled back), or is locked by
//! another process; and the damaged files moved aside beside it. Writes held in memory are known only to the
//! agent that holds them (it tells its editor).
//!
//! Owns the inspection. Never creates, moves or writes the database.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

/// The database's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// No session was stored yet.
    Missing,
    Ok,
    /// It does not read whole (why).
    Damaged(String),
    /// It reads, but refuses writes (why).
    ReadOnly(String),
    /// Another process holds its write lock.
    Locked,
    /// It could not be opened (why).
    Unreadable(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    pub path: PathBuf,
    pub state: State,
    /// Damaged databases moved aside earlier, oldest first.
    pub sidelined: Vec<PathBuf>,
}

/// Look at the database at `path`, waiting at most `busy` for another process's lock.
pub fn inspect(path: &Path, busy: Duration) -> Inspection {
    let state = if path.exists() { state(path, busy) } else { State::Missing };
    Inspection { path: path.to_path_buf(), state, sidelined: sidelined(path) }
}

fn state(path: &Path, busy: Duration) -> State {
    let conn = match Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE) {
        Ok(conn) => conn,
        Err(e) => return classify(e),
    };
    let _ = conn.busy_timeout(busy);
    let checked: Result<String, rusqlite::Error> = conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0));
    match checked {
        Ok(result) if result == "ok" => {}
        Ok(result) => return State::Damaged(result),
        Err(e) => return classify(e),
    }
    match conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK") {
        Ok(()) => State::Ok,
        Err(e) => classify(e),
    }
}

fn classify(error: rusqlite::Error) -> State {
    match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => State::Damaged(error.to_string()),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => State::Locked,
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => State::ReadOnly(error.to_string()),
        _ => State::Unreadable(error.to_string()),
    }
}

/// The `<stem>-damaged-*.db` files beside `path`.
fn sidelined(path: &Path) -> Vec<PathBuf> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("tinycode");
    let prefix = format!("{stem}-damaged-");
    let Some(Ok(entries)) = path.parent().map(std::fs::read_dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".db"))
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Fault, Store, Tuning};

    #[tokio::test]
    async fn the_inspection_tells_missing_whole_locked_and_damaged_apart_and_lists_what_was_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tinycode.db");
        let short = Duration::from_millis(20);
        assert_eq!(inspect(&path, short).state, State::Missing);
        assert!(!path.exists(), "never created");

        let store =
            Store::open_with(&path, Tuning { fault: Some(Fault::default()), ..Tuning::default() }).unwrap();
        store.flush().await.unwrap();
        assert_eq!(
            inspect(&path, short),
            Inspection { path: path.clone(), state: State::Ok, sidelined: vec![] }
        );

        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
        assert_eq!(inspect(&path, short).state, State::Locked);
        holder.execute_batch("ROLLBACK").unwrap();
        drop((holder, store));

        let damaged = dir.path().join("other.db");
        let garbage = vec![7u8; 4096];
        std::fs::write(&damaged, &garbage).unwrap();
        assert_eq!(inspect(&damaged, short).state, State::Damaged("file is not a database".into()));
        assert_eq!(std::fs::read(&damaged).unwrap(), garbage, "looked at, not changed");
        let moved = Store::open(&damaged).unwrap().health().sidelined.unwrap().moved_to;
        assert_eq!(
            inspect(&damaged, short),
            Inspection { path: damaged, state: State::Ok, sidelined: vec![moved] }
        );
    }
}
