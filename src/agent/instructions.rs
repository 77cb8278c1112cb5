//! Instruction files for the system prompt: the user's global `AGENTS.md` (`~/.config/tinycode/AGENTS.md`), then
//! the project's from the git root down to the session directory (`AGENTS.md`, or `CLAUDE.md` where no `AGENTS.md`
//! sits beside it), then the files named by `instructions = [...]` in the configuration. Each file is cut at
//! [`MAX_FILE_BYTES`] and all of them together at [`MAX_TOTAL_BYTES`]; what the cap left out is named in a note, so
//! the model knows to read it if it matters.
//!
//! Every file is read through `workspace::project_file`, each with its reach: the project's may not lead out of
//! the project (a hostile repository's `AGENTS.md` may link to `/proc/self/environ` or to a key outside), the
//! global one not out of the user's tinycode folder, and a configured one only where its path says (inside the
//! project when it is spelled there). A refused file is left out here and listed by [`refused`] for the session
//! to name to the user.
//!
//! Owns which files count and the caps. Reads files; nothing else.

use std::path::{Path, PathBuf};

use crate::extensions::{project_dirs, project_root};
use crate::tool::truncate::floor_char_boundary;
use crate::workspace::project_file::{self, Refusal, Scope};

const SECTION: &str = include_str!("prompts/agents_md.md");
/// Larger instruction files are cut so they cannot crowd out the conversation.
pub const MAX_FILE_BYTES: usize = 32 * 1024;
/// All instruction files together.
pub const MAX_TOTAL_BYTES: usize = 64 * 1024;

/// An instruction file and where it may lead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    pub path: PathBuf,
    pub reach: Scope,
}

/// Whether a folder entry is there (a link counts even when it leads nowhere: it is refused, not skipped).
fn present(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The project's instruction files for `cwd`, outermost first.
pub fn project_files(cwd: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = project_dirs(cwd)
        .into_iter()
        .filter_map(|dir| {
            let agents = dir.join("AGENTS.md");
            let claude = dir.join("CLAUDE.md");
            if present(&agents) { Some(agents) } else { present(&claude).then_some(claude) }
        })
        .collect();
    files.reverse();
    files
}

/// Every instruction file that applies, in prompt order, each once.
pub fn files(cwd: &Path, global: Option<&Path>, configured: &[PathBuf]) -> Vec<Instruction> {
    let root = project_root(cwd);
    let project = Scope::within(&root);
    let mut all: Vec<Instruction> = global
        .filter(|g| present(g))
        .map(|g| Instruction {
            path: g.to_path_buf(),
            reach: g.parent().map(Scope::within).unwrap_or(Scope::named()),
        })
        .into_iter()
        .collect();
    all.extend(project_files(cwd).into_iter().map(|path| Instruction { path, reach: project.clone() }));
    all.extend(configured.iter().filter(|f| present(f)).map(|path| {
        // Spelled inside the project (a project's relative entry): it must stay there. Elsewhere it was written
        // by the user, or by a project the user trusted.
        let reach = if path.starts_with(&root) { project.clone() } else { Scope::named() };
        Instruction { path: path.clone(), reach }
    }));
    let mut seen = Vec::new();
    all.retain(|file| {
        // A file counts once by where it leads; a refused one claims nothing (it may lead where a file the user
        // named leads).
        let key = project_file::check(&file.path, &file.reach).unwrap_or_else(|_| file.path.clone());
        if seen.contains(&key) {
            return false;
        }
        seen.push(key);
        true
    });
    all
}

/// The files of `files` that are refused, with why (metadata only; nothing is read).
pub fn refused(files: &[Instruction]) -> Vec<(PathBuf, Refusal)> {
    files
        .iter()
        .filter_map(|file| match project_file::check(&file.path, &file.reach) {
            Err(refusal) if refusal.is_guard() => Some((file.path.clone(), refusal)),
            _ => None,
        })
        .collect()
}

/// The instructions section of the system prompt for `files` (refused ones left out).
pub fn section(files: &[Instruction]) -> String {
    let mut out = String::new();
    let mut left_out = Vec::new();
    for file in files {
        let Ok(read) = project_file::read(&file.path, &file.reach, MAX_FILE_BYTES as u64 + 4) else {
            continue;
        };
        let text = String::from_utf8_lossy(&read.bytes);
        let text = floor_char_boundary(text.trim(), MAX_FILE_BYTES);
        if text.is_empty() {
            continue;
        }
        let room = MAX_TOTAL_BYTES.saturating_sub(out.len());
        let shown = file.path.display().to_string();
        let part = SECTION.replace("{{path}}", &shown).replace("{{content}}", text);
        if part.len() <= room {
            out.push_str(&part);
        } else {
            left_out.push(shown);
        }
    }
    if !left_out.is_empty() {
        out.push_str(&format!(
            "\n(Instruction files are capped at {} KB in all; these were left out: {}. Read them if they matter for the task.)\n",
            MAX_TOTAL_BYTES / 1024,
            left_out.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::boundary;

    #[test]
    fn claude_md_counts_only_where_no_agents_md_sits_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "root claude").unwrap();
        std::fs::write(root.join("a/CLAUDE.md"), "a claude").unwrap();
        let global = root.join("global.md");
        std::fs::write(&global, "global").unwrap();
        let extra = root.join("a/extra.md");
        std::fs::write(&extra, "extra").unwrap();
        let found = files(
            &root.join("a/b"),
            Some(&global),
            &[extra.clone(), root.join("missing.md"), root.join("AGENTS.md")],
        );
        let paths: Vec<PathBuf> = found.into_iter().map(|f| f.path).collect();
        assert_eq!(paths, vec![global, root.join("AGENTS.md"), root.join("a/CLAUDE.md"), extra]);
    }

    #[test]
    fn project_files_may_not_lead_out_of_the_git_root_while_the_users_own_entries_may() {
        let dir = tempfile::tempdir().unwrap();
        let base = boundary::resolve(dir.path()).unwrap();
        let root = base.join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(base.join("notes.md"), "outside").unwrap();
        std::fs::write(root.join("AGENTS.md"), "root").unwrap();
        std::os::unix::fs::symlink("../../notes.md", root.join("sub/CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink("../notes.md", root.join("linked.md")).unwrap();
        let configured = [root.join("linked.md"), base.join("notes.md")];
        let found = files(&root.join("sub"), None, &configured);
        let outside = Refusal::Outside { real: base.join("notes.md"), root: root.clone() };
        assert_eq!(
            refused(&found),
            vec![(root.join("sub/CLAUDE.md"), outside.clone()), (root.join("linked.md"), outside)],
            "the chain and an entry spelled inside the project stay inside it"
        );
        let text = section(&found);
        assert_eq!(text.matches("outside").count(), 1, "only the user's own entry is read: {text}");
        assert!(text.contains(&format!("{}", base.join("notes.md").display())), "{text}");
    }

    #[test]
    fn the_total_cap_leaves_files_out_and_says_which() {
        let dir = tempfile::tempdir().unwrap();
        let names = ["one.md", "two.md", "three.md"];
        let paths: Vec<PathBuf> = names.iter().map(|n| dir.path().join(n)).collect();
        for path in &paths {
            std::fs::write(path, "x".repeat(MAX_FILE_BYTES + 10)).unwrap();
        }
        let listed: Vec<Instruction> = paths
            .iter()
            .map(|path| Instruction { path: path.clone(), reach: Scope::within(dir.path()) })
            .collect();
        let text = section(&listed);
        assert!(text.len() <= MAX_TOTAL_BYTES + 300, "{}", text.len());
        assert_eq!(text.matches(&"x".repeat(MAX_FILE_BYTES)).count(), 1);
        assert!(text.ends_with(&format!(
            "these were left out: {}, {}. Read them if they matter for the task.)\n",
            paths[1].display(),
            paths[2].display()
        )));
    }
}
