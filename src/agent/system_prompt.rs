//! The system prompt: the text of `prompts/system.md` with the environment filled in (working directory,
//! whether it is a git repository, platform, date), followed by project instructions from `AGENTS.md` files.
//!
//! Owns the prompt's content. Reads a few small files; must not do anything else.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::clock::date;

const SYSTEM: &str = include_str!("prompts/system.md");
const AGENTS_MD: &str = include_str!("prompts/agents_md.md");
const PLAN: &str = include_str!("prompts/plan.md");
/// Larger instruction files are cut so they cannot crowd out the conversation.
const MAX_AGENTS_MD_BYTES: usize = 32 * 1024;

/// The directory holding `.git` at or above `cwd`, if any.
pub fn git_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors().find(|dir| dir.join(".git").exists()).map(Path::to_path_buf)
}

/// `AGENTS.md` files that apply to `cwd`: from the git root (or `cwd` outside a repository) down to `cwd`.
pub fn agents_files(cwd: &Path) -> Vec<PathBuf> {
    let top = git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut files: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&top))
        .map(|dir| dir.join("AGENTS.md"))
        .filter(|file| file.is_file())
        .collect();
    files.reverse();
    files
}

fn instructions(file: &Path) -> Option<String> {
    // Never a plain read: a hostile repository's AGENTS.md may be a FIFO or a link into /proc.
    let read = crate::workspace::regular::read(file, MAX_AGENTS_MD_BYTES as u64 + 4).ok()?;
    let text = String::from_utf8_lossy(&read.bytes);
    let text = crate::tool::truncate::floor_char_boundary(text.trim(), MAX_AGENTS_MD_BYTES);
    (!text.is_empty())
        .then(|| AGENTS_MD.replace("{{path}}", &file.display().to_string()).replace("{{content}}", text))
}

/// Build the system prompt for a session rooted at `cwd` (in plan mode, with its own instructions).
pub fn build(cwd: &Path, now: SystemTime, plan_mode: bool) -> String {
    let git = if git_root(cwd).is_some() { "yes" } else { "no" };
    let mut prompt = SYSTEM
        .replace("{{cwd}}", &cwd.display().to_string())
        .replace("{{git}}", git)
        .replace("{{platform}}", &format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH))
        .replace("{{date}}", &date(now));
    for file in agents_files(cwd) {
        if let Some(section) = instructions(&file) {
            prompt.push_str(&section);
        }
    }
    if plan_mode {
        prompt.push_str(PLAN);
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn the_prompt_states_the_environment_and_includes_agents_md_from_root_to_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "Use tabs.\n").unwrap();
        std::fs::write(root.join("sub/AGENTS.md"), "Run make test.\n").unwrap();
        let prompt = build(&root.join("sub"), UNIX_EPOCH, false);
        assert!(prompt.contains(&format!("- Working directory: {}\n", root.join("sub").display())));
        assert!(prompt.contains("- Git repository: yes\n"));
        assert!(prompt.contains("- Today's date: 1970-01-01"));
        let outer = prompt.find("Use tabs.").unwrap();
        let inner = prompt.find("Run make test.").unwrap();
        assert!(outer < inner);
        assert!(prompt.contains(&format!("(from {})", root.join("sub/AGENTS.md").display())));
    }

    #[test]
    fn outside_a_repository_only_the_cwd_agents_md_counts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("p")).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "outer").unwrap();
        let prompt = build(&dir.path().join("p"), UNIX_EPOCH, false);
        assert!(prompt.contains("- Git repository: no\n"));
        assert!(!prompt.contains("outer"));
    }
}
