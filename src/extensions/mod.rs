//! What the user's setup adds to tinycode as files: skills (`SKILL.md` folders) and custom slash commands
//! (Markdown files), discovered in the project (from the session directory up to the git root) and in the user's
//! home, in the folders tinycode and the agents users migrate from use (`.tinycode/`, `.agents/`, `.claude/`,
//! `.opencode/`). The project's files win over the user's, nearer folders over farther ones, and `.tinycode/`
//! over the others. A file that cannot be read is reported with its path and the reason, never fatal.
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

/// Skill and command files larger than this are refused.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// A skill's or command's text. Only a regular file is opened, and at most [`MAX_FILE_BYTES`] of it: a hostile
/// repository's `SKILL.md` may be a FIFO (which would block the session), a link into `/proc` or a huge file.
pub fn read_text(path: &Path) -> Result<String, String> {
    use crate::workspace::regular::{self, OpenError};
    match regular::read(path, MAX_FILE_BYTES) {
        Ok(read) if !read.complete => Err(format!("it is larger than {} KB", MAX_FILE_BYTES / 1024)),
        Ok(read) => String::from_utf8(read.bytes).map_err(|_| "it is not UTF-8 text".to_string()),
        Err(OpenError::NotFound) => Err("it no longer exists".into()),
        Err(OpenError::NotRegular(kind)) => Err(format!("it is {kind}, not a regular file")),
        Err(OpenError::Io(e)) => Err(format!("cannot read it: {e}")),
    }
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

fn project(dir: PathBuf, claude: bool) -> Root {
    Root { dir, origin: Origin { scope: Scope::Project, claude } }
}

fn user(dir: PathBuf, claude: bool) -> Root {
    Root { dir, origin: Origin { scope: Scope::User, claude } }
}

/// Skill folders, highest precedence first.
pub fn skill_roots(places: &Places) -> Vec<Root> {
    let mut roots = Vec::new();
    for dir in project_dirs(&places.cwd) {
        roots.push(project(dir.join(".tinycode/skills"), false));
        roots.push(project(dir.join(".agents/skills"), false));
        roots.push(project(dir.join(".claude/skills"), true));
    }
    if let Some(config) = &places.config_home {
        roots.push(user(config.join("tinycode/skills"), false));
    }
    if let Some(home) = &places.home {
        roots.push(user(home.join(".agents/skills"), false));
        roots.push(user(home.join(".claude/skills"), true));
    }
    roots
}

/// Command folders, highest precedence first.
pub fn command_roots(places: &Places) -> Vec<Root> {
    let mut roots = Vec::new();
    for dir in project_dirs(&places.cwd) {
        roots.push(project(dir.join(".tinycode/commands"), false));
        roots.push(project(dir.join(".claude/commands"), true));
        roots.push(project(dir.join(".opencode/commands"), false));
        roots.push(project(dir.join(".opencode/command"), false));
    }
    if let Some(config) = &places.config_home {
        roots.push(user(config.join("tinycode/commands"), false));
        roots.push(user(config.join("opencode/commands"), false));
        roots.push(user(config.join("opencode/command"), false));
    }
    if let Some(home) = &places.home {
        roots.push(user(home.join(".claude/commands"), true));
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
