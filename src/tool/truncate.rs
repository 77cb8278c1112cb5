//! Output truncation, seed 000 §8.2: at most [`MAX_LINES`] lines and [`MAX_BYTES`] bytes reach the model.
//!
//! Owns the limits and the marker texts. Cuts are whole lines where possible and always on UTF-8 boundaries:
//! a single line longer than the budget is cut inside the line rather than dropped.
//! Must not do I/O; saving the full text is the registry's job.

/// Maximum output lines.
pub const MAX_LINES: usize = 2_000;
/// Maximum output bytes (50 KB).
pub const MAX_BYTES: usize = 51_200;

/// Which end of the text is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `TruncHead`: drop the head, keep the tail.
    Head,
    /// `TruncTail`: drop the tail, keep the head.
    Tail,
}

/// The largest prefix of `s` that fits in `max` bytes without splitting a character.
pub fn floor_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The largest suffix of `s` that fits in `max` bytes without splitting a character.
fn ceil_char_suffix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

fn fits(text: &str, max_lines: usize, max_bytes: usize) -> bool {
    text.len() <= max_bytes && text.split_inclusive('\n').count() <= max_lines
}

/// Keep whole lines from the front while both budgets allow; cut inside the first line if it alone is too big.
/// Returns the kept text and the number of (possibly partial) lines kept.
fn take_head(text: &str, max_lines: usize, max_bytes: usize) -> (&str, usize) {
    let mut end = 0;
    let mut lines = 0;
    for line in text.split_inclusive('\n') {
        if lines == max_lines || end + line.len() > max_bytes {
            break;
        }
        end += line.len();
        lines += 1;
    }
    if lines == 0 && max_lines > 0 && !text.is_empty() {
        let cut = floor_char_boundary(text, max_bytes);
        return (cut, usize::from(!cut.is_empty()));
    }
    (&text[..end], lines)
}

/// Keep whole lines from the back; cut inside the last line if it alone is too big.
fn take_tail(text: &str, max_lines: usize, max_bytes: usize) -> (&str, usize) {
    let mut start = text.len();
    let mut lines = 0;
    for line in text.split_inclusive('\n').rev() {
        if lines == max_lines || text.len() - start + line.len() > max_bytes {
            break;
        }
        start -= line.len();
        lines += 1;
    }
    if lines == 0 && max_lines > 0 && !text.is_empty() {
        let cut = ceil_char_suffix(text, max_bytes);
        return (cut, usize::from(!cut.is_empty()));
    }
    (&text[start..], lines)
}

/// `Truncate(text, direction)` with the seed's limits. Returns `None` when nothing had to be cut.
pub fn truncate(text: &str, direction: Direction) -> Option<String> {
    truncate_with(text, direction, MAX_LINES, MAX_BYTES)
}

/// [`truncate`] with explicit limits.
pub fn truncate_with(text: &str, direction: Direction, max_lines: usize, max_bytes: usize) -> Option<String> {
    if fits(text, max_lines, max_bytes) {
        return None;
    }
    Some(match direction {
        Direction::Tail => {
            let (kept, lines) = take_head(text, max_lines, max_bytes);
            let removed = text.len() - kept.len();
            format!("{kept}\n... [truncated {removed} bytes, showing first {lines} lines] ...")
        }
        Direction::Head => {
            let (kept, lines) = take_tail(text, max_lines, max_bytes);
            let removed = text.len() - kept.len();
            format!("... [truncated {removed} bytes, showing last {lines} lines] ...\n{kept}")
        }
    })
}

/// `TruncPreview(text)`: the registry's head+tail preview. Half of each budget goes to the head, half to the
/// tail, and a marker between them says how much was dropped. Returns `None` when nothing had to be cut.
pub fn preview(text: &str) -> Option<String> {
    preview_with(text, MAX_LINES, MAX_BYTES)
}

/// [`preview`] with explicit limits.
pub fn preview_with(text: &str, max_lines: usize, max_bytes: usize) -> Option<String> {
    if fits(text, max_lines, max_bytes) {
        return None;
    }
    let (head, head_lines) = take_head(text, max_lines / 2, max_bytes / 2);
    let rest = &text[head.len()..];
    let (tail, tail_lines) = take_tail(rest, max_lines - max_lines / 2, max_bytes - max_bytes / 2);
    let removed = text.len() - head.len() - tail.len();
    let head_sep = if head.is_empty() || head.ends_with('\n') { "" } else { "\n" };
    Some(format!(
        "{head}{head_sep}... [truncated {removed} bytes, showing first {head_lines} and last {tail_lines} lines] ...\n{tail}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (0..n).map(|i| format!("line{i}\n")).collect()
    }

    #[test]
    fn text_within_both_limits_is_left_alone() {
        assert_eq!(truncate("a\nb\n", Direction::Tail), None);
        assert_eq!(preview(&numbered(2_000)), None);
    }

    #[test]
    fn tail_truncation_keeps_the_head_and_names_what_was_dropped() {
        let text = numbered(10);
        let cut = truncate_with(&text, Direction::Tail, 3, 1_000).unwrap();
        assert_eq!(cut, "line0\nline1\nline2\n\n... [truncated 42 bytes, showing first 3 lines] ...");
    }

    #[test]
    fn head_truncation_keeps_the_tail_and_names_what_was_dropped() {
        let text = numbered(10);
        let cut = truncate_with(&text, Direction::Head, 2, 1_000).unwrap();
        assert_eq!(cut, "... [truncated 48 bytes, showing last 2 lines] ...\nline8\nline9\n");
    }

    #[test]
    fn preview_keeps_head_and_tail_around_one_marker() {
        let text = numbered(2_001);
        let cut = preview(&text).unwrap();
        let expected_head = numbered(1_000);
        let expected_tail: String = (1_001..2_001).map(|i| format!("line{i}\n")).collect();
        assert_eq!(
            cut,
            format!(
                "{expected_head}... [truncated 9 bytes, showing first 1000 and last 1000 lines] ...\n{expected_tail}"
            )
        );
    }

    #[test]
    fn preview_applies_the_byte_limit_to_few_long_lines() {
        let line = "x".repeat(30_000);
        let text = format!("{line}\n{line}\n{line}\n");
        let cut = preview(&text).unwrap();
        assert!(cut.len() <= MAX_BYTES + 100, "{}", cut.len());
        assert!(cut.contains("... [truncated "));
    }

    #[test]
    fn a_single_overlong_line_is_cut_inside_rather_than_dropped() {
        let text = "a".repeat(1_000);
        assert_eq!(
            truncate_with(&text, Direction::Tail, 10, 100).unwrap(),
            format!("{}\n... [truncated 900 bytes, showing first 1 lines] ...", "a".repeat(100))
        );
        let cut = preview_with(&text, 10, 100).unwrap();
        assert_eq!(
            cut,
            format!(
                "{}\n... [truncated 900 bytes, showing first 1 and last 1 lines] ...\n{}",
                "a".repeat(50),
                "a".repeat(50)
            )
        );
    }

    #[test]
    fn cuts_never_split_a_multibyte_character() {
        let text = "😀".repeat(100); // 400 bytes
        let cut = truncate_with(&text, Direction::Tail, 10, 10).unwrap();
        assert!(cut.starts_with("😀😀\n"), "{cut}");
        let cut = truncate_with(&text, Direction::Head, 10, 10).unwrap();
        assert!(cut.ends_with("\n😀😀"), "{cut}");
        let cut = preview_with(&text, 10, 21).unwrap();
        assert!(cut.starts_with("😀😀\n... [truncated 384 bytes"), "{cut}");
    }
}
