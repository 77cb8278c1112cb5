//! The git commands tinycode runs by itself, never through the model's shell: where a directory's repository is,
//! `git status` for checkpoints of shell commands, a file's committed text, and worktrees (add, list, dirty
//! check, commits since a base, remove).
//!
//! The repository is treated as hostile. Git runs with a cleared environment (no `GIT_*` variable of the agent's
//! reaches it), hooks and the file-system monitor turned off on the command line (`-c` beats every config file),
//! no optional locks (status does not rewrite the index), and a time limit. A repository whose own configuration
//! could still make these commands run a program (a `filter` driver, or an `include` of a file we would not have
//! read) is refused: [`Repo::open`] returns [`GitError::Unsafe`].
//!
//! Owns those commands and the parsing of their output. Must not decide what to do with them.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one git command may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(20);

/// Settings that keep git from running programs, whatever the repository's or the user's configuration says.
const SAFE_CONFIG: [&str; 6] = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "advice.detachedHead=false",
    "gc.auto=0",
    "maintenance.auto=false",
];

/// Variables git keeps from the agent's environment (everything else, `GIT_*` included, is dropped).
const KEPT_ENV: [&str; 5] = ["PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR", "USER"];

/// Why a git operation could not be done. Handled by the caller: checkpoints note the gap, the worktree tools
/// tell the model (or the user) in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    #[error("{0} is not inside a git work tree")]
    NotARepository(PathBuf),
    #[error(
        "the repository's configuration ({0}) can make git run programs (a filter driver or an include), so tinycode does not run git in it by itself"
    )]
    Unsafe(PathBuf),
    #[error("git {command} failed: {message}")]
    Failed { command: String, message: String },
    #[error("git cannot be run: {0}")]
    Unavailable(String),
}

/// A git work tree whose configuration runs nothing, ready for commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The work tree's top directory.
    pub root: PathBuf,
    /// Its git directory (`.git`, or `.git/worktrees/<name>` for a linked worktree).
    pub git_dir: PathBuf,
    /// The directory shared by all worktrees of the repository.
    pub common_dir: PathBuf,
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

/// Run `git` with the safe settings in `dir`; stdout as bytes.
async fn run(dir: &Path, args: &[&OsStr]) -> Result<Vec<u8>, GitError> {
    let mut command = crate::shell::launch::git(dir).map_err(|e| GitError::Unavailable(e.to_string()))?;
    command.env_clear();
    for name in KEPT_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for setting in SAFE_CONFIG {
        command.arg("-c").arg(setting);
    }
    command.args(args);
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

/// Does a git configuration file's text set up a filter driver or include another file?
fn config_runs_programs(text: &str) -> bool {
    text.lines()
        .map(|l| l.trim_start().to_ascii_lowercase())
        .any(|l| l.starts_with("[filter") || l.starts_with("[include"))
}

impl Repo {
    /// The work tree holding `dir`, checked to be safe to run git in.
    pub async fn open(dir: &Path) -> Result<Repo, GitError> {
        let args = os(&["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"]);
        let out = run(dir, &args).await.map_err(|e| match e {
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
        let repo = Repo { root: PathBuf::from(root), git_dir, common_dir };
        for file in repo.config_files() {
            if std::fs::read_to_string(&file).is_ok_and(|t| config_runs_programs(&t)) {
                return Err(GitError::Unsafe(file));
            }
        }
        Ok(repo)
    }

    fn config_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for dir in [&self.common_dir, &self.git_dir] {
            for name in ["config", "config.worktree"] {
                let file = dir.join(name);
                if !files.contains(&file) {
                    files.push(file);
                }
            }
        }
        files
    }

    async fn git(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        run(&self.root, &os(args)).await
    }

    /// Is this a linked worktree (not the repository's main work tree)?
    pub fn is_linked_worktree(&self) -> bool {
        self.git_dir != self.common_dir
    }

    /// Every path `git status` reports (ignored files are not), absolute, with its state.
    pub async fn status(&self) -> Result<BTreeMap<PathBuf, Entry>, GitError> {
        let out =
            self.git(&["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"]).await?;
        let mut entries = BTreeMap::new();
        for record in out.split(|b| *b == 0).filter(|r| r.len() > 3) {
            let path = String::from_utf8_lossy(&record[3..]).into_owned();
            let entry = Entry { index: record[0], worktree: record[1] };
            entries.insert(self.root.join(path.trim_end_matches('/')), entry);
        }
        Ok(entries)
    }

    /// The committed text of `path` (absolute, inside the work tree) at HEAD, as a checkout would write it;
    /// `None` when HEAD has no such file.
    pub async fn committed(&self, path: &Path) -> Result<Option<Vec<u8>>, GitError> {
        let Ok(relative) = path.strip_prefix(&self.root) else { return Ok(None) };
        let spec = format!("HEAD:{}", relative.display());
        match self.git(&["cat-file", "-e", &spec]).await {
            Ok(_) => self.git(&["cat-file", "--filters", &spec]).await.map(Some),
            Err(_) => Ok(None),
        }
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
    fn filters_and_includes_in_a_repository_config_count_as_running_programs() {
        assert!(config_runs_programs("[core]\n\tbare = false\n[filter \"x\"]\n\tclean = rm -rf ~\n"));
        assert!(config_runs_programs("[includeIf \"gitdir:~/\"]\n\tpath = evil\n"));
        assert!(config_runs_programs("  [Include]\n path = x\n"));
        assert!(!config_runs_programs(
            "[core]\n\tfsmonitor = run-me\n\thooksPath = .husky\n[user]\n\tname = f\n"
        ));
    }
}
