//! Turning a custom command into the prompt the model gets: arguments into placeholders, then `@path` references
//! inlined (files inside the session directory only, never secret files, at most [`MAX_FILE_BYTES`] each; a
//! reference that cannot be inlined stays as written for the model to read itself). Shell lines are run by the
//! session, which asks first (`session::slash`).
//!
//! Owns the text transformations. Reads files; runs nothing.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use crate::shell::classify::is_secret_path;

/// Files larger than this are not inlined.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

static REFERENCE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?:^|\s)@([^\s`'\x22]+)").ok());

/// The file an `@path` reference may inline, with its text.
fn inlinable(reference: &str, cwd: &Path) -> Option<(String, String)> {
    let reference = reference.trim_end_matches(['.', ',', ';', ':', ')', '!', '?']);
    if reference.is_empty() || is_secret_path(reference) {
        return None;
    }
    let root = std::fs::canonicalize(cwd).ok()?;
    let path = std::fs::canonicalize(cwd.join(reference)).ok()?;
    if !path.starts_with(&root) || !path.is_file() || is_secret_path(&path.display().to_string()) {
        return None;
    }
    // Only a regular file, never more than the cap: `is_file` above may be stale, and a size can lie.
    let read = crate::workspace::regular::read(&path, MAX_FILE_BYTES).ok().filter(|read| read.complete)?;
    let text = String::from_utf8(read.bytes).ok()?;
    Some((path.display().to_string(), text))
}

/// `text` with the files its `@path` references name appended as `<file>` blocks (each file once).
pub fn inline_files(text: &str, cwd: &Path) -> String {
    let Some(re) = REFERENCE.as_ref() else { return text.to_string() };
    let mut out = text.to_string();
    let mut seen = Vec::new();
    for caps in re.captures_iter(text) {
        let Some(reference) = caps.get(1).map(|m| m.as_str()) else { continue };
        let Some((path, content)) = inlinable(reference, cwd) else { continue };
        if seen.contains(&path) {
            continue;
        }
        out.push_str(&format!("\n\n<file path=\"{path}\">\n{}\n</file>", content.trim_end()));
        seen.push(path);
    }
    out
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
        assert_eq!(
            inline_files(text, &cwd),
            format!("{text}\n\n<file path=\"{}\">\nfn a() {{}}\n</file>", real.display())
        );
    }
}
