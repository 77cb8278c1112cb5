//! Instruction files for the system prompt: the user's global `AGENTS.md` (`~/.config/tinycode/AGENTS.md`), then
//! the project's from the git root down to the session directory (`AGENTS.md`, or `CLAUDE.md` where no `AGENTS.md`
//! sits beside it), then the files named by `instructions = [...]` in the configuration. Each file is cut at
//! [`MAX_FILE_BYTES`] and all of them together at [`MAX_TOTAL_BYTES`]; what the cap left out is named in a note, so
//! the model knows to read it if it matters.
//!
//! Owns which files count and the caps. Reads files; nothing else.

use std::path::{Path, PathBuf};

use crate::extensions::project_dirs;
use crate::tool::truncate::floor_char_boundary;

const SECTION: &str = include_str!("prompts/agents_md.md");
/// Larger instruction files are cut so they cannot crowd out the conversation.
pub const MAX_FILE_BYTES: usize = 32 * 1024;
/// All instruction files together.
pub const MAX_TOTAL_BYTES: usize = 64 * 1024;

/// The project's instruction files for `cwd`, outermost first.
pub fn project_files(cwd: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = project_dirs(cwd)
        .into_iter()
        .filter_map(|dir| {
            let agents = dir.join("AGENTS.md");
            let claude = dir.join("CLAUDE.md");
            if agents.is_file() { Some(agents) } else { claude.is_file().then_some(claude) }
        })
        .collect();
    files.reverse();
    files
}

/// Every instruction file that applies, in prompt order, each once.
pub fn files(cwd: &Path, global: Option<&Path>, configured: &[PathBuf]) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = global.filter(|g| g.is_file()).map(Path::to_path_buf).into_iter().collect();
    all.extend(project_files(cwd));
    all.extend(configured.iter().filter(|f| f.is_file()).cloned());
    let mut seen = Vec::new();
    all.retain(|file| {
        let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
        if seen.contains(&key) {
            return false;
        }
        seen.push(key);
        true
    });
    all
}

/// The instructions section of the system prompt for `files`.
pub fn section(files: &[PathBuf]) -> String {
    let mut out = String::new();
    let mut left_out = Vec::new();
    for file in files {
        // Never a plain read: a hostile repository's AGENTS.md may be a FIFO or a link into /proc.
        let Ok(read) = crate::workspace::regular::read(file, MAX_FILE_BYTES as u64 + 4) else { continue };
        let text = String::from_utf8_lossy(&read.bytes);
        let text = floor_char_boundary(text.trim(), MAX_FILE_BYTES);
        if text.is_empty() {
            continue;
        }
        let room = MAX_TOTAL_BYTES.saturating_sub(out.len());
        let part = SECTION.replace("{{path}}", &file.display().to_string()).replace("{{content}}", text);
        if part.len() <= room {
            out.push_str(&part);
        } else {
            left_out.push(file.display().to_string());
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
        assert_eq!(
            files(
                &root.join("a/b"),
                Some(&global),
                &[extra.clone(), root.join("missing.md"), root.join("AGENTS.md")]
            ),
            vec![global, root.join("AGENTS.md"), root.join("a/CLAUDE.md"), extra]
        );
    }

    #[test]
    fn the_total_cap_leaves_files_out_and_says_which() {
        let dir = tempfile::tempdir().unwrap();
        let names = ["one.md", "two.md", "three.md"];
        let paths: Vec<PathBuf> = names.iter().map(|n| dir.path().join(n)).collect();
        for path in &paths {
            std::fs::write(path, "x".repeat(MAX_FILE_BYTES + 10)).unwrap();
        }
        let text = section(&paths);
        assert!(text.len() <= MAX_TOTAL_BYTES + 300, "{}", text.len());
        assert_eq!(text.matches(&"x".repeat(MAX_FILE_BYTES)).count(), 1);
        assert!(text.ends_with(&format!(
            "these were left out: {}, {}. Read them if they matter for the task.)\n",
            paths[1].display(),
            paths[2].display()
        )));
    }
}
