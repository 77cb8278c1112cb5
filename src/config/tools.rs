//! Tool descriptions from files: `<name>.md` in the user's `~/.config/tinycode/tools/` and in the project's
//! `.tinycode/tools/` replaces the description the model gets for the tool `name`, so a description can be
//! tuned without a rebuild. A project's files are prompt text from the repository, so they count as settings
//! that need trust (`tools.<name>`, see `trust`); the user's own always apply, and a trusted project's win.
//!
//! Owns reading those files. Reads them safely (`regular`: regular files only, capped); a file that cannot be
//! used is skipped with a warning.

use std::collections::BTreeMap;
use std::path::Path;

use crate::workspace::regular;

/// The folder, under `.tinycode/` or the user's tinycode config directory.
pub const TOOLS_DIR: &str = "tools";
/// Larger description files are skipped.
pub const MAX_DESCRIPTION_BYTES: u64 = 16 * 1024;

/// Whether `name` can be a tool's name (`read`, `hashline_edit`, `mcp__server__tool`).
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The descriptions in `dir` (`<name>.md` → text), sorted by name.
pub fn read_dir(dir: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".md")) else {
            continue;
        };
        if !valid_name(name) {
            tracing::warn!(path = %path.display(), "skipping a tool description whose name is not a tool name");
            continue;
        }
        match regular::read(&path, MAX_DESCRIPTION_BYTES) {
            Ok(read) if read.complete => {
                let text = String::from_utf8_lossy(&read.bytes).trim().to_string();
                if !text.is_empty() {
                    found.insert(name.to_string(), text);
                }
            }
            Ok(_) => tracing::warn!(path = %path.display(), "skipping a tool description over 16 KB"),
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "skipping a tool description"),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_files_named_after_tools_are_read_and_the_rest_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("read.md"), "\n  Read files carefully.\n").unwrap();
        std::fs::write(dir.path().join("empty.md"), "  \n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        std::fs::write(dir.path().join("bad name.md"), "x").unwrap();
        std::fs::write(dir.path().join("big.md"), "x".repeat(MAX_DESCRIPTION_BYTES as usize + 1)).unwrap();
        let pipe =
            std::ffi::CString::new(dir.path().join("grep.md").into_os_string().into_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(pipe.as_ptr(), 0o600) }, 0);
        assert_eq!(
            read_dir(dir.path()),
            BTreeMap::from([("read".to_string(), "Read files carefully.".to_string())])
        );
        assert!(read_dir(&dir.path().join("missing")).is_empty());
    }
}
