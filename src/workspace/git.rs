//! The git commands tinycode runs by itself, never through the model's shell: where a directory's repository is,
//! `git status` for checkpoints of shell commands, a file's committed text, worktrees (add, list, dirty check,
//! commits since a base, remove), and the questions other modules ask of git's configuration ([`inert_command`],
//! used by `git_programs`).
//!
//! The repository is treated as hostile: its `.git` may arrive with an archive, a shared folder or a mounted
//! volume, so its configuration (and a submodule's, and any file it includes) may name programs. Every git
//! process started here is **inert**, whatever any configuration says:
//!
//! - the environment is cleared (no `GIT_*` variable of the agent's reaches git: no `GIT_DIR`, `GIT_PAGER`,
//!   `GIT_EXTERNAL_DIFF`, `GIT_SSH_COMMAND`, `GIT_ASKPASS`, `GIT_EDITOR`, `GIT_CONFIG_*`), keeping only what
//!   finding git and the user's own configuration needs;
//! - `-c` settings on the command line (they beat every configuration file, included ones too, and git passes
//!   them on to the git processes it starts itself) switch off each key that runs a program:
//!   `core.fsmonitor` (the monitor hook), `core.hooksPath=/dev/null` (every hook: `post-checkout` on
//!   `worktree add`, `post-index-change` on an index write, `reference-transaction` on `branch -D`),
//!   `credential.helper=` (empties the helper list), `core.askPass=` and `GIT_TERMINAL_PROMPT=0` (no prompt
//!   program), `protocol.allow=never` and `GIT_NO_LAZY_FETCH` (no transport at all, so `core.sshCommand`,
//!   `core.gitProxy`, `remote.*.uploadpack` and remote helpers never start; a partial clone does not fetch a
//!   missing object), `diff.external=` (an external diff fails rather than runs), `log.showSignature=false`
//!   (no `gpg.program`), `submodule.recurse=false` (a checkout does not enter submodules), and
//!   `core.untrackedCache=false`, `gc.auto=0`, `maintenance.auto=false` (no background work);
//! - `--no-pager` and an empty `core.pager`: no pager at all (`core.pager`, `pager.<command>`), rather than
//!   `core.pager=cat`, which would still look a program up on PATH;
//! - filter drivers have no fixed name: [`Repo::open`] asks git (`git config --list --show-origin`, inert
//!   itself; remembered until one of the files it read changes, see `git_filters`) for every
//!   `filter.<driver>.*` key any configuration sets, the repository's includes too, and empties that
//!   driver's `clean`, `smudge` and `process` and clears `required` (through `GIT_CONFIG_COUNT`, git 2.31 and
//!   later: a driver's name may hold `=`, where `-c` would split). `git status` runs with
//!   `--ignore-submodules=all`, so no git process runs inside a submodule (whose configuration names drivers of
//!   its own); a file whose committed text would pass through a driver is reported instead of restored raw;
//! - `GIT_NO_REPLACE_OBJECTS` (the repository's replace refs do not swap the committed text), `safe.bareRepository=explicit`
//!   (a bare repository planted inside the tree is not found), no optional locks (status does not rewrite the
//!   index), stdin closed, and a time limit.
//!
//! Left alone, and why: `diff.<driver>.textconv` and `diff.<driver>.command` (no command here shows a diff or
//! passes `--textconv`), `merge.<driver>.driver` (nothing here merges), `core.editor` and `sequence.editor` (no
//! command here edits a message or a todo list), `uploadpack.packObjectsHook` (git reads it only from protected,
//! user-owned configuration), `include.path`/`includeIf` (reading a file runs nothing; what it sets is
//! overridden as above), and the system configuration (the administrator's, not the repository's).
//!
//! Owns those commands and the parsing of their output. Must not decide what to do with them.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::git_filters as filter_cache;

/// How long one git command may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(20);

/// Settings that keep git from running programs, whatever the repository's or the user's configuration says.
const INERT_CONFIG: [&str; 14] = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "core.askPass=",
    "credential.helper=",
    "protocol.allow=never",
    "diff.external=",
    "log.showSignature=false",
    "submodule.recurse=false",
    "safe.bareRepository=explicit",
    "advice.detachedHead=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.pager=",
];

/// Variables git keeps from the agent's environment (everything else, `GIT_*` included, is dropped).
const KEPT_ENV: [&str; 4] = ["HOME", "XDG_CONFIG_HOME", "TMPDIR", "USER"];

/// Why a git operation could not be done. Handled by the caller: checkpoints note the gap, the worktree tools
/// tell the model (or the user) in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    #[error("{0} is not inside a git work tree")]
    NotARepository(PathBuf),
    #[error("git {command} failed: {message}")]
    Failed { command: String, message: String },
    #[error("git cannot be run: {0}")]
    Unavailable(String),
}

/// A git work tree, ready for inert commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The work tree's top directory.
    pub root: PathBuf,
    /// Its git directory (`.git`, or `.git/worktrees/<name>` for a linked worktree).
    pub git_dir: PathBuf,
    /// The directory shared by all worktrees of the repository.
    pub common_dir: PathBuf,
    /// The filter drivers any configuration of the repository defines (each one emptied on every command).
    pub filters: Vec<String>,
}

/// A path's state in `git status`: the two status letters (index, work tree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub index: u8,
    pub worktree: u8,
}

impl Entry {
    /// Not tracked by git (`??`).
    pub fn untracked(&self) -> bool {
        self.index == b'?'
    }
}

/// An inert `git` command in `dir` (see the module's doc), with every filter driver in `filters` emptied; the
/// caller adds the subcommand and its arguments. `git` itself is found by the launcher, outside `dir`'s work tree,
/// and runs with the `PATH` the launcher cleaned (no empty, relative or in-project entries).
pub fn inert_command(dir: &Path, filters: &[String]) -> Result<std::process::Command, GitError> {
    let (program, path) = crate::shell::launch::git(dir).map_err(|e| GitError::Unavailable(e.to_string()))?;
    let mut command = std::process::Command::new(program);
    command.env_clear();
    for name in KEPT_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .env("PATH", path)
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_NO_LAZY_FETCH", "1")
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .arg("--no-pager");
    for setting in INERT_CONFIG {
        command.arg("-c").arg(setting);
    }
    // Through the environment, not `-c`: a driver's name may hold `=`, which `-c` would split at.
    let mut count = 0;
    for driver in filters {
        for (key, value) in [("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")] {
            command.env(format!("GIT_CONFIG_KEY_{count}"), format!("filter.{driver}.{key}"));
            command.env(format!("GIT_CONFIG_VALUE_{count}"), value);
            count += 1;
        }
    }
    if count > 0 {
        command.env("GIT_CONFIG_COUNT", count.to_string());
    }
    Ok(command)
}

/// Run inert `git` in `dir`; stdout as bytes.
async fn run(dir: &Path, filters: &[String], args: &[&OsStr]) -> Result<Vec<u8>, GitError> {
    let mut command = tokio::process::Command::from(inert_command(dir, filters)?);
    command.kill_on_drop(true).args(args);
    let label = args.first().map(|a| a.to_string_lossy().into_owned()).unwrap_or_default();
    let failed = |message: String| GitError::Failed { command: label.clone(), message };
    let output = match tokio::time::timeout(GIT_TIMEOUT, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(GitError::Unavailable(e.to_string())),
        Err(_) => return Err(failed(format!("timed out after {} s", GIT_TIMEOUT.as_secs()))),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(failed(stderr.trim().lines().last().unwrap_or("no message").to_string()));
    }
    Ok(output.stdout)
}

fn os<'a>(args: &[&'a str]) -> Vec<&'a OsStr> {
    args.iter().map(|a| OsStr::new(*a)).collect()
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim_end_matches('\n').to_string()
}

impl Repo {
    /// The work tree holding `dir`, with the filter drivers its configuration defines.
    pub async fn open(dir: &Path) -> Result<Repo, GitError> {
        let args = os(&["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"]);
        let out = run(dir, &[], &args).await.map_err(|e| match e {
            GitError::Unavailable(_) => e,
            _ => GitError::NotARepository(dir.to_path_buf()),
        })?;
        let out = text(out);
        let mut lines = out.lines();
        let (Some(root), Some(git_dir), Some(common)) = (lines.next(), lines.next(), lines.next()) else {
            return Err(GitError::NotARepository(dir.to_path_buf()));
        };
        let git_dir = PathBuf::from(git_dir);
        let common_dir =
            if Path::new(common).is_absolute() { PathBuf::from(common) } else { dir.join(common) };
        let common_dir = std::fs::canonicalize(&common_dir).unwrap_or(common_dir);
        let mut repo = Repo { root: PathBuf::from(root), git_dir, common_dir, filters: Vec::new() };
        repo.filters = match filter_cache::lookup(&repo) {
            Some(filters) => filters,
            None => repo.ask_filters().await?,
        };
        Ok(repo)
    }

    /// Ask git for every configuration key and where it was set: the filter drivers, remembered with the state
    /// of the files they came from.
    async fn ask_filters(&self) -> Result<Vec<String>, GitError> {
        let files = filter_cache::before(self);
        let listing =
            run(&self.root, &[], &os(&["config", "-z", "--list", "--show-origin", "--name-only"])).await;
        let listing = match listing {
            Ok(listing) => listing,
            // Exit status 1 with nothing said: no configuration at all.
            Err(GitError::Failed { message, .. }) if message == "no message" => Vec::new(),
            Err(e) => return Err(e),
        };
        let read = filter_cache::Listing::parse(&listing, &self.root);
        filter_cache::remember(self, &read, files);
        Ok(read.filters)
    }

    async fn git(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        run(&self.root, &self.filters, &os(args)).await
    }

    /// Is this a linked worktree (not the repository's main work tree)?
    pub fn is_linked_worktree(&self) -> bool {
        self.git_dir != self.common_dir
    }

    /// Every path `git status` reports (ignored files are not), absolute, with its state.
    pub async fn status(&self) -> Result<BTreeMap<PathBuf, Entry>, GitError> {
        let out = self
            .git(&[
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--ignore-submodules=all",
            ])
            .await?;
        let mut entries = BTreeMap::new();
        for record in out.split(|b| *b == 0).filter(|r| r.len() > 3) {
            let path = String::from_utf8_lossy(&record[3..]).into_owned();
            let entry = Entry { index: record[0], worktree: record[1] };
            entries.insert(self.root.join(path.trim_end_matches('/')), entry);
        }
        Ok(entries)
    }

    /// The committed text of `path` (absolute, inside the work tree) at HEAD, as a checkout would write it;
    /// `None` when HEAD has no such file. A file a defined filter driver applies to fails: its drivers are off,
    /// so the text would not be what a checkout writes.
    pub async fn committed(&self, path: &Path) -> Result<Option<Vec<u8>>, GitError> {
        let Ok(relative) = path.strip_prefix(&self.root) else { return Ok(None) };
        let relative = relative.display().to_string();
        if let Some(driver) = self.filter_of(&relative).await? {
            return Err(GitError::Failed {
                command: "cat-file".into(),
                message: format!(
                    "its committed text passes through the filter driver `{driver}`, which tinycode does not run"
                ),
            });
        }
        let spec = format!("HEAD:{relative}");
        match self.git(&["cat-file", "-e", &spec]).await {
            Ok(_) => self.git(&["cat-file", "--filters", &spec]).await.map(Some),
            Err(_) => Ok(None),
        }
    }

    /// The defined filter driver that applies to `relative` (its `filter` attribute), if any.
    async fn filter_of(&self, relative: &str) -> Result<Option<String>, GitError> {
        if self.filters.is_empty() {
            return Ok(None);
        }
        let out = self.git(&["check-attr", "-z", "filter", "--", relative]).await?;
        let value = out.split(|b| *b == 0).nth(2).map(|v| String::from_utf8_lossy(v).into_owned());
        Ok(value.filter(|v| self.filters.contains(v)))
    }

    /// The commit HEAD points at.
    pub async fn head(&self) -> Result<String, GitError> {
        self.git(&["rev-parse", "--verify", "HEAD"]).await.map(text)
    }

    /// Create a worktree at `path` on a new branch `branch` starting at `base`.
    pub async fn add_worktree(&self, path: &Path, branch: &str, base: &str) -> Result<(), GitError> {
        let path = path.display().to_string();
        self.git(&["worktree", "add", "-b", branch, &path, base]).await.map(|_| ())
    }

    /// The directories of the repository's worktrees, the main one first.
    pub async fn worktrees(&self) -> Result<Vec<PathBuf>, GitError> {
        let out = text(self.git(&["worktree", "list", "--porcelain"]).await?);
        Ok(out.lines().filter_map(|l| l.strip_prefix("worktree ")).map(PathBuf::from).collect())
    }

    /// Commits on HEAD that `base` does not have.
    pub async fn commits_since(&self, base: &str) -> Result<u64, GitError> {
        let range = format!("{base}..HEAD");
        let out = text(self.git(&["rev-list", "--count", &range]).await?);
        out.trim().parse().map_err(|_| GitError::Failed { command: "rev-list".into(), message: out })
    }

    /// Remove the worktree at `path` (forcing past uncommitted changes) and delete its branch.
    pub async fn remove_worktree(&self, path: &Path, branch: &str) -> Result<(), GitError> {
        let path = path.display().to_string();
        self.git(&["worktree", "remove", "--force", &path]).await?;
        self.git(&["branch", "-D", branch]).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inert_command_switches_off_each_program_key_and_empties_every_named_driver() {
        let dir = tempfile::tempdir().unwrap();
        let command = inert_command(dir.path(), &["a=b".to_string()]).unwrap();
        // git is found by the launcher (an absolute path outside the directory) and gets the launcher's PATH.
        assert!(Path::new(command.get_program()).is_absolute(), "{:?}", command.get_program());
        assert!(!Path::new(command.get_program()).starts_with(dir.path()));
        assert!(command.get_envs().any(|(k, v)| k == "PATH" && v.is_some()));
        let args: Vec<String> = command.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args[0], "--no-pager");
        let settings: Vec<&str> = args[1..].chunks(2).map(|pair| pair[1].as_str()).collect();
        assert_eq!(settings, INERT_CONFIG.to_vec());
        let env: BTreeMap<String, String> = command
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_string_lossy().into_owned(), v?.to_string_lossy().into_owned())))
            .filter(|(k, _)| k.starts_with("GIT_CONFIG"))
            .collect();
        let expected: BTreeMap<String, String> = [
            ("GIT_CONFIG_COUNT", "4"),
            ("GIT_CONFIG_KEY_0", "filter.a=b.clean"),
            ("GIT_CONFIG_VALUE_0", ""),
            ("GIT_CONFIG_KEY_1", "filter.a=b.smudge"),
            ("GIT_CONFIG_VALUE_1", ""),
            ("GIT_CONFIG_KEY_2", "filter.a=b.process"),
            ("GIT_CONFIG_VALUE_2", ""),
            ("GIT_CONFIG_KEY_3", "filter.a=b.required"),
            ("GIT_CONFIG_VALUE_3", "false"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(env, expected);
    }
}
