//! The one reader for the files tinycode reads on its own, with no tool call in between: instruction files
//! (`AGENTS.md`, `CLAUDE.md`, the global one, `instructions = [...]`), skills, custom commands and their `@path`
//! includes, agent files, tool description overrides and config files. A repository arrives with `git clone`
//! symlinks and all, so such a file may lead anywhere: every component of its path is resolved
//! ([`boundary::resolve`]), and what leads out of its [`Scope`], into `/proc`, `/sys` or `/dev`, to a file on the
//! secret-file table, or to anything but a regular file is refused with a [`Refusal`] that says why. Only then is
//! the resolved path opened, without following a last link swapped in meanwhile, and read up to a cap.
//!
//! Owns that decision and the read. Must not decide what a caller does with a refusal (the session names refused
//! files to the user; their content never reaches the model) and never reads a file a caller did not name.

use std::path::{Path, PathBuf};

use super::{boundary, regular, secret_files};

/// Where a file may lead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The folder as named, and its resolved path; `None` for a file the user named themselves.
    within: Option<(PathBuf, PathBuf)>,
}

impl Scope {
    /// Inside `dir` only (links resolved on both sides): the project's root for what a repository supplies, the
    /// user's own config folder (`~/.config/tinycode`, `~/.claude`, ...) for what lives there.
    pub fn within(dir: &Path) -> Scope {
        let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let real = boundary::resolve(&absolute).unwrap_or(absolute);
        Scope { within: Some((dir.to_path_buf(), real)) }
    }

    /// Anywhere but the places every scope refuses: for a path the user (or a project the user trusted) wrote
    /// into a config file, and for the user's own config file.
    pub fn named() -> Scope {
        Scope { within: None }
    }

    /// The folder as named, if the scope has one.
    pub fn root(&self) -> Option<&Path> {
        self.within.as_ref().map(|(given, _)| given.as_path())
    }
}

/// Why a file was not read. Handled by the caller: a missing file is skipped quietly; any other refusal names
/// the file to the user (see [`Refusal::is_guard`]) and leaves the file out of everything the model sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("it does not exist")]
    Missing,
    #[error("it leads to {real}, outside {root}")]
    Outside { real: PathBuf, root: PathBuf },
    #[error("it leads to {0}, inside /proc, /sys or /dev")]
    Virtual(PathBuf),
    #[error("it leads to {real}, a secret file ({kind})")]
    Secret { real: PathBuf, kind: &'static str },
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("it is larger than {} KB", .0 / 1024)]
    TooLarge(u64),
    #[error("it is not UTF-8 text")]
    NotText,
    #[error("cannot read it: {0}")]
    Unreadable(String),
}

impl Refusal {
    /// Whether the file was refused for where it leads or what it is (rather than being missing, too large or
    /// not text): the refusals a user must hear about, since a repository may have set them up.
    pub fn is_guard(&self) -> bool {
        matches!(
            self,
            Refusal::Outside { .. } | Refusal::Virtual(_) | Refusal::Secret { .. } | Refusal::NotRegular(_)
        )
    }
}

impl From<regular::OpenError> for Refusal {
    fn from(e: regular::OpenError) -> Self {
        match e {
            regular::OpenError::NotFound => Refusal::Missing,
            regular::OpenError::NotRegular(kind) => Refusal::NotRegular(kind),
            regular::OpenError::Io(e) => Refusal::Unreadable(e.to_string()),
        }
    }
}

/// Where `path` (a relative one starts in the process's directory) really leads, if `scope` lets it be read.
/// Reads only metadata.
pub fn check(path: &Path, scope: &Scope) -> Result<PathBuf, Refusal> {
    let absolute = std::path::absolute(path).map_err(|e| Refusal::Unreadable(e.to_string()))?;
    let real = boundary::resolve(&absolute).map_err(|e| Refusal::Unreadable(e.to_string()))?;
    let meta = std::fs::metadata(&real).map_err(|e| Refusal::from(regular::OpenError::from(e)))?;
    if regular::is_virtual(&real) {
        return Err(Refusal::Virtual(real));
    }
    if let Some(kind) = secret_files::secret_kind(path).or_else(|| secret_files::secret_kind(&real)) {
        return Err(Refusal::Secret { real, kind });
    }
    if let Some((given, root)) = &scope.within
        && !real.starts_with(root)
    {
        return Err(Refusal::Outside { real, root: given.clone() });
    }
    match regular::irregular_kind(&meta) {
        Some(kind) => Err(Refusal::NotRegular(kind)),
        None => Ok(real),
    }
}

/// At most `cap` bytes of `path`, if `scope` lets it be read (see [`check`]). Blocking: call it from a blocking
/// thread.
pub fn read(path: &Path, scope: &Scope, cap: u64) -> Result<regular::Capped, Refusal> {
    let real = check(path, scope)?;
    // The resolved path has no link left: one put in its place since is not followed, a FIFO not waited on.
    Ok(regular::read_listed(&real, cap)?)
}

/// The whole text of `path`, if `scope` lets it be read and it is UTF-8 of at most `cap` bytes.
pub fn read_text(path: &Path, scope: &Scope, cap: u64) -> Result<String, Refusal> {
    let read = read(path, scope, cap)?;
    if !read.complete {
        return Err(Refusal::TooLarge(cap));
    }
    String::from_utf8(read.bytes).map_err(|_| Refusal::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A project `p` beside an `outside` folder holding a fake key, in a resolved temporary directory.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let real = boundary::resolve(dir.path()).unwrap();
        let project = real.join("p");
        std::fs::create_dir_all(project.join("docs")).unwrap();
        std::fs::create_dir_all(real.join("outside")).unwrap();
        std::fs::write(real.join("outside/notes.txt"), "PRIVATE KEY").unwrap();
        std::fs::write(project.join("docs/a.md"), "inside").unwrap();
        (dir, real, project)
    }

    #[test]
    fn a_file_inside_its_scope_is_read_also_through_links_that_stay_inside() {
        let (_dir, _real, project) = setup();
        symlink("docs/a.md", project.join("AGENTS.md")).unwrap();
        symlink("docs", project.join("alias")).unwrap();
        let scope = Scope::within(&project);
        assert_eq!(read_text(&project.join("AGENTS.md"), &scope, 100).unwrap(), "inside");
        assert_eq!(read_text(&project.join("alias/a.md"), &scope, 100).unwrap(), "inside");
        assert_eq!(check(&project.join("alias/a.md"), &scope).unwrap(), project.join("docs/a.md"));
    }

    #[test]
    fn links_out_of_the_scope_are_refused_in_the_file_or_in_a_parent_folder() {
        let (_dir, real, project) = setup();
        symlink("../outside/notes.txt", project.join("AGENTS.md")).unwrap();
        symlink(real.join("outside"), project.join(".tinycode")).unwrap();
        let scope = Scope::within(&project);
        let outside = Refusal::Outside { real: real.join("outside/notes.txt"), root: project.clone() };
        assert_eq!(read_text(&project.join("AGENTS.md"), &scope, 100), Err(outside.clone()));
        assert_eq!(read_text(&project.join(".tinycode/notes.txt"), &scope, 100), Err(outside.clone()));
        assert_eq!(
            outside.to_string(),
            format!(
                "it leads to {}, outside {}",
                real.join("outside/notes.txt").display(),
                project.display()
            )
        );
        assert!(outside.is_guard());
        assert_eq!(read_text(&project.join("AGENTS.md"), &Scope::named(), 100).unwrap(), "PRIVATE KEY");
    }

    #[test]
    fn proc_secret_files_and_special_files_are_refused_in_every_scope() {
        let (_dir, real, project) = setup();
        symlink("/proc/self/environ", project.join("AGENTS.md")).unwrap();
        std::fs::write(project.join("id_ed25519"), "key").unwrap();
        symlink("id_ed25519", project.join("CLAUDE.md")).unwrap();
        let pipe =
            std::ffi::CString::new(project.join("fifo.md").into_os_string().into_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(pipe.as_ptr(), 0o600) }, 0);
        for scope in [Scope::within(&project), Scope::named(), Scope::within(&real)] {
            let environ = PathBuf::from(format!("/proc/{}/environ", std::process::id()));
            assert_eq!(read(&project.join("AGENTS.md"), &scope, 100).unwrap_err(), Refusal::Virtual(environ));
            assert_eq!(
                read(&project.join("CLAUDE.md"), &scope, 100).unwrap_err(),
                Refusal::Secret { real: project.join("id_ed25519"), kind: "SSH private key" }
            );
            assert_eq!(
                read(&project.join("fifo.md"), &scope, 100).unwrap_err(),
                Refusal::NotRegular("a FIFO (named pipe)")
            );
            assert_eq!(
                read(&project.join("docs"), &scope, 100).unwrap_err(),
                Refusal::NotRegular("a directory")
            );
        }
    }

    #[test]
    fn missing_large_and_binary_files_are_refused_without_counting_as_guards() {
        let (_dir, real, project) = setup();
        std::fs::write(project.join("big.md"), "x".repeat(10)).unwrap();
        std::fs::write(project.join("bin.md"), [0xff, 0xfe]).unwrap();
        symlink(real.join("outside/missing.md"), project.join("dangling.md")).unwrap();
        let scope = Scope::within(&project);
        assert_eq!(read_text(&project.join("big.md"), &scope, 4), Err(Refusal::TooLarge(4)));
        assert_eq!(read(&project.join("big.md"), &scope, 4).unwrap().bytes, b"xxxx");
        assert_eq!(read_text(&project.join("bin.md"), &scope, 4), Err(Refusal::NotText));
        assert_eq!(read_text(&project.join("none.md"), &scope, 4), Err(Refusal::Missing));
        assert_eq!(read_text(&project.join("dangling.md"), &scope, 4), Err(Refusal::Missing));
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            read_text(Path::new("no-such-relative.md"), &Scope::within(Path::new(".")), 4),
            Err(Refusal::Missing)
        );
        let relative = Scope::within(Path::new("."));
        assert_eq!(relative.root(), Some(Path::new(".")));
        assert_eq!(
            check(&project.join("big.md"), &relative),
            Err(Refusal::Outside { real: project.join("big.md"), root: PathBuf::from(".") }),
            "a relative scope is the process's directory ({}), not the file system's root",
            here.display()
        );
        for refusal in [Refusal::Missing, Refusal::TooLarge(4), Refusal::NotText] {
            assert!(!refusal.is_guard(), "{refusal}");
        }
    }
}
