//! The filter drivers of each repository tinycode runs git in, as git listed them, remembered with the state
//! of every configuration file that could change the list: the repository's `config` and `config.worktree`,
//! the user's `~/.gitconfig` and `$XDG_CONFIG_HOME/git/config`, and every file git said a key came from. A
//! listing with an `include.path` or `includeIf.*.path` is never remembered (an included file that sets nothing
//! yet could set a driver later), nor one a file behind which changed in the last [`RACY`] (a second change
//! within the file system's time granularity would leave the state the same; git's own "racily clean" rule).
//! The repository's files are stated before git is asked, so a change while it reads is seen next time. Saves
//! a git process on every shell command after the first.
//!
//! Owns the remembered lists and the parsing of `git config -z --list --show-origin --name-only`. Must not run
//! git (`workspace::git` does, inertly).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::git::Repo;

/// Repositories remembered; the oldest is dropped past this.
const REMEMBERED: usize = 32;
/// A listing is not remembered when a file behind it changed this recently.
pub const RACY: std::time::Duration = std::time::Duration::from_secs(2);

/// A file's identity and last change, or `None` when it does not exist.
type FileState = Option<(u64, u64, u64, i64, i64, i64, i64)>;

fn state(path: &Path) -> FileState {
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()))
}

struct Known {
    git_dir: PathBuf,
    files: Vec<(PathBuf, FileState)>,
    filters: Vec<String>,
}

static KNOWN: Mutex<Vec<Known>> = Mutex::new(Vec::new());

fn known() -> std::sync::MutexGuard<'static, Vec<Known>> {
    match KNOWN.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// What a configuration listing says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The filter drivers named, in order of first appearance.
    pub filters: Vec<String>,
    /// The files keys came from (relative ones against the directory git ran in).
    pub origins: Vec<PathBuf>,
    /// Did the configuration include other files?
    pub includes: bool,
}

impl Listing {
    /// Parse `git config -z --list --show-origin --name-only` output (`origin NUL name NUL` pairs) from a git
    /// run in `dir`.
    pub fn parse(listing: &[u8], dir: &Path) -> Listing {
        let mut read = Listing::default();
        let mut fields = listing.split(|b| *b == 0);
        while let (Some(origin), Some(name)) = (fields.next(), fields.next()) {
            let (origin, name) = (String::from_utf8_lossy(origin), String::from_utf8_lossy(name));
            if let Some(file) = origin.strip_prefix("file:") {
                let file = dir.join(file);
                if !read.origins.contains(&file) {
                    read.origins.push(file);
                }
            }
            let lower = name.to_ascii_lowercase();
            if lower == "include.path" || (lower.starts_with("includeif.") && lower.ends_with(".path")) {
                read.includes = true;
            }
            let Some(rest) = name.strip_prefix("filter.") else { continue };
            let Some((driver, _key)) = rest.rsplit_once('.') else { continue };
            if !read.filters.iter().any(|d| d == driver) {
                read.filters.push(driver.to_string());
            }
        }
        read
    }
}

/// The files whose change could change `repo`'s filter list, beyond those a listing named.
fn watched(repo: &Repo) -> Vec<PathBuf> {
    let mut files = vec![
        repo.common_dir.join("config"),
        repo.common_dir.join("config.worktree"),
        repo.git_dir.join("config.worktree"),
    ];
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(home) = &home {
        files.push(home.join(".gitconfig"));
    }
    match std::env::var_os("XDG_CONFIG_HOME") {
        Some(xdg) => files.push(PathBuf::from(xdg).join("git/config")),
        None => files.extend(home.map(|h| h.join(".config/git/config"))),
    }
    files
}

/// `repo`'s filter drivers as last listed, when none of the files behind that listing changed since.
pub fn lookup(repo: &Repo) -> Option<Vec<String>> {
    let known = known();
    let entry = known.iter().find(|k| k.git_dir == repo.git_dir)?;
    entry.files.iter().all(|(path, then)| state(path) == *then).then(|| entry.filters.clone())
}

/// The state of the files behind `repo`'s listing, taken before git is asked.
pub fn before(repo: &Repo) -> Vec<(PathBuf, FileState)> {
    watched(repo).into_iter().map(|p| (p.clone(), state(&p))).collect()
}

fn recent(state: &FileState) -> bool {
    let Some((.., mtime, mtime_nsec, ctime, ctime_nsec)) = state else { return false };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let racy = now.saturating_sub(RACY);
    let at = |s: i64, ns: i64| std::time::Duration::new(s.max(0) as u64, ns.clamp(0, 999_999_999) as u32);
    at(*mtime, *mtime_nsec) >= racy || at(*ctime, *ctime_nsec) >= racy
}

/// Remember `listing` for `repo`, with `files` as [`before`] found them (and the other files the listing
/// named as they are now).
pub fn remember(repo: &Repo, listing: &Listing, mut files: Vec<(PathBuf, FileState)>) {
    let mut known = known();
    known.retain(|k| k.git_dir != repo.git_dir);
    for origin in &listing.origins {
        if !files.iter().any(|(p, _)| p == origin) {
            files.push((origin.clone(), state(origin)));
        }
    }
    if listing.includes || files.iter().any(|(_, s)| recent(s)) {
        return;
    }
    if known.len() >= REMEMBERED {
        known.remove(0);
    }
    known.push(Known { git_dir: repo.git_dir.clone(), files, filters: listing.filters.clone() });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_names_its_drivers_files_and_includes_as_git_printed_them() {
        let listing = b"file:/home/u/.gitconfig\0filter.lfs.clean\0file:.git/config\0filter.Odd=x.process\0file:.git/config\0core.bare\0command line:\0filter.lfs.required\0";
        let read = Listing::parse(listing, Path::new("/p"));
        assert_eq!(
            read,
            Listing {
                filters: vec!["lfs".into(), "Odd=x".into()],
                origins: vec![PathBuf::from("/home/u/.gitconfig"), PathBuf::from("/p/.git/config")],
                includes: false,
            }
        );
        assert!(Listing::parse(b"file:.git/config\0includeIf.gitdir:~/.path\0", Path::new("/p")).includes);
    }

    #[test]
    fn a_remembered_list_holds_until_a_file_behind_it_changes_and_includes_are_never_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path().join(".git");
        std::fs::create_dir_all(&git_dir).unwrap();
        let config = git_dir.join("config");
        std::fs::write(&config, "[core]\n").unwrap();
        let repo = Repo {
            root: dir.path().into(),
            git_dir: git_dir.clone(),
            common_dir: git_dir.clone(),
            filters: vec![],
        };
        let listing = Listing { filters: vec!["x".into()], ..Listing::default() };
        remember(&repo, &listing, before(&repo));
        assert_eq!(lookup(&repo), None, "a file that changed within the racy interval");
        // As if it had been listed long after the last change.
        let files = watched(&repo).into_iter().map(|p| (p.clone(), state(&p))).collect();
        known().push(Known { git_dir: git_dir.clone(), files, filters: vec!["x".into()] });
        assert_eq!(lookup(&repo), Some(vec!["x".to_string()]));
        std::fs::write(git_dir.join("config.worktree"), "[filter \"y\"]\n").unwrap();
        assert_eq!(lookup(&repo), None, "a file that did not exist appeared");
        remember(&repo, &Listing { includes: true, ..listing }, before(&repo));
        assert_eq!(lookup(&repo), None, "a listing with includes");
    }
}
