//! How `read` shows a text: a window of numbered lines (`N<TAB>content`, or `N:hh|content` in hashline mode),
//! long lines clamped, the whole bounded by a byte budget, with a footer that says how to continue.
//!
//! Owns the line window and its footers. Pure.

use crate::builtin::hashline::tags;
use crate::tool::ToolError;

/// Longer lines are cut and end with `...`.
pub const MAX_LINE_LENGTH: usize = 2_000;

/// How each line is labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Labels {
    /// `N<TAB>content`.
    Numbers,
    /// `N:hh|content`: the hash is of the whole line, even when the shown content is clamped.
    Hashes,
}

/// The lines of `text` as `read` counts them.
fn lines_of(text: &str, labels: Labels) -> Vec<&str> {
    match labels {
        Labels::Numbers => text.lines().collect(),
        // The one splitter `hashline_edit` uses too, so numbers always agree.
        Labels::Hashes => tags::split_lines(text),
    }
}

/// Numbered lines `[offset, offset+limit)`, at most `budget` bytes. The flag says whether the whole file was
/// shown.
pub fn window(
    text: &str,
    offset: usize,
    limit: usize,
    budget: usize,
    labels: Labels,
) -> Result<(String, bool), ToolError> {
    let lines = lines_of(text, labels);
    let mut shown = Shown::new(offset, limit, budget, labels);
    for (i, line) in lines.iter().enumerate().skip(offset).take(limit) {
        if !shown.push(i, line) {
            break;
        }
    }
    shown.finish(lines.len())
}

/// The window of lines being written, one line at a time: what [`window`] does over a whole text, and what the
/// streamed read of a large file (`stream`) does without holding it.
pub struct Shown {
    offset: usize,
    limit: usize,
    budget: usize,
    labels: Labels,
    out: String,
    next: usize,
    clamped_any: bool,
    capped: bool,
}

impl Shown {
    pub fn new(offset: usize, limit: usize, budget: usize, labels: Labels) -> Self {
        Self {
            offset,
            limit,
            budget,
            labels,
            out: String::new(),
            next: offset,
            clamped_any: false,
            capped: false,
        }
    }

    /// Whether line `i` (0-based) is still wanted.
    pub fn wants(&self, i: usize) -> bool {
        !self.capped && i >= self.offset && i - self.offset < self.limit
    }

    /// Add line `i`, the next wanted one. False once the byte budget is spent (the footer says where to go on).
    pub fn push(&mut self, i: usize, line: &str) -> bool {
        let clamped = line.chars().count() > MAX_LINE_LENGTH;
        self.clamped_any |= clamped;
        let shown = if clamped {
            let cut: String = line.chars().take(MAX_LINE_LENGTH).collect();
            format!("{cut}...")
        } else {
            line.to_string()
        };
        let entry = match self.labels {
            Labels::Numbers => format!("{}\t{shown}\n", i + 1),
            Labels::Hashes => format!("{}:{}|{shown}\n", i + 1, tags::hash(line)),
        };
        if self.out.len() + entry.len() > self.budget {
            self.out.push_str(&format!(
                "\n(Output capped at {} KB. Use offset={i} to continue reading from line {}.)",
                self.budget / 1024,
                i + 1
            ));
            self.capped = true;
            return false;
        }
        self.out.push_str(&entry);
        self.next = i + 1;
        true
    }

    /// The output for a text of `total` lines, and whether the whole of it was shown.
    pub fn finish(mut self, total: usize) -> Result<(String, bool), ToolError> {
        let offset = self.offset;
        if total == 0 {
            return Ok(("(empty file)".into(), true));
        }
        if offset >= total {
            return Err(ToolError::retry(format!(
                "offset {offset} is beyond the end of the file ({total} lines); use an offset below {total}"
            )));
        }
        if self.capped {
            return Ok((self.out, false));
        }
        let next = self.next;
        if next < total {
            self.out.push_str(&format!(
                "\n(File has {total} lines. Use offset={next} to read beyond line {next}.)"
            ));
            return Ok((self.out, false));
        }
        self.out.push_str(&format!("\n(End of file: {total} lines)"));
        Ok((self.out, offset == 0 && !self.clamped_any))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::truncate;

    fn numbers(text: &str, offset: usize, limit: usize) -> (String, bool) {
        window(text, offset, limit, truncate::MAX_BYTES, Labels::Numbers).unwrap()
    }

    #[test]
    fn lines_are_numbered_from_one_and_windowed_by_offset_and_limit() {
        let text = "a\nb\nc\nd\n";
        assert_eq!(
            numbers(text, 0, 2000),
            ("1\ta\n2\tb\n3\tc\n4\td\n\n(End of file: 4 lines)".to_string(), true)
        );
        assert_eq!(
            numbers(text, 1, 2),
            ("2\tb\n3\tc\n\n(File has 4 lines. Use offset=3 to read beyond line 3.)".to_string(), false)
        );
        assert!(!numbers(text, 1, 10).1, "a read from an offset is partial");
    }

    #[test]
    fn hashline_mode_tags_each_line_with_the_hash_of_the_whole_line() {
        let text = "\u{feff}line one\r\nline two\n\n";
        assert_eq!(
            window(text, 0, 10, truncate::MAX_BYTES, Labels::Hashes).unwrap(),
            ("1:f3|line one\n2:cc|line two\n3:d4|\n\n(End of file: 3 lines)".to_string(), true)
        );
        let long = "x".repeat(2_500);
        let (out, full) = window(&long, 0, 10, truncate::MAX_BYTES, Labels::Hashes).unwrap();
        assert_eq!(
            out,
            format!("1:{}|{}...\n\n(End of file: 1 lines)", tags::hash(&long), "x".repeat(2_000))
        );
        assert!(!full);
    }

    #[test]
    fn long_lines_are_clamped_to_two_thousand_characters() {
        let line = "é".repeat(2_500);
        let (out, full) = numbers(&line, 0, 10);
        assert_eq!(out, format!("1\t{}...\n\n(End of file: 1 lines)", "é".repeat(2_000)));
        assert!(!full, "a clamped line was not seen in full");
    }

    #[test]
    fn an_offset_past_the_end_is_an_error_the_model_can_fix() {
        assert_eq!(
            window("a\nb\n", 5, 10, truncate::MAX_BYTES, Labels::Numbers).unwrap_err(),
            ToolError::retry("offset 5 is beyond the end of the file (2 lines); use an offset below 2")
        );
    }

    #[test]
    fn output_is_capped_at_the_byte_limit_with_a_continuation_hint() {
        let text: String = (0..1_900).map(|i| format!("{i:0>60}\n")).collect();
        let (out, full) = numbers(&text, 0, 2_000);
        assert!(!full);
        assert!(out.len() <= truncate::MAX_BYTES + 100);
        let last = out.lines().last().unwrap();
        assert!(last.starts_with("(Output capped at 50 KB. Use offset="), "{last}");
    }
}
