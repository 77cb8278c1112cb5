//! What the file-changing tools (`write`, `edit`, `apply_patch`) share: where they may write (resolved through
//! every symlink, inside the workspace, regular files only), the stale-write check right before writing, the
//! secret veto, and how a change is located and named.
//!
//! Owns those checks. Must not write files (that is `workspace::files`).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::display::Content;
use crate::tool::{Context, ToolError};
use crate::workspace::files::{Stamp, Written};
use crate::workspace::span::Span;
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

/// How many line breaks `bytes` holds (a count of lines to add).
pub fn line_of_bytes(bytes: &[u8]) -> u32 {
    u32::try_from(memchr::memchr_iter(b'\n', bytes).count()).unwrap_or(u32::MAX)
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
    unchanged_since_stamped(ctx, path, seen, None).await
}

/// [`unchanged_since_preview`] for a text read with its [`Stamp`]: an unchanged stamp spares reading the file
/// again.
pub async fn unchanged_since_stamped(
    ctx: &Context,
    path: &Path,
    seen: Option<&str>,
    stamp: Option<Stamp>,
) -> Result<(), ToolError> {
    if ctx.files.holds_stamped(path, seen, stamp).await? {
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
pub fn diff_content<'a>(path: &Path, old: Option<&'a str>, new: &'a str, limit: usize) -> Vec<Content> {
    let whole = |old: Option<&str>| Content::Diff {
        path: path.to_path_buf(),
        old_text: old.map(str::to_string),
        new_text: new.to_string(),
    };
    let Some(old_text) = old else { return vec![whole(None)] };
    if old_text.len() + new.len() <= limit {
        return vec![whole(old)];
    }
    // Lines as `split('\n')` gives them, found in place: a huge file is not split into a list, and only the
    // bytes around the change are walked line by line.
    let lines = Lines::of(old_text, new);
    let same_head = lines.same_head;
    let room = lines.old_count.min(lines.new_count) - same_head;
    let same_tail = lines.same_tail(old_text, new, room);
    let first = same_head.saturating_sub(DIFF_CONTEXT_LINES);
    let side = |text: &'a str, count: usize, tail: (usize, usize)| {
        let end = (count - same_tail + DIFF_CONTEXT_LINES).min(count);
        let start = line_start(text.as_bytes(), lines.head, first);
        let stop = if end >= count { text.len() } else { line_start(text.as_bytes(), tail, end) - 1 };
        Side { end, count, text: if first >= end { "" } else { &text[start..stop] } }
    };
    let size = new.len().max(old_text.len());
    let (old_side, new_side) =
        (side(old_text, lines.old_count, lines.old_tail), side(new, lines.new_count, lines.new_tail));
    bounded(path, size, first, old_side, new_side, limit)
}

/// The diff a write's result shows: the preview's (`shown`) again, unless a formatter changed the text written.
pub fn diff_after_write(
    shown: &[Content],
    path: &Path,
    old: Option<&str>,
    written: &Written<'_>,
    limit: usize,
) -> Vec<Content> {
    match &written.content {
        Cow::Borrowed(_) => shown.to_vec(),
        Cow::Owned(formatted) => diff_content(path, old, formatted, limit),
    }
}

/// One side of a bounded diff: lines `[first, end)` of its `count` lines, and their text.
struct Side<'a> {
    end: usize,
    count: usize,
    text: &'a str,
}

/// The bounded diff of a file of `size` bytes from line `first` (0-based) on: the note saying what is shown, and
/// the two sides, each cut to half the limit.
fn bounded(path: &Path, size: usize, first: usize, old: Side, new: Side, limit: usize) -> Vec<Content> {
    let ((old_region, old_cut), (new_region, new_cut)) = (cut(old.text, limit / 2), cut(new.text, limit / 2));
    let mut note = format!(
        "The file is {:.1} MB, so only the changed region is shown: lines {}–{} of {} before, {}–{} of {} after ({} lines of context).",
        size as f64 / 1_048_576.0,
        first + 1,
        old.end,
        old.count,
        first + 1,
        new.end,
        new.count,
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

/// Where two versions of a text part, in lines as `split('\n')` numbers them from 0, with anchors to walk from:
/// an anchor is (a line, the byte it starts at); line `count` "starts" one past the end.
struct Lines {
    old_count: usize,
    new_count: usize,
    /// Leading lines the two share.
    same_head: usize,
    /// The last line start inside the common prefix: the same line and byte in both texts.
    head: (usize, usize),
    /// The first line start inside the common suffix, in each text.
    old_tail: (usize, usize),
    new_tail: (usize, usize),
    /// Lines that start inside the common suffix (shared at the end).
    tail_counted: usize,
}

impl Lines {
    fn of(old: &str, new: &str) -> Lines {
        let (a, b) = (old.as_bytes(), new.as_bytes());
        let span = Span::between(a, b);
        // Lines ending inside the common prefix are shared; the walk goes on from the last of them.
        let head_start = memchr::memrchr(b'\n', &a[..span.prefix]).map_or(0, |i| i + 1);
        let head_counted = memchr::memchr_iter(b'\n', &a[..head_start]).count();
        let same_head = head_counted
            + old[head_start..]
                .split('\n')
                .zip(new[head_start..].split('\n'))
                .take_while(|(x, y)| x == y)
                .count();
        // Lines starting inside the common suffix are shared; the backward walk goes on from the first of them.
        let suffix_start = a.len() - span.suffix;
        let old_first =
            memchr::memchr(b'\n', &a[suffix_start..]).map_or(a.len() + 1, |i| suffix_start + i + 1);
        let new_first = old_first + b.len() - a.len();
        let tail_counted =
            if old_first > a.len() { 0 } else { memchr::memchr_iter(b'\n', &a[old_first - 1..]).count() };
        let middle = |text: &[u8], end: usize| memchr::memchr_iter(b'\n', &text[head_start..end - 1]).count();
        let old_count = head_counted + middle(a, old_first) + tail_counted + 1;
        let new_count = head_counted + middle(b, new_first) + tail_counted + 1;
        Lines {
            old_count,
            new_count,
            same_head,
            head: (head_counted, head_start),
            old_tail: (old_count - tail_counted, old_first),
            new_tail: (new_count - tail_counted, new_first),
            tail_counted,
        }
    }

    /// Trailing lines the two share, at most `room`.
    fn same_tail(&self, old: &str, new: &str, room: usize) -> usize {
        if self.tail_counted >= room {
            return room;
        }
        let (old_end, new_end) = (self.old_tail.1 - 1, self.new_tail.1 - 1);
        let walked = old[..old_end.min(old.len())]
            .rsplit('\n')
            .zip(new[..new_end.min(new.len())].rsplit('\n'))
            .take(room - self.tail_counted)
            .take_while(|(x, y)| x == y)
            .count();
        self.tail_counted + walked
    }
}

/// The byte where line `target` starts in `text`, walking from `anchor` (a line and the byte it starts at) one
/// line break at a time; one past the end for a line after the last.
pub fn line_start(text: &[u8], anchor: (usize, usize), target: usize) -> usize {
    let (mut line, mut at) = anchor;
    while line < target {
        match text.get(at..).and_then(|rest| memchr::memchr(b'\n', rest)) {
            Some(i) => at += i + 1,
            None => return text.len() + 1,
        }
        line += 1;
    }
    while line > target {
        // `at - 1` is the line break that ends the line before.
        at = memchr::memrchr(b'\n', &text[..at - 1]).map_or(0, |i| i + 1);
        line -= 1;
    }
    at
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
        // Larger than the span's comparison blocks, changed near block edges and at the ends.
        let big: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
        let big_cases = [
            big.replacen("line 455\n", "changed\n", 1),
            big.replacen("line 2999\n", "", 1),
            format!("{big}tail"),
            big.replacen("line 1\n", "", 1),
            big.replacen("line 1000\n", "line 1000\nline 1000\n", 1),
            big.replacen("line 7\n", "x\n", 1).replacen("line 2900\n", "y\n", 1),
            big.replace('\n', "\r\n"),
            big.trim_end().to_string(),
        ];
        for new in big_cases {
            let shown = diff_content(Path::new("/w/a"), Some(&big), &new, 20_000);
            let Content::Diff { old_text, new_text, .. } = &shown[1] else { panic!("{shown:?}") };
            let (old_region, new_region) = region_from_lists(&big, &new);
            let cut_to = |t: String| cut(&t, 10_000).0;
            assert_eq!(
                (old_text.clone().unwrap(), new_text.clone()),
                (cut_to(old_region), cut_to(new_region))
            );
            let Content::Text(note) = &shown[0] else { panic!("{shown:?}") };
            let (a, b): (Vec<&str>, Vec<&str>) = (big.split('\n').collect(), new.split('\n').collect());
            let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
            let first = head.saturating_sub(DIFF_CONTEXT_LINES) + 1;
            let end = |l: &[&str]| (l.len() - tail + DIFF_CONTEXT_LINES).min(l.len());
            let lines = format!(
                "lines {first}–{} of {} before, {first}–{} of {} after",
                end(&a),
                a.len(),
                end(&b),
                b.len()
            );
            assert!(note.contains(&lines), "{note} / {lines}");
        }
    }

    /// The bounded diff as the first version computed it, from lists of lines.
    fn bounded_from_lists(old: &str, new: &str, limit: usize) -> Vec<Content> {
        let (a, b): (Vec<&str>, Vec<&str>) = (old.split('\n').collect(), new.split('\n').collect());
        let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
        let first = head.saturating_sub(DIFF_CONTEXT_LINES);
        let end = |l: &[&str]| (l.len() - tail + DIFF_CONTEXT_LINES).min(l.len());
        let (old_text, new_text) =
            (a[first.min(end(&a))..end(&a)].join("\n"), b[first.min(end(&b))..end(&b)].join("\n"));
        let old_side = Side { end: end(&a), count: a.len(), text: &old_text };
        let new_side = Side { end: end(&b), count: b.len(), text: &new_text };
        bounded(Path::new("/w/a"), new.len().max(old.len()), first, old_side, new_side, limit)
    }

    #[test]
    fn the_bounded_diff_is_what_lists_of_lines_give_for_thousands_of_random_edits() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as usize
        };
        let random_text = |next: &mut dyn FnMut(u64) -> usize, len: usize| -> String {
            (0..len).map(|_| ['a', 'b', '\n'][next(3)]).collect()
        };
        for _ in 0..5000 {
            let len = next(40);
            let old = random_text(&mut next, len);
            // Mostly small edits of the old text, sometimes an unrelated text.
            let new = if next(5) == 0 {
                let len = next(40);
                random_text(&mut next, len)
            } else {
                let at = next(old.len() as u64 + 1);
                let removed = next((old.len() - at) as u64 + 1).min(4);
                let count = next(5);
                let inserted = random_text(&mut next, count);
                format!("{}{inserted}{}", &old[..at], &old[at + removed..])
            };
            if old.len() + new.len() < 2 {
                continue;
            }
            let limit = old.len() + new.len() - 1;
            assert_eq!(
                diff_content(Path::new("/w/a"), Some(&old), &new, limit),
                bounded_from_lists(&old, &new, limit),
                "{old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn a_line_start_is_found_walking_either_way_from_any_anchor() {
        let text = "zero\none\n\nthree\nfour";
        // Line k starts after the k-th line break; line 5 (one past the last) one past the end.
        let starts = [0, 5, 9, 10, 16, text.len() + 1];
        for (anchor_line, &anchor_byte) in starts.iter().enumerate() {
            for (target, &expected) in starts.iter().enumerate() {
                assert_eq!(
                    line_start(text.as_bytes(), (anchor_line, anchor_byte), target),
                    expected,
                    "from line {anchor_line} to line {target}"
                );
            }
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
