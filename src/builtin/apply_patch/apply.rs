//! Turning a parsed patch into whole-file changes, in memory and all-or-nothing: every hunk of every file is
//! validated before anything is written. Line endings are preserved per line; inserted lines take the file's
//! first line ending, so CRLF files stay CRLF.
//!
//! Owns the computation; reading and writing belong to the tool.

use std::collections::BTreeMap;

use super::parser::{Chunk, Hunk, Patch};
use super::seek::seek;

/// What the planner knows about a path before the patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Existing {
    Missing,
    Directory,
    Text(String),
}

/// One file-level change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Create or overwrite `path` (as written in the patch).
    Write {
        path: String,
        old: Option<String>,
        new: String,
    },
    Delete {
        path: String,
        old: String,
    },
    /// Update `from` and write the result to `to` (`from == to` unless moved).
    Move {
        from: String,
        to: String,
        old: String,
        new: String,
        to_old: Option<String>,
    },
}

/// Why a patch cannot be applied. Goes back to the model as a retryable tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ApplyError(pub String);

/// A file split into lines and their terminators (`\r\n`, `\n`, `\r`, or `""` for an unterminated last line).
struct Lines<'a> {
    text: Vec<&'a str>,
    ends: Vec<&'a str>,
}

fn split(content: &str) -> Lines<'_> {
    let (mut text, mut ends) = (Vec::new(), Vec::new());
    let bytes = content.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => 2,
            b'\r' | b'\n' => 1,
            _ => {
                i += 1;
                continue;
            }
        };
        text.push(&content[start..i]);
        ends.push(&content[i..i + end]);
        i += end;
        start = i;
    }
    if start < content.len() {
        text.push(&content[start..]);
        ends.push("");
    }
    Lines { text, ends }
}

/// (start line, old length, new lines with their terminators) for one chunk.
type Replacement = (usize, usize, Vec<(String, String)>);

/// Apply `chunks` to `original`; `path` names the file in error messages.
pub fn update(original: &str, path: &str, chunks: &[Chunk]) -> Result<String, ApplyError> {
    let lines = split(original);
    let preferred = lines.ends.iter().find(|e| !e.is_empty()).copied().unwrap_or("\n");
    let mut replacements: Vec<Replacement> = Vec::new();
    let mut index = 0;
    for chunk in chunks {
        if let Some(context) = &chunk.change_context {
            let found = seek(&lines.text, std::slice::from_ref(context), index, false)
                .ok_or_else(|| ApplyError(format!("Failed to find context '{context}' in {path}")))?;
            index = found + 1;
        }
        if chunk.old_lines.is_empty() {
            let new = chunk.new_lines.iter().map(|l| (l.clone(), preferred.to_string())).collect();
            replacements.push((lines.text.len(), 0, new));
            continue;
        }
        let (mut old, mut new) = (&chunk.old_lines[..], &chunk.new_lines[..]);
        let mut found = seek(&lines.text, old, index, chunk.is_end_of_file);
        if found.is_none() && old.last().is_some_and(|l| l.is_empty()) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(|l| l.is_empty()) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines.text, old, index, chunk.is_end_of_file);
        }
        let start = found.ok_or_else(|| {
            ApplyError(format!("Failed to find expected lines in {path}:\n{}", chunk.old_lines.join("\n")))
        })?;
        // Context lines keep their own terminator; everything inserted takes the preferred one.
        let kept: BTreeMap<usize, usize> = chunk.context_line_indices.iter().map(|&(o, n)| (n, o)).collect();
        let new_lines = new
            .iter()
            .enumerate()
            .map(|(n, text)| {
                let end = kept.get(&n).and_then(|&o| lines.ends.get(start + o)).filter(|e| !e.is_empty());
                (text.clone(), end.copied().unwrap_or(preferred).to_string())
            })
            .collect();
        replacements.push((start, old.len(), new_lines));
        index = start + old.len();
    }
    replacements.sort_by_key(|r| r.0);
    let mut out: Vec<(String, String)> =
        lines.text.iter().zip(&lines.ends).map(|(t, e)| (t.to_string(), e.to_string())).collect();
    for (start, len, new) in replacements.into_iter().rev() {
        out.splice(start..start + len, new);
    }
    if let Some(last) = out.last_mut()
        && last.1.is_empty()
    {
        last.1 = preferred.to_string();
    }
    Ok(out.into_iter().map(|(t, e)| t + &e).collect())
}

/// Plan every change of `patch`. `existing(path)` says what a patch path holds now and `display(path)` how to
/// name it in errors (absolute). Hunks touching the same path see each other's results, in order.
pub fn plan(
    patch: &Patch,
    existing: &dyn Fn(&str) -> Existing,
    display: &dyn Fn(&str) -> String,
) -> Result<Vec<Change>, ApplyError> {
    if patch.hunks.is_empty() {
        return Err(ApplyError("No files were modified.".into()));
    }
    let mut overlay: BTreeMap<String, Existing> = BTreeMap::new();
    let state = |overlay: &BTreeMap<String, Existing>, path: &str| {
        overlay.get(path).cloned().unwrap_or_else(|| existing(path))
    };
    let mut changes = Vec::new();
    for hunk in &patch.hunks {
        match hunk {
            Hunk::Add { path, contents } => {
                let old = match state(&overlay, path) {
                    Existing::Text(text) => Some(text),
                    Existing::Directory => {
                        return Err(ApplyError(format!(
                            "Failed to write file {}: it is a directory",
                            display(path)
                        )));
                    }
                    Existing::Missing => None,
                };
                overlay.insert(path.clone(), Existing::Text(contents.clone()));
                changes.push(Change::Write { path: path.clone(), old, new: contents.clone() });
            }
            Hunk::Delete { path } => {
                let Existing::Text(old) = state(&overlay, path) else {
                    return Err(ApplyError(format!("Failed to delete file {}", display(path))));
                };
                overlay.insert(path.clone(), Existing::Missing);
                changes.push(Change::Delete { path: path.clone(), old });
            }
            Hunk::Update { path, move_path, chunks } => {
                let old = match state(&overlay, path) {
                    Existing::Text(text) => text,
                    Existing::Missing => {
                        return Err(ApplyError(format!(
                            "Failed to read file to update {}: No such file or directory (os error 2)",
                            display(path)
                        )));
                    }
                    Existing::Directory => {
                        return Err(ApplyError(format!(
                            "Failed to read file to update {}: Is a directory",
                            display(path)
                        )));
                    }
                };
                let new = update(&old, &display(path), chunks)?;
                let to = move_path.clone().unwrap_or_else(|| path.clone());
                let to_old = match (&move_path, state(&overlay, &to)) {
                    (Some(_), Existing::Text(text)) => Some(text),
                    (Some(_), Existing::Directory) => {
                        return Err(ApplyError(format!(
                            "Failed to write file {}: it is a directory",
                            display(&to)
                        )));
                    }
                    _ => None,
                };
                if move_path.is_some() {
                    overlay.insert(path.clone(), Existing::Missing);
                }
                overlay.insert(to.clone(), Existing::Text(new.clone()));
                changes.push(Change::Move { from: path.clone(), to, old, new, to_old });
            }
        }
    }
    Ok(changes)
}

/// Codex's success summary: `A`, then `M`, then `D` lines, each path as written in the patch.
pub fn summary(changes: &[Change]) -> String {
    let (mut added, mut modified, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    for change in changes {
        match change {
            Change::Write { path, .. } => added.push(format!("A {path}")),
            Change::Move { to, .. } => modified.push(format!("M {to}")),
            Change::Delete { path, .. } => deleted.push(format!("D {path}")),
        }
    }
    let mut lines = vec!["Success. Updated the following files:".to_string()];
    lines.extend(added);
    lines.extend(modified);
    lines.extend(deleted);
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_own_terminators() {
        let lines = split("a\r\nb\rc\nd");
        assert_eq!(lines.text, vec!["a", "b", "c", "d"]);
        assert_eq!(lines.ends, vec!["\r\n", "\r", "\n", ""]);
    }
}
