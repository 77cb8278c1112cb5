//! Protected paths: files that configure tinycode, git, an editor or another agent, where a write can run code
//! later (git hooks, editor tasks, local editor scripts) or widen the agent's own permissions. A change to them
//! asks in every mode, accept-edits and yolo included, and the ask offers no "always".
//!
//! Owns the list and the checks, as pure functions of a path (or a command line) and the workspace root. Must
//! not touch the file system: callers hand in the path they will really write (symlinks resolved).

use std::path::{Component, Path, PathBuf};

/// Directories whose every file is protected, wherever they sit in the workspace (matched case-insensitively,
/// as on case-insensitive file systems). A `.git` *file* (worktrees, submodules) is protected too.
pub const DIRS: &[&str] = &[
    ".tinycode",     // this agent's project settings
    ".git",          // hooks, config (core.hooksPath, fsmonitor, aliases run commands)
    ".githooks",     // the usual core.hooksPath target
    ".husky",        // git hooks installed by husky
    ".vscode",       // tasks, launch configurations, settings (VS Code and its forks)
    ".idea",         // JetBrains run configurations and settings
    ".zed",          // Zed project settings and tasks
    ".helix",        // Helix language servers and settings
    ".fleet",        // Fleet run configurations
    ".vs",           // Visual Studio
    ".devcontainer", // lifecycle commands run when the container is built
    ".claude",       // other agents' settings, permissions, hooks and commands
    ".agents",
    ".codex",
    ".cursor",
    ".gemini",
];

/// File names that are protected wherever they sit.
pub const FILES: &[&str] = &[
    ".nvim.lua", // Neovim 'exrc' scripts
    ".nvimrc",
    ".exrc",
    ".lazy.lua",      // lazy.nvim local plugin specs
    ".dir-locals.el", // Emacs directory variables
    ".dir-locals-2.el",
    ".mcp.json",               // project MCP servers of other agents
    ".pre-commit-config.yaml", // hooks that run on every commit
];

/// File name endings that are protected (editor workspace files carry settings and tasks).
pub const SUFFIXES: &[&str] = &[".code-workspace", ".sublime-project"];

/// The user's own tinycode files, protected when a path reaches them (a command naming them, or a workspace
/// opened at `~/.config`): the trust record and the session database (remembered rules) anywhere, and
/// `tinycode/config.toml` outside the workspace or under a `.config` directory.
fn user_config(parts: &[String], outside: bool) -> bool {
    match parts {
        [.., name] if name == "tinycode.db" => true,
        [.., dir, tinycode, file] if tinycode == "tinycode" => {
            file == crate::config::trust::RECORD_FILE
                || (file == "config.toml" && (outside || dir == ".config"))
        }
        _ => false,
    }
}

/// Lexically resolve `.` and `..`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn lower_parts(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// Why writing the absolute `path` must always ask, or `None`. Components are looked at below `root` (a workspace
/// that itself lies under, say, `~/.vscode/extensions` does not protect all of its files); a path outside the
/// root is looked at whole.
pub fn protected(path: &Path, root: &Path) -> Option<String> {
    let path = normalize(path);
    let inside = path.strip_prefix(normalize(root)).ok();
    let below = inside.unwrap_or(&path);
    let parts = lower_parts(below);
    let name = parts.last()?;
    let full = lower_parts(&path);
    let why = if let Some(dir) = parts.iter().find(|p| DIRS.contains(&p.as_str())) {
        format!("`{dir}` holds settings that can run code or change what the agent may do")
    } else if FILES.contains(&name.as_str()) || SUFFIXES.iter().any(|s| name.ends_with(s)) {
        format!("`{name}` holds settings that can run code or change what the agent may do")
    } else if user_config(&full, inside.is_none()) {
        "it is your own tinycode configuration".to_string()
    } else {
        return None;
    };
    Some(format!("{} is a protected path: {why}.", path.display()))
}

/// Characters that end a word for [`in_command`]: shell operators, quotes, and `=` (`--output=.git/x`).
fn separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(c, ';' | '|' | '&' | '<' | '>' | '(' | ')' | '\'' | '"' | '`' | '=' | '$' | '{' | '}')
}

/// `git config` forms that only read.
const GIT_CONFIG_READS: &[&str] = &["--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list"];

/// Does this simple command (its words) write git's configuration? `git [-C dir] [-c k=v] config` without a
/// reading flag.
fn writes_git_config(words: &[&str]) -> bool {
    let Some(git) = words.iter().position(|w| *w == "git") else { return false };
    let mut rest = words[git + 1..].iter();
    while let Some(word) = rest.next() {
        match *word {
            "-C" | "-c" => {
                rest.next();
            }
            w if w.starts_with('-') => {}
            "config" => return !rest.any(|w| GIT_CONFIG_READS.contains(w)),
            _ => return false,
        }
    }
    false
}

/// Why a command that is not read-only must always ask because of what it names, or `None`: a protected path in
/// any word (relative words are taken from `cwd`), or `git config` writing git's configuration.
pub fn in_command(command: &str, cwd: &Path, root: &Path) -> Option<String> {
    for segment in command.split([';', '|', '&', '\n', '(', ')']) {
        let words: Vec<&str> = segment.split(separator).filter(|w| !w.is_empty()).collect();
        for word in &words {
            let word =
                word.strip_prefix("~/").map(|rest| format!("/~/{rest}")).unwrap_or_else(|| word.to_string());
            let path = if word.starts_with('/') { PathBuf::from(&word) } else { cwd.join(&word) };
            if let Some(why) = protected(&path, root) {
                return Some(why);
            }
        }
        let argv: Vec<&str> = segment.split_whitespace().map(|w| w.trim_matches(['\'', '"'])).collect();
        if writes_git_config(&argv) {
            return Some("`git config` changes git's configuration, which can make git run commands.".into());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &str) -> Option<String> {
        protected(Path::new(path), Path::new("/w"))
    }

    #[test]
    fn settings_that_run_code_or_widen_permissions_are_protected_anywhere_in_the_workspace() {
        for path in [
            "/w/.tinycode/config.toml",
            "/w/.git/hooks/pre-commit",
            "/w/.git/config",
            "/w/vendor/lib/.git",
            "/w/.GIT/hooks/post-checkout",
            "/w/.vscode/tasks.json",
            "/w/.idea/workspace.xml",
            "/w/.zed/settings.json",
            "/w/.helix/languages.toml",
            "/w/.nvim.lua",
            "/w/sub/.exrc",
            "/w/.claude/settings.json",
            "/w/.agents/skills/x/SKILL.md",
            "/w/.devcontainer/devcontainer.json",
            "/w/.husky/pre-commit",
            "/w/app.code-workspace",
            "/w/.mcp.json",
            "/w/a/../.git/x",
            "/elsewhere/.config/tinycode/config.toml",
            "/elsewhere/cfg/tinycode/trusted.toml",
            "/elsewhere/cfg/tinycode/config.toml",
            "/elsewhere/data/tinycode/tinycode.db",
        ] {
            assert!(check(path).is_some(), "{path} must be protected");
        }
        for path in [
            "/w/src/main.rs",
            "/w/.gitignore",
            "/w/.github/workflows/ci.yml",
            "/w/docs/git/config",
            "/w/.tinycoder",
            "/w/tinycode/config.toml",
            "/w",
        ] {
            assert_eq!(check(path), None, "{path} is ordinary");
        }
        assert_eq!(
            check("/w/.git/hooks/pre-commit").unwrap(),
            "/w/.git/hooks/pre-commit is a protected path: `.git` holds settings that can run code or change what the agent may do."
        );
    }

    #[test]
    fn only_components_below_the_root_count_inside_the_workspace() {
        let root = Path::new("/home/u/.vscode/extensions/mine");
        assert_eq!(protected(&root.join("src/ext.ts"), root), None);
        assert!(protected(&root.join(".git/config"), root).is_some());
        assert!(protected(Path::new("/home/u/.vscode/settings.json"), root).is_some(), "outside: whole path");
    }

    #[test]
    fn commands_naming_protected_paths_or_writing_git_config_are_protected() {
        let (cwd, root) = (Path::new("/w/sub"), Path::new("/w"));
        for command in [
            "echo 'default_mode = \"yolo\"' > ../.tinycode/config.toml",
            "cp evil.sh .git/hooks/pre-commit",
            "sed -i s/a/b/ /w/.vscode/tasks.json",
            "tee --output=.nvim.lua",
            "cat x >>~/.config/tinycode/trusted.toml",
            "git config core.hooksPath /tmp/h",
            "cd /w && git config --global alias.st '!sh -c x'",
            "git config -l; git -C /w -c a=b config core.fsmonitor x",
        ] {
            assert!(in_command(command, cwd, root).is_some(), "{command}");
        }
        for command in [
            "cargo test",
            "git commit -m 'fix .gitignore handling'",
            "git config --get user.name",
            "git config -l",
            "git -C sub config --get-regexp user",
            "npm run build -- --out dist",
        ] {
            assert_eq!(in_command(command, cwd, root), None, "{command}");
        }
    }
}
