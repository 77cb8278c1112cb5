//! A damaged database file (not a database, malformed): recognised when it fails to open, and moved aside
//! unchanged (with its write-ahead log and index) under a name nothing else has, so a fresh database can take
//! its place and the user can recover the old one. Nothing here overwrites or deletes a byte of it.
//!
//! Owns the test for damage and the move. Opening belongs to `store`.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// Does this failure to open mean the file itself is damaged (rather than busy, unreadable or missing)?
pub fn is_damage(error: &rusqlite::Error) -> bool {
    matches!(error.sqlite_error_code(), Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt))
}

/// Fail with a damage error when the database at `path` cannot be whole: its schema does not read, or the file
/// is shorter than the pages its header says it holds (SQLite checks that as it reads the first page).
pub fn check_whole(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
}

/// Which file a path names now (device and inode), to move only the file that was judged damaged.
pub fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The name the damaged file moves to: `<stem>-damaged-<millis>[-n].db` beside it.
fn aside(path: &Path, at: i64, attempt: u32) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("tinycode");
    let suffix = if attempt == 0 { String::new() } else { format!("-{attempt}") };
    path.with_file_name(format!("{stem}-damaged-{at}{suffix}.db"))
}

/// `from` under the name `to`, never replacing a file already there: a second link, then the first removed.
fn move_without_replacing(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

/// `path` with `suffix` added to its file name (`-wal`, `-shm`).
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// Move the damaged database at `path` (and its `-wal` and `-shm` files) aside, if it is still the file
/// `judged`. Returns where it went (`None`: another agent moved it first).
pub fn sideline(path: &Path, judged: Option<(u64, u64)>) -> std::io::Result<Option<PathBuf>> {
    if judged.is_some() && identity(path) != judged {
        return Ok(None);
    }
    let at = crate::clock::now_millis();
    let mut attempt = 0;
    let to = loop {
        let to = aside(path, at, attempt);
        match move_without_replacing(path, &to) {
            Ok(()) => break to,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    // The log and its index belong to the damaged file: a fresh database must not read them back.
    for suffix in ["-wal", "-shm"] {
        let from = companion(path, suffix);
        if from.exists() {
            move_without_replacing(&from, &companion(&to, suffix))?;
        }
    }
    Ok(Some(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_file_moves_aside_with_its_log_and_nothing_already_there_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tinycode.db");
        std::fs::write(&path, b"garbage").unwrap();
        std::fs::write(companion(&path, "-wal"), b"log").unwrap();
        let judged = identity(&path);
        let moved = sideline(&path, judged).unwrap().unwrap();
        let name = moved.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with("tinycode-damaged-") && name.ends_with(".db"), "{name}");
        assert_eq!(std::fs::read(&moved).unwrap(), b"garbage");
        assert_eq!(std::fs::read(companion(&moved, "-wal")).unwrap(), b"log");
        assert!(!path.exists() && !companion(&path, "-wal").exists());

        // A file the first agent made meanwhile is not the one judged: left alone.
        std::fs::write(&path, b"fresh").unwrap();
        assert_eq!(sideline(&path, judged).unwrap(), None);
        assert_eq!(std::fs::read(&path).unwrap(), b"fresh");

        // A name already taken is never replaced.
        let taken = aside(&path, 5, 0);
        std::fs::write(&taken, b"older").unwrap();
        assert_eq!(
            move_without_replacing(&path, &taken).unwrap_err().kind(),
            std::io::ErrorKind::AlreadyExists
        );
        assert_eq!(std::fs::read(&taken).unwrap(), b"older");
    }
}
