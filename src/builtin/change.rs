//! What the file-changing tools (`write`, `edit`, `apply_patch`) share: where they may write (resolved through
//! every symlink, inside the workspace, regular files only), the stale-write check right before writing, the
//! secret veto, and how a change is located and named.
//!
//! Owns those checks. Must not write files (that is `workspace::files`).

use std::path::{Path, PathBuf};

use crate::display::Content;
use crate::tool::{Context, ToolError};
use crate::workspace::{regular, secrets};

/// `path` relative to the session directory when it is inside it, for titles and summaries.
pub fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// The 1-based line holding byte `offset` of `text`.
pub fn line_of(text: &str, offset: usize) -> u32 {
    let offset = offset.min(text.len());
    // memchr's count is vectorised; a byte filter is not in this size-optimised build (11 ms on 5 MB).
    u32::try_from(memchr::memchr_iter(b'\n', &text.as_bytes()[..offset]).count() + 1).unwrap_or(u32::MAX)
}

/// The first 1-based line where `old` and `new` differ (1 for a new file).
pub fn first_changed_line(old: Option<&str>, new: &str) -> u32 {
    let Some(old) = old else { return 1 };
    let same = old.split('\n').zip(new.split('\n')).take_while(|(a, b)| a == b).count();
    u32::try_from(same + 1).unwrap_or(u32::MAX)
}

/// Refuse writes that would put a new secret into a file.
pub fn veto_secrets(path: &Path, old: &str, new: &str) -> Result<(), ToolError> {
    let kinds = secrets::introduced(old, new);
    if kinds.is_empty() {
        return Ok(());
    }
    Err(ToolError::retry(format!(
        "Refusing to write {}: the new content contains what looks like a {}. Secrets must not be written into files by the agent; reference an environment variable instead and let the user add the value.",
        path.display(),
        kinds.join(" and a ")
    )))
}

/// The path a file-changing tool may write: every symlink resolved (the ask and the write use the real path),
/// inside the workspace, and a regular file if it exists (a FIFO, socket or device is never opened).
pub async fn writable(ctx: &Context, raw: &str) -> Result<PathBuf, ToolError> {
    let path = ctx.files.check_boundary(&ctx.resolve(raw))?;
    match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.is_dir() => {
            Err(ToolError::retry(format!("{} is a directory, not a file.", path.display())))
        }
        Ok(meta) => match regular::irregular_kind(&meta) {
            Some(kind) => Err(ToolError::retry(format!(
                "{} is {kind}, not a regular file. Only regular files can be changed.",
                path.display()
            ))),
            None => Ok(path),
        },
        Err(_) => Ok(path),
    }
}

/// Check, right before writing, that `path` still holds what the preview saw (the user may take a while to
/// approve, and the file may change meanwhile).
pub async fn unchanged_since_preview(
    ctx: &Context,
    path: &Path,
    seen: Option<&str>,
) -> Result<(), ToolError> {
    if ctx.files.holds(path, seen).await? {
        return Ok(());
    }
    Err(ToolError::retry(format!(
        "{} changed while the change was waiting for approval. Read it again and redo the change.",
        path.display()
    )))
}

/// Lines of unchanged context kept around the changed region of a bounded diff.
const DIFF_CONTEXT_LINES: usize = 3;

/// How a change to `path` is shown: the whole-file diff when old and new text together fit in `limit` bytes,
/// otherwise a bounded diff (the lines from the first to the last change, with context) and a note saying so,
/// so a small edit to a huge file costs the editor, the wire and the database kilobytes, not megabytes.
pub fn diff_content(path: &Path, old: Option<&str>, new: &str, limit: usize) -> Vec<Content> {
    let whole = |old: Option<&str>| Content::Diff {
        path: path.to_path_buf(),
        old_text: old.map(str::to_string),
        new_text: new.to_string(),
    };
    let Some(old_text) = old else { return vec![whole(None)] };
    if old_text.len() + new.len() <= limit {
        return vec![whole(old)];
    }
    // Lines as `split('\n')` gives them, compared in place: a huge file is not split into a list.
    let (old_count, new_count) = (line_count(old_text), line_count(new));
    let same_head = old_text.split('\n').zip(new.split('\n')).take_while(|(a, b)| a == b).count();
    let room = old_count.min(new_count) - same_head;
    let same_tail =
        old_text.rsplit('\n').zip(new.rsplit('\n')).take(room).take_while(|(a, b)| a == b).count();
    let first = same_head.saturating_sub(DIFF_CONTEXT_LINES);
    let region = |text: &str, count: usize| {
        let last = (count - same_tail + DIFF_CONTEXT_LINES).min(count);
        (last, cut(lines_between(text, first, last), limit / 2))
    };
    let ((old_end, (old_region, old_cut)), (new_end, (new_region, new_cut))) =
        (region(old_text, old_count), region(new, new_count));
    let mut note = format!(
        "The file is {:.1} MB, so only the changed region is shown: lines {}–{} of {} before, {}–{} of {} after ({} lines of context).",
        new.len().max(old_text.len()) as f64 / 1_048_576.0,
        first + 1,
        old_end,
        old_count,
        first + 1,
        new_end,
        new_count,
        DIFF_CONTEXT_LINES
    );
    if old_cut || new_cut {
        note.push_str(
            " The region itself is larger than the diff limit and was cut; read the file for the rest.",
        );
    }
    vec![
        Content::Text(note),
        Content::Diff { path: path.to_path_buf(), old_text: Some(old_region), new_text: new_region },
    ]
}

/// The number of lines `split('\n')` gives.
fn line_count(text: &str) -> usize {
    memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1
}

/// Lines `[first, last)` of `text` (as `split('\n')` numbers them from 0) joined by `\n`, borrowed.
fn lines_between(text: &str, first: usize, last: usize) -> &str {
    if first >= last {
        return "";
    }
    let mut newlines = memchr::memchr_iter(b'\n', text.as_bytes());
    let start = if first == 0 { 0 } else { newlines.nth(first - 1).map_or(text.len(), |i| i + 1) };
    let end = newlines.nth(last - first - 1).unwrap_or(text.len());
    &text[start..end]
}

/// `text` cut to at most `limit` bytes at a character boundary, and whether it was cut.
fn cut(text: &str, limit: usize) -> (String, bool) {
    if text.len() <= limit {
        return (text.to_string(), false);
    }
    let end = (0..=limit).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    (text[..end].to_string(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_within_the_limit_is_shown_as_the_whole_file() {
        let shown = diff_content(Path::new("/w/a"), Some("a\nb\n"), "a\nc\n", 100);
        assert_eq!(
            shown,
            vec![Content::Diff {
                path: "/w/a".into(),
                old_text: Some("a\nb\n".into()),
                new_text: "a\nc\n".into()
            }]
        );
        let created = diff_content(Path::new("/w/a"), None, &"x".repeat(500), 100);
        assert_eq!(
            created,
            vec![Content::Diff { path: "/w/a".into(), old_text: None, new_text: "x".repeat(500) }]
        );
    }

    #[test]
    fn a_change_over_the_limit_is_shown_as_its_region_with_context_and_a_note() {
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 10\n", "line ten\nline ten and a half\n");
        let shown = diff_content(Path::new("/w/a"), Some(&old), &new, 200);
        assert_eq!(
            shown,
            vec![
                Content::Text(
                    "The file is 0.0 MB, so only the changed region is shown: lines 7–13 of 21 before, 7–14 of 22 after (3 lines of context).".into()
                ),
                Content::Diff {
                    path: "/w/a".into(),
                    old_text: Some("line 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13".into()),
                    new_text: "line 7\nline 8\nline 9\nline ten\nline ten and a half\nline 11\nline 12\nline 13".into(),
                },
            ]
        );
    }

    /// The region as the first version computed it, from lists of lines.
    fn region_from_lists(old: &str, new: &str) -> (String, String) {
        let (a, b): (Vec<&str>, Vec<&str>) = (old.split('\n').collect(), new.split('\n').collect());
        let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
        let first = head.saturating_sub(DIFF_CONTEXT_LINES);
        let part = |l: &[&str]| l[first..(l.len() - tail + DIFF_CONTEXT_LINES).min(l.len())].join("\n");
        (part(&a), part(&b))
    }

    #[test]
    fn the_region_is_found_in_place_as_it_was_from_lists_of_lines() {
        let base: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let cases = [
            base.replacen("line 1\n", "first\n", 1),
            base.replace("line 30\n", "last\n"),
            format!("{base}appended\n"),
            base.replace("line 15\n", ""),
            base.trim_end().to_string(),
            format!("\n{base}"),
            base.replace("line 3\n", "x\n").replace("line 28\n", "y\n"),
            "only\n".to_string(),
        ];
        for new in cases {
            let shown = diff_content(Path::new("/w/a"), Some(&base), &new, 200);
            let Content::Diff { old_text, new_text, .. } = &shown[1] else { panic!("{shown:?}") };
            let (old_region, new_region) = region_from_lists(&base, &new);
            let cut_to = |t: String| cut(&t, 100).0;
            assert_eq!(
                (old_text.clone().unwrap(), new_text.clone()),
                (cut_to(old_region), cut_to(new_region)),
                "{new:?}"
            );
        }
        for (first, last) in [(0, 0), (0, 1), (2, 5), (29, 31), (30, 31)] {
            let lines: Vec<&str> = base.split('\n').collect();
            assert_eq!(lines_between(&base, first, last), lines[first..last].join("\n"), "{first}..{last}");
        }
    }

    #[test]
    fn a_region_larger_than_the_limit_is_cut_and_says_so() {
        let old = "é".repeat(100);
        let new = "ü".repeat(100);
        let shown = diff_content(Path::new("/w/a"), Some(&old), &new, 51);
        assert_eq!(
            shown,
            vec![
                Content::Text(
                    "The file is 0.0 MB, so only the changed region is shown: lines 1–1 of 1 before, 1–1 of 1 after (3 lines of context). The region itself is larger than the diff limit and was cut; read the file for the rest.".into()
                ),
                Content::Diff { path: "/w/a".into(), old_text: Some("é".repeat(12)), new_text: "ü".repeat(12) },
            ]
        );
    }
}
