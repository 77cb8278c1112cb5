//! What tinycode keeps for itself is the user's alone: the data folder holds every prompt, every file the agent
//! read, checkpoint copies, saved tool output and command logs. Folders made there are 0700 and files 0600, and
//! when the store opens, a data folder an older version left open (and what tinycode keeps right inside it) is
//! closed to others. A shared folder (world-writable or sticky, such as `/tmp`) named as the data folder is left
//! as it is, and so is anything in the data folder that tinycode did not put there.
//!
//! Owns the modes of tinycode's own files. Must not touch project files: their modes are the user's.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// A folder of tinycode's own.
pub const DIR_MODE: u32 = 0o700;
/// A file of tinycode's own.
pub const FILE_MODE: u32 = 0o600;

/// What tinycode keeps right inside its data folder (the data folder may be one the user has other things in).
const KEPT: [&str; 7] = [
    "tinycode.db",
    "tinycode.db-wal",
    "tinycode.db-shm",
    "tinycode.db-journal",
    "tool-output",
    "tasks",
    "worktrees",
];

/// Make `dir` (missing parents as the system makes them) with the last folder private; an existing one of the
/// user's is made private.
pub fn dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => tighten(dir),
        Err(e) => Err(e),
    }
}

/// Options that create a file as 0600 (an existing file keeps its mode: see [`tighten`]).
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// Write `bytes` to a new or truncated private file at `path`.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file: File = options().write(true).create(true).truncate(true).open(path)?;
    io::Write::write_all(&mut file, bytes)?;
    tighten(path)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Close `path` to others when it belongs to the user: a folder gets 0700, a file keeps only its owner's bits
/// (0600 for what tinycode makes). Symbolic links, what belongs to someone else and shared folders
/// (world-writable or sticky, such as `/tmp`) are left alone.
pub fn tighten(path: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    let want = match meta.file_type() {
        t if t.is_dir() && meta.mode() & 0o1002 == 0 => DIR_MODE,
        // Group and others lose their bits; the owner keeps theirs (a database the user made read-only stays so).
        t if t.is_file() => meta.mode() & 0o700,
        _ => return Ok(()),
    };
    if meta.uid() != euid() || meta.mode() & 0o777 == want {
        return Ok(());
    }
    std::fs::set_permissions(path, Permissions::from_mode(want))
}

/// Make the data folder private, with what lies right inside it (the database and its log, the folders of tool
/// output and tasks). Deeper files are out of everyone else's reach once their folders are closed.
pub fn secure_data_dir(data: &Path) -> io::Result<()> {
    dir(data)?;
    for name in KEPT {
        match tighten(&data.join(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                tracing::warn!(path = %data.join(name).display(), error = %e, "could not make a data file private");
            }
            _ => {}
        }
    }
    Ok(())
}

/// Create `path` empty and private if it does not exist yet (so SQLite, which gives its log files the
/// database's mode, makes those private too), else make it private.
pub fn touch(path: &Path) -> io::Result<()> {
    match options().write(true).create_new(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => tighten(path),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn folders_and_files_are_made_private_and_open_ones_are_closed() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("a/data");
        dir(&data).unwrap();
        assert_eq!(mode(&data), 0o700);
        write(&data.join("out.txt"), b"x").unwrap();
        assert_eq!(mode(&data.join("out.txt")), 0o600);
        std::fs::set_permissions(&data, Permissions::from_mode(0o755)).unwrap();
        std::fs::write(data.join("tinycode.db"), "x").unwrap();
        std::fs::set_permissions(data.join("tinycode.db"), Permissions::from_mode(0o644)).unwrap();
        std::fs::create_dir(data.join("tasks")).unwrap();
        std::fs::set_permissions(data.join("tasks"), Permissions::from_mode(0o755)).unwrap();
        std::fs::write(data.join("notes.txt"), "x").unwrap();
        std::fs::set_permissions(data.join("notes.txt"), Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", data.join("worktrees")).unwrap();
        secure_data_dir(&data).unwrap();
        assert_eq!(
            [
                mode(&data),
                mode(&data.join("tinycode.db")),
                mode(&data.join("tasks")),
                mode(&data.join("notes.txt"))
            ],
            [0o700, 0o600, 0o700, 0o644],
            "what tinycode did not put there is left alone"
        );
        assert_eq!(std::fs::read(data.join("tinycode.db")).unwrap(), b"x", "contents are left as they were");
        touch(&data.join("new.db")).unwrap();
        assert_eq!(mode(&data.join("new.db")), 0o600);
        let shared = root.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, Permissions::from_mode(0o1777)).unwrap();
        dir(&shared).unwrap();
        assert_eq!(
            std::fs::symlink_metadata(&shared).unwrap().mode() & 0o7777,
            0o1777,
            "a shared folder stays shared"
        );
    }
}
