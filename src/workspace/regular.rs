//! Reading files without surprises: only regular files are opened, the type is checked before the open (so a
//! FIFO or device is never opened at all) and again on the open descriptor (so a file swapped in between is
//! caught), the open never blocks (`O_NONBLOCK`), and every read stops at a byte cap whatever size the file
//! system reports (procfs and sysfs report 0 for files that never end).
//!
//! Owns opening and reading files for the tools, grep and prompt mentions. Blocking: call it from a blocking
//! thread. Must not decide what a caller does with a refusal.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Directories of virtual file systems that searches never enter: their files are endless, blocking or
/// describe the machine rather than the project.
pub const VIRTUAL_DIRS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Whether `path` (absolute, resolved) is one of [`VIRTUAL_DIRS`] or inside one.
pub fn is_virtual(path: &Path) -> bool {
    VIRTUAL_DIRS.iter().any(|dir| path.starts_with(dir))
}

/// Why a file could not be read. Handled by the caller, which turns it into a message for the model.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("not found")]
    NotFound,
    /// The path is something other than a regular file; the text says what (`a FIFO`, `a directory`, ...).
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("{0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for OpenError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound { OpenError::NotFound } else { OpenError::Io(e) }
    }
}

/// What kind of file `meta` describes, as a phrase (`a FIFO`), or `None` for a regular file.
pub fn irregular_kind(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    Some(if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    })
}

/// The metadata of `path` (links followed) if it is a regular file. Opens nothing.
pub fn check(path: &Path) -> Result<Metadata, OpenError> {
    let meta = std::fs::metadata(path)?;
    match irregular_kind(&meta) {
        None => Ok(meta),
        Some(kind) => Err(OpenError::NotRegular(kind)),
    }
}

/// Open `path` for reading if it is a regular file, never blocking, and return it with its metadata (taken
/// from the open descriptor).
pub fn open(path: &Path) -> Result<(File, Metadata), OpenError> {
    check(path)?;
    open_with(path, libc::O_NONBLOCK)
}

/// Open `path` for reading with `flags` and check from the descriptor that it is a regular file.
fn open_with(path: &Path, flags: i32) -> Result<(File, Metadata), OpenError> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path)?;
    let meta = file.metadata()?;
    match irregular_kind(&meta) {
        None => Ok((file, meta)),
        Some(kind) => Err(OpenError::NotRegular(kind)),
    }
}

/// Open a file that a directory walk listed as regular, without checking it by path first: a FIFO put in its
/// place since cannot block a non-blocking open, a link put in its place is not followed, and what was opened
/// is checked again from its descriptor. (The check by path costs a second lookup of every file a search reads.)
pub fn open_listed(path: &Path) -> Result<(File, Metadata), OpenError> {
    open_with(path, libc::O_NONBLOCK | libc::O_NOFOLLOW)
}

/// The first bytes of a file, at most the cap.
#[derive(Debug)]
pub struct Capped {
    pub bytes: Vec<u8>,
    /// The file ended within the cap (nothing was left out).
    pub complete: bool,
    pub meta: Metadata,
}

/// Bytes asked of the kernel per read. A multiple of 8: some procfs files (`pagemap`) refuse other sizes.
const CHUNK: usize = 64 * 1024;
/// The smallest buffer a read uses (files whose size is unknown or tiny).
const MIN_CHUNK: usize = 4 * 1024;
/// Bytes asked for after the cap, to learn whether the file goes on.
const PROBE: usize = 8;

/// Read at most `cap` bytes of the regular file `path`. The size the file system reports is a hint for the
/// buffer only: procfs reports 0 for files that never end.
pub fn read(path: &Path, cap: u64) -> Result<Capped, OpenError> {
    read_open(open(path)?, cap)
}

/// [`read`] for a file a walk listed as regular (see [`open_listed`]).
pub fn read_listed(path: &Path, cap: u64) -> Result<Capped, OpenError> {
    read_open(open_listed(path)?, cap)
}

fn read_open((mut file, meta): (File, Metadata), cap: u64) -> Result<Capped, OpenError> {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let hint = usize::try_from(meta.len()).unwrap_or(0).min(cap);
    if hint > 0 && hint < cap {
        // A file of known size under the cap: read straight into a buffer of that size (no chunk copied twice),
        // to the size it had when opened (a file that grows meanwhile is read as it was).
        let mut bytes = Vec::with_capacity(hint);
        (&mut file).take(meta.len()).read_to_end(&mut bytes)?;
        return Ok(Capped { bytes, complete: true, meta });
    }
    let mut bytes = Vec::with_capacity(hint);
    // Sized by the hint (a small file costs a small buffer), a multiple of 8 and at least a page.
    let mut chunk = vec![0u8; hint.saturating_add(PROBE).next_multiple_of(8).clamp(MIN_CHUNK, CHUNK)];
    let complete = loop {
        let want = if bytes.len() >= cap { PROBE } else { chunk.len().min(cap - bytes.len()) };
        let n = match file.read(&mut chunk[..want]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            break true;
        }
        if bytes.len() >= cap {
            break false;
        }
        bytes.extend_from_slice(&chunk[..n]);
    };
    Ok(Capped { bytes, complete, meta })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("pipe");
        let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        path
    }

    #[test]
    fn a_listed_file_is_read_but_a_link_or_fifo_put_in_its_place_is_not_followed_nor_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "alpha\n").unwrap();
        let whole = read_listed(&file, 100).unwrap();
        assert_eq!((whole.bytes.as_slice(), whole.complete), (b"alpha\n".as_slice(), true));
        let capped = read_listed(&file, 3).unwrap();
        assert_eq!((capped.bytes.as_slice(), capped.complete), (b"alp".as_slice(), false));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(read_listed(&link, 100), Err(OpenError::Io(_))), "a link is not followed");
        assert_eq!(read(&link, 100).unwrap().bytes, b"alpha\n", "while `read` follows it");
        let pipe = fifo(dir.path());
        assert!(matches!(read_listed(&pipe, 10), Err(OpenError::NotRegular("a FIFO (named pipe)"))));
    }

    #[test]
    fn a_fifo_is_refused_without_opening_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        // Opening a FIFO for reading with no writer would block forever; this returns at once.
        assert!(matches!(read(&path, 10), Err(OpenError::NotRegular("a FIFO (named pipe)"))));
        assert!(matches!(check(dir.path()), Err(OpenError::NotRegular("a directory"))));
        assert!(matches!(read(&dir.path().join("missing"), 10), Err(OpenError::NotFound)));
    }

    #[test]
    fn reads_stop_at_the_cap_and_say_whether_the_file_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "0123456789").unwrap();
        let whole = read(&path, 10).unwrap();
        assert_eq!((whole.bytes.as_slice(), whole.complete), (&b"0123456789"[..], true));
        let cut = read(&path, 4).unwrap();
        assert_eq!((cut.bytes.as_slice(), cut.complete), (&b"0123"[..], false));
    }

    #[test]
    fn a_procfs_file_that_reports_size_zero_is_read_only_up_to_the_cap() {
        // pagemap holds 8 bytes per page of the whole address space: terabytes for a 64-bit process.
        let capped = read(Path::new("/proc/self/pagemap"), 1 << 20).unwrap();
        assert_eq!(capped.meta.len(), 0);
        assert_eq!((capped.bytes.len(), capped.complete), (1 << 20, false));
    }

    #[test]
    fn virtual_directories_are_recognised_by_whole_components() {
        assert!(is_virtual(Path::new("/proc")));
        assert!(is_virtual(Path::new("/proc/self/environ")));
        assert!(is_virtual(Path::new("/dev/null")));
        assert!(!is_virtual(Path::new("/process/x")));
        assert!(!is_virtual(Path::new("/home/u/proc")));
    }
}
