//! The system prompt: the text of `prompts/system.md` with the environment filled in (working directory,
//! whether it is a git repository, platform, date), followed by instruction files (`instructions`) and the
//! names and descriptions of the skills (their bodies come through the `skill` tool).
//!
//! Owns the prompt's content. Reads a few small files; must not do anything else.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::instructions;
use crate::clock::date;

const SYSTEM: &str = include_str!("prompts/system.md");
const PLAN: &str = include_str!("prompts/plan.md");
const SKILLS: &str = include_str!("prompts/skills.md");
/// The skill list's share of the prompt; descriptions are shortened to fit, then skills left out.
const MAX_SKILLS_CHARS: usize = 8000;

/// The directory holding `.git` at or above `cwd`, if any.
pub fn git_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors().find(|dir| dir.join(".git").exists()).map(Path::to_path_buf)
}

/// What the prompt adds besides the environment: instruction files and skills.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extras {
    /// The user's global `AGENTS.md`.
    pub global_instructions: Option<PathBuf>,
    /// Files named by `instructions = [...]`.
    pub instruction_files: Vec<PathBuf>,
    /// Skills as (name, description).
    pub skills: Vec<(String, String)>,
}

fn skill_entry(name: &str, description: &str) -> String {
    format!("<skill><name>{name}</name><description>{description}</description></skill>")
}

/// The skills section: every name, descriptions shortened (then skills left out) to stay within the budget.
fn skills(list: &[(String, String)]) -> String {
    if list.is_empty() {
        return String::new();
    }
    let mut limit = list.iter().map(|(_, d)| d.chars().count()).max().unwrap_or(0);
    loop {
        let entries: Vec<String> = list
            .iter()
            .map(|(name, description)| {
                let short: String = description.chars().take(limit).collect();
                let short = if short.len() < description.len() { format!("{short}…") } else { short };
                skill_entry(name, &short)
            })
            .collect();
        let total: usize = entries.iter().map(|e| e.len() + 1).sum();
        if total <= MAX_SKILLS_CHARS || limit <= 40 {
            let mut text = String::new();
            for (n, entry) in entries.iter().enumerate() {
                if text.len() + entry.len() > MAX_SKILLS_CHARS {
                    text.push_str(&format!(
                        "({} more skills are listed by `/skills`; the `skill` tool knows them all.)",
                        entries.len() - n
                    ));
                    break;
                }
                text.push_str(entry);
                text.push('\n');
            }
            return SKILLS.replace("{{skills}}", text.trim_end());
        }
        limit = limit * 3 / 4;
    }
}

/// Build the system prompt for a session rooted at `cwd` (in plan mode, with its own instructions).
pub fn build(cwd: &Path, now: SystemTime, plan_mode: bool, extras: &Extras) -> String {
    let git = if git_root(cwd).is_some() { "yes" } else { "no" };
    let mut prompt = SYSTEM
        .replace("{{cwd}}", &cwd.display().to_string())
        .replace("{{git}}", git)
        .replace("{{platform}}", &format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH))
        .replace("{{date}}", &date(now));
    let files = instructions::files(cwd, extras.global_instructions.as_deref(), &extras.instruction_files);
    prompt.push_str(&instructions::section(&files));
    prompt.push_str(&skills(&extras.skills));
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
        let prompt = build(&root.join("sub"), UNIX_EPOCH, false, &Extras::default());
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
        let prompt = build(&dir.path().join("p"), UNIX_EPOCH, false, &Extras::default());
        assert!(prompt.contains("- Git repository: no\n"));
        assert!(!prompt.contains("outer"));
    }
}

#[cfg(test)]
mod skill_tests {
    use super::*;

    #[test]
    fn skills_are_listed_by_name_and_description_and_long_lists_are_shortened() {
        let list = vec![("pdf".to_string(), "Work with PDFs.".to_string())];
        let prompt = build(
            Path::new("/w"),
            std::time::UNIX_EPOCH,
            false,
            &Extras { skills: list, ..Extras::default() },
        );
        assert!(prompt.contains("<available_skills>\n<skill><name>pdf</name><description>Work with PDFs.</description></skill>\n</available_skills>"));
        let long: Vec<(String, String)> = (0..60).map(|n| (format!("s{n}"), "d".repeat(500))).collect();
        let text = skills(&long);
        assert!(text.len() < MAX_SKILLS_CHARS + SKILLS.len(), "{}", text.len());
        assert!(text.contains("<name>s59</name>"), "every name stays when descriptions can shrink");
        assert!(
            build(Path::new("/w"), std::time::UNIX_EPOCH, false, &Extras::default())
                .find("# Skills")
                .is_none()
        );
    }
}
