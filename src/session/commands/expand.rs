//! Turning a custom command into the prompt the model gets: arguments into placeholders, then `@path` references
//! inlined through the one reader of such files (`workspace::project_file`: inside the project only, links
//! resolved, never secret, special or virtual files, at most [`MAX_FILE_BYTES`] each). A reference that cannot be
//! inlined stays as written for the model to read itself (through its tools, which ask); one that was refused is
//! returned so the session can name it to the user. Shell lines are run by the session, which asks first
//! (`session::slash`).
//!
//! Owns the text transformations. Reads files; runs nothing.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::workspace::project_file::{self, Refusal, Scope};

/// Files larger than this are not inlined.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

static REFERENCE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?:^|\s)@([^\s`'\x22]+)").ok());

/// A command with its references inlined, and the references that were refused (with why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inlined {
    pub text: String,
    pub refused: Vec<(PathBuf, Refusal)>,
}

/// The file an `@path` reference names (relative to `cwd`), where it really is, and its text.
fn inlinable(reference: &str, cwd: &Path, reach: &Scope) -> Option<Result<(PathBuf, String), Refusal>> {
    let reference = reference.trim_end_matches(['.', ',', ';', ':', ')', '!', '?']);
    if reference.is_empty() {
        return None;
    }
    let path = cwd.join(reference);
    let read = project_file::check(&path, reach)
        .and_then(|real| Ok((real, project_file::read_text(&path, reach, MAX_FILE_BYTES)?)));
    match read {
        Ok(found) => Some(Ok(found)),
        Err(refusal) if refusal.is_guard() => Some(Err(refusal)),
        Err(_) => None,
    }
}

/// `text` with the files its `@path` references name appended as `<file>` blocks (each file once); references
/// may not lead out of `project` (the git root, or the session directory outside a repository).
pub fn inline_files(text: &str, cwd: &Path, project: &Path) -> Inlined {
    let mut inlined = Inlined { text: text.to_string(), refused: Vec::new() };
    let Some(re) = REFERENCE.as_ref() else { return inlined };
    let reach = Scope::within(project);
    let mut seen = Vec::new();
    for caps in re.captures_iter(text) {
        let Some(reference) = caps.get(1).map(|m| m.as_str()) else { continue };
        match inlinable(reference, cwd, &reach) {
            Some(Ok((path, content))) if !seen.contains(&path) => {
                let shown = path.display();
                inlined
                    .text
                    .push_str(&format!("\n\n<file path=\"{shown}\">\n{}\n</file>", content.trim_end()));
                seen.push(path);
            }
            Some(Err(refusal)) => {
                let named = cwd.join(reference.trim_end_matches(['.', ',', ';', ':', ')', '!', '?']));
                if !inlined.refused.iter().any(|(p, _)| *p == named) {
                    inlined.refused.push((named, refusal));
                }
            }
            _ => {}
        }
    }
    inlined
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_to_project_files_are_inlined_and_others_left_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("outer.txt");
        std::fs::write(&outer, "outside").unwrap();
        let cwd = dir.path().join("p");
        std::fs::create_dir_all(cwd.join("src")).unwrap();
        std::fs::write(cwd.join("src/a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(cwd.join(".env"), "KEY=1").unwrap();
        std::os::unix::fs::symlink(&outer, cwd.join("link.txt")).unwrap();
        let text = "Review @src/a.rs, then @src/a.rs again; not @.env, @../outer.txt, @link.txt or @missing.rs. me@example.com";
        let real = std::fs::canonicalize(cwd.join("src/a.rs")).unwrap();
        let inlined = inline_files(text, &cwd, &cwd);
        assert_eq!(
            inlined.text,
            format!("{text}\n\n<file path=\"{}\">\nfn a() {{}}\n</file>", real.display())
        );
        let outer = crate::workspace::boundary::resolve(&outer).unwrap();
        let root = cwd.clone();
        assert_eq!(
            inlined.refused,
            vec![
                (
                    cwd.join(".env"),
                    Refusal::Secret {
                        real: real.parent().unwrap().parent().unwrap().join(".env"),
                        kind: "environment file"
                    }
                ),
                (cwd.join("../outer.txt"), Refusal::Outside { real: outer.clone(), root: root.clone() }),
                (cwd.join("link.txt"), Refusal::Outside { real: outer, root }),
            ]
        );
    }
}
