//! One directory's entries, read for the walk without an allocation per entry: `std::fs::read_dir` allocates
//! every name (twice with `file_name()`, and a path join re-allocates), and on a 100,000-file tree those
//! allocations, contended between the walk's threads, cost more than the listing itself. Here the names are
//! copied into one buffer per directory, the kinds come from the listing (`d_type`), and a file's size and
//! modification time are read relative to the open directory (`fstatat`), as `DirEntry::metadata` does.
//!
//! Owns the C library's directory stream (`opendir`/`readdir`/`fstatat`) behind a safe API. Must not decide
//! what a walk keeps.

use std::ffi::OsStr;
use std::path::Path;
use std::time::SystemTime;

/// What an entry is, as the listing says (symbolic links are `Other`: the walk never follows them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Other,
}

/// One entry: where its name lies in the listing's buffer, and its kind.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    start: usize,
    /// Without the trailing NUL kept in the buffer.
    len: usize,
    pub kind: Kind,
}

/// A regular file's size and modification time.
pub struct Stat {
    pub modified: SystemTime,
    pub len: u64,
}

#[cfg(unix)]
mod stream {
    use std::ffi::{CStr, CString};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    use super::{Kind, Stat};

    /// An open directory stream, closed when dropped.
    pub struct Stream(std::ptr::NonNull<libc::DIR>);

    impl Stream {
        pub fn open(path: &Path) -> Option<Stream> {
            let path = CString::new(path.as_os_str().as_bytes()).ok()?;
            // SAFETY: `path` is a valid NUL-terminated string; a null result is an error, handled.
            let dir = unsafe { libc::opendir(path.as_ptr()) };
            std::ptr::NonNull::new(dir).map(Stream)
        }

        /// The next entry's name and kind (`None` for a kind the listing does not say), until the end or an
        /// error. `.` and `..` are included.
        pub fn next(&mut self, mut take: impl FnMut(&[u8], Option<Kind>)) -> bool {
            // SAFETY: the stream is open (it is closed only on drop) and read by this thread alone.
            let entry = unsafe { libc::readdir(self.0.as_ptr()) };
            if entry.is_null() {
                return false;
            }
            // SAFETY: a non-null entry is valid until the next `readdir` on this stream; its name is
            // NUL-terminated. Both are read before this function returns.
            let (name, kind) = unsafe { (CStr::from_ptr((*entry).d_name.as_ptr()), (*entry).d_type) };
            let kind = match kind {
                libc::DT_REG => Some(Kind::File),
                libc::DT_DIR => Some(Kind::Dir),
                libc::DT_UNKNOWN => None,
                _ => Some(Kind::Other),
            };
            take(name.to_bytes(), kind);
            true
        }

        /// `fstatat` of `name` (NUL-terminated) in this directory, not following a link.
        fn stat(&self, name: &[u8]) -> Option<libc::stat> {
            let name = CStr::from_bytes_with_nul(name).ok()?;
            let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
            // SAFETY: the stream is open, so its descriptor is valid; `name` is NUL-terminated and `stat`
            // is written in full when the call succeeds, which is checked before it is read.
            let done = unsafe {
                libc::fstatat(
                    libc::dirfd(self.0.as_ptr()),
                    name.as_ptr(),
                    stat.as_mut_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            };
            // SAFETY: see above: 0 means the call filled `stat`.
            (done == 0).then(|| unsafe { stat.assume_init() })
        }

        pub fn kind(&self, name: &[u8]) -> Kind {
            match self.stat(name).map(|s| s.st_mode & libc::S_IFMT) {
                Some(libc::S_IFREG) => Kind::File,
                Some(libc::S_IFDIR) => Kind::Dir,
                _ => Kind::Other,
            }
        }

        pub fn file(&self, name: &[u8]) -> Option<Stat> {
            let stat = self.stat(name).filter(|s| s.st_mode & libc::S_IFMT == libc::S_IFREG)?;
            let since =
                Duration::new(stat.st_mtime.max(0) as u64, stat.st_mtime_nsec.clamp(0, 999_999_999) as u32);
            Some(Stat { modified: SystemTime::UNIX_EPOCH + since, len: stat.st_size.max(0) as u64 })
        }
    }

    impl Drop for Stream {
        fn drop(&mut self) {
            // SAFETY: the stream was opened by `opendir` and is closed once, here.
            unsafe { libc::closedir(self.0.as_ptr()) };
        }
    }
}

/// One directory's entries (without `.` and `..`), with the directory kept open to read file details.
pub struct Listing {
    #[cfg(unix)]
    stream: stream::Stream,
    #[cfg(not(unix))]
    path: std::path::PathBuf,
    /// Every name, each followed by a NUL.
    names: Vec<u8>,
    entries: Vec<Entry>,
}

impl Listing {
    /// The entries of the directory `path`; `None` when it cannot be read.
    #[cfg(unix)]
    pub fn read(path: &Path) -> Option<Listing> {
        let mut stream = stream::Stream::open(path)?;
        let (mut names, mut entries, mut unknown) = (Vec::with_capacity(4096), Vec::with_capacity(64), false);
        while stream.next(|name, kind| {
            if name == b"." || name == b".." {
                return;
            }
            unknown |= kind.is_none();
            entries.push(Entry { start: names.len(), len: name.len(), kind: kind.unwrap_or(Kind::Other) });
            names.extend_from_slice(name);
            names.push(0);
        }) {}
        let mut listing = Listing { stream, names, entries };
        // A file system that does not say kinds in its listings: ask for each entry.
        if unknown {
            for i in 0..listing.entries.len() {
                let entry = listing.entries[i];
                listing.entries[i].kind = listing.stream.kind(listing.with_nul(&entry));
            }
        }
        Some(listing)
    }

    #[cfg(not(unix))]
    pub fn read(path: &Path) -> Option<Listing> {
        let (mut names, mut entries) = (Vec::new(), Vec::new());
        for entry in std::fs::read_dir(path).ok()?.flatten() {
            let kind = match entry.file_type() {
                Ok(t) if t.is_file() => Kind::File,
                Ok(t) if t.is_dir() => Kind::Dir,
                _ => Kind::Other,
            };
            let name = entry.file_name();
            let name = name.as_encoded_bytes();
            entries.push(Entry { start: names.len(), len: name.len(), kind });
            names.extend_from_slice(name);
            names.push(0);
        }
        Some(Listing { path: path.to_path_buf(), names, entries })
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry's name.
    pub fn name(&self, entry: &Entry) -> &OsStr {
        let bytes = &self.names[entry.start..entry.start + entry.len];
        #[cfg(unix)]
        return std::os::unix::ffi::OsStrExt::from_bytes(bytes);
        #[cfg(not(unix))]
        // SAFETY: the bytes were taken from an `OsStr` by `as_encoded_bytes` and are whole.
        return unsafe { OsStr::from_encoded_bytes_unchecked(bytes) };
    }

    fn with_nul(&self, entry: &Entry) -> &[u8] {
        &self.names[entry.start..=entry.start + entry.len]
    }

    /// A regular file's size and modification time, read now (`None`: it is gone or no longer a file).
    #[cfg(unix)]
    pub fn file(&self, entry: &Entry) -> Option<Stat> {
        self.stream.file(self.with_nul(entry))
    }

    #[cfg(not(unix))]
    pub fn file(&self, entry: &Entry) -> Option<Stat> {
        let meta = std::fs::symlink_metadata(self.path.join(self.name(entry))).ok()?;
        meta.is_file()
            .then(|| Stat { modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), len: meta.len() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_names_files_and_directories_and_leaves_out_dot_entries_and_follows_no_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "four").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("a.txt"), dir.path().join("link")).unwrap();
        let listing = Listing::read(dir.path()).unwrap();
        let mut seen: Vec<(String, Kind)> = listing
            .entries()
            .iter()
            .map(|e| (listing.name(e).to_string_lossy().into_owned(), e.kind))
            .collect();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            seen,
            vec![("a.txt".into(), Kind::File), ("link".into(), Kind::Other), ("sub".into(), Kind::Dir)]
        );
        let file = listing.entries().iter().find(|e| e.kind == Kind::File).unwrap();
        let stat = listing.file(file).unwrap();
        assert_eq!(stat.len, 4);
        assert_eq!(stat.modified, std::fs::metadata(dir.path().join("a.txt")).unwrap().modified().unwrap());
        let sub = listing.entries().iter().find(|e| e.kind == Kind::Dir).unwrap();
        assert!(listing.file(sub).is_none(), "a directory is not a file");
        assert!(Listing::read(&dir.path().join("missing")).is_none());
    }
}
