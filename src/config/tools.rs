//! Tool descriptions from files: `<name>.md` in the user's `~/.config/tinycode/tools/` and in the project's
//! `.tinycode/tools/` replaces the description the model gets for the tool `name`, so a description can be
//! tuned without a rebuild. A project's files are prompt text from the repository, so they count as settings
//! that need trust (`tools.<name>`, see `trust`); the user's own always apply, and a trusted project's win.
//!
//! Owns reading those files, through the one reader of such files (`workspace::project_file`: regular files
//! only, capped, never leading out of the folder the caller names). A file that cannot be used is skipped with a
//! warning; one that was refused is returned so the session can name it to the user.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::workspace::project_file::{self, Scope};

/// The folder, under `.tinycode/` or the user's tinycode config directory.
pub const TOOLS_DIR: &str = "tools";
/// Larger description files are skipped.
pub const MAX_DESCRIPTION_BYTES: u64 = 16 * 1024;

/// Whether `name` can be a tool's name (`read`, `hashline_edit`, `mcp__server__tool`).
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The descriptions in `dir` (`<name>.md` → text), sorted by name, and the files refused (with why); no file
/// may lead out of `reach`.
pub fn read_dir(dir: &Path, reach: &Scope) -> (BTreeMap<String, String>, Vec<(PathBuf, String)>) {
    let mut found = BTreeMap::new();
    let mut refused = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return (found, refused) };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".md")) else {
            continue;
        };
        if !valid_name(name) {
            tracing::warn!(path = %path.display(), "skipping a tool description whose name is not a tool name");
            continue;
        }
        match project_file::read_text(&path, reach, MAX_DESCRIPTION_BYTES) {
            Ok(text) if !text.trim().is_empty() => {
                found.insert(name.to_string(), text.trim().to_string());
            }
            Ok(_) => {}
            Err(refusal) if refusal.is_guard() => refused.push((path, refusal.to_string())),
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "skipping a tool description"),
        }
    }
    refused.sort();
    (found, refused)
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
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "LEAKED").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), dir.path().join("glob.md")).unwrap();
        let reach = Scope::within(dir.path());
        let (found, refused) = read_dir(dir.path(), &reach);
        assert_eq!(found, BTreeMap::from([("read".to_string(), "Read files carefully.".to_string())]));
        let real = crate::workspace::boundary::resolve(&outside.path().join("secret.md")).unwrap();
        let why = format!("it leads to {}, outside {}", real.display(), dir.path().display());
        let fifo = "it is a FIFO (named pipe), not a regular file".to_string();
        assert_eq!(refused, vec![(dir.path().join("glob.md"), why), (dir.path().join("grep.md"), fifo)]);
        assert_eq!(read_dir(&dir.path().join("missing"), &reach), (BTreeMap::new(), vec![]));
    }
}
