//! What the user's setup adds to tinycode as files: skills (`SKILL.md` folders) and custom slash commands
//! (Markdown files), discovered in the project (from the session directory up to the git root) and in the user's
//! home, in the folders tinycode and the agents users migrate from use (`.tinycode/`, `.agents/`, `.claude/`,
//! `.opencode/`). The project's files win over the user's, nearer folders over farther ones, and `.tinycode/`
//! over the others. Every file is read through `workspace::project_file`: a project's may not lead out of the
//! project (from the git root down), a user's not out of the folder it was found in (`~/.claude`, ...). A file
//! that cannot be read or was refused is reported with its path and the reason, never fatal.
//!
//! Owns discovery, the file formats and argument expansion. Reads files only; runs nothing (shell lines in
//! commands are run by the session, after asking) and must not import the agent or the session.

pub mod arguments;
pub mod commands;
pub mod frontmatter;
pub mod skills;

use std::path::{Path, PathBuf};

pub use commands::CustomCommand;
pub use skills::Skill;

use crate::workspace::project_file;

/// Skill and command files larger than this are refused.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// A skill's or command's text, through the one reader of such files (`workspace::project_file`): a hostile
/// repository's `SKILL.md` may be a FIFO, a link into `/proc` or out of the project, or a huge file.
pub fn read_text(path: &Path, reach: &project_file::Scope) -> Result<String, String> {
    project_file::read_text(path, reach, MAX_FILE_BYTES).map_err(|refusal| match refusal {
        project_file::Refusal::Missing => "it no longer exists".to_string(),
        other => other.to_string(),
    })
}

/// Whether a folder entry is there at all (a link counts even when its target is missing, so that a link leading
/// out of the project is reported rather than skipped).
fn present(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Whose folder a file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The repository: its Markdown is not code, but what it could make run (shell lines) needs trust.
    Project,
    /// The user's home: the user's own.
    User,
}

/// Where a file was found: whose it is, and whether it follows Claude Code's placeholder rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    pub scope: Scope,
    pub claude: bool,
}

impl Origin {
    pub fn style(self) -> arguments::Style {
        if self.claude { arguments::Style::ZeroBased } else { arguments::Style::OneBased }
    }
}

/// A folder to search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub dir: PathBuf,
    pub origin: Origin,
    /// Where its files may lead: the project, or the user's folder that holds `dir`.
    pub reach: project_file::Scope,
}

/// A file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub reason: String,
}

/// Where to look: the session directory and the user's directories.
#[derive(Debug, Clone, Default)]
pub struct Places {
    pub cwd: PathBuf,
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME` (normally `~/.config`).
    pub config_home: Option<PathBuf>,
}

/// The session directory and its parents up to the git root (just the directory outside a repository),
/// nearest first.
pub fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let dirs: Vec<PathBuf> = cwd.ancestors().map(Path::to_path_buf).collect();
    match dirs.iter().position(|d| d.join(".git").exists()) {
        Some(top) => dirs[..=top].to_vec(),
        None => vec![cwd.to_path_buf()],
    }
}

/// The project of a session rooted at `cwd`: the git root above it, or `cwd` itself outside a repository. What
/// the repository supplies may not lead out of it.
pub fn project_root(cwd: &Path) -> PathBuf {
    project_dirs(cwd).pop().unwrap_or_else(|| cwd.to_path_buf())
}

fn project(dir: PathBuf, claude: bool, reach: &project_file::Scope) -> Root {
    Root { dir, origin: Origin { scope: Scope::Project, claude }, reach: reach.clone() }
}

/// A folder of the user's, whose files may not lead out of `folder` (`~/.claude`, `~/.config/tinycode`, ...).
fn user(folder: &Path, rest: &str, claude: bool) -> Root {
    let reach = project_file::Scope::within(folder);
    Root { dir: folder.join(rest), origin: Origin { scope: Scope::User, claude }, reach }
}

/// Skill folders, highest precedence first.
pub fn skill_roots(places: &Places) -> Vec<Root> {
    let mut roots = Vec::new();
    let reach = project_file::Scope::within(&project_root(&places.cwd));
    for dir in project_dirs(&places.cwd) {
        roots.push(project(dir.join(".tinycode/skills"), false, &reach));
        roots.push(project(dir.join(".agents/skills"), false, &reach));
        roots.push(project(dir.join(".claude/skills"), true, &reach));
    }
    if let Some(config) = &places.config_home {
        roots.push(user(&config.join("tinycode"), "skills", false));
    }
    if let Some(home) = &places.home {
        roots.push(user(&home.join(".agents"), "skills", false));
        roots.push(user(&home.join(".claude"), "skills", true));
    }
    roots
}

/// Command folders, highest precedence first.
pub fn command_roots(places: &Places) -> Vec<Root> {
    let mut roots = Vec::new();
    let reach = project_file::Scope::within(&project_root(&places.cwd));
    for dir in project_dirs(&places.cwd) {
        roots.push(project(dir.join(".tinycode/commands"), false, &reach));
        roots.push(project(dir.join(".claude/commands"), true, &reach));
        roots.push(project(dir.join(".opencode/commands"), false, &reach));
        roots.push(project(dir.join(".opencode/command"), false, &reach));
    }
    if let Some(config) = &places.config_home {
        roots.push(user(&config.join("tinycode"), "commands", false));
        roots.push(user(&config.join("opencode"), "commands", false));
        roots.push(user(&config.join("opencode"), "command", false));
    }
    if let Some(home) = &places.home {
        roots.push(user(&home.join(".claude"), "commands", true));
    }
    roots
}

/// Everything found, in precedence order, with the files that could not be used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    pub skills: Vec<Skill>,
    pub commands: Vec<CustomCommand>,
    pub problems: Vec<Problem>,
}

impl Catalog {
    pub fn discover(places: &Places) -> Catalog {
        let (skills, mut problems) = skills::discover(&skill_roots(places));
        let (commands, more) = commands::discover(&command_roots(places));
        problems.extend(more);
        Catalog { skills, commands, problems }
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn command(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|c| c.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_folders_run_from_the_session_directory_up_to_the_git_root_nearest_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        assert_eq!(project_dirs(&root.join("a/b")), vec![root.join("a/b"), root.join("a"), root.clone()]);
        let outside = dir.path().join("plain");
        std::fs::create_dir_all(&outside).unwrap();
        assert_eq!(project_dirs(&outside), vec![outside.clone()]);
    }
}
