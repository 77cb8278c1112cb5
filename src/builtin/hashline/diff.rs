//! The line diff `hashline_edit` reports: a unified diff and the changed line ranges of the new text. An edit
//! touches a few lines of what may be a large file, so the common head and tail are matched by plain comparison
//! and only the lines between them go through the diff algorithm; the output is the same as a diff of the whole
//! texts (Myers strips a common head and tail too), at a cost that grows with the change, not with the file.
//!
//! Owns that diff. Pure: no files. Works on texts as `for_diff` prepares them (`\n` endings, final newline).

use std::fmt::Write as _;
use std::ops::Range;

use similar::{Algorithm, DiffOp, DiffTag, capture_diff_slices, group_diff_ops};

/// Two texts split into lines (each with its `\n`) and the operations turning one into the other, in
/// whole-file line numbers.
pub struct LineDiff<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    ops: Vec<DiffOp>,
}

impl<'a> LineDiff<'a> {
    pub fn new(old: &'a str, new: &'a str) -> LineDiff<'a> {
        let old: Vec<&str> = old.split_inclusive('\n').collect();
        let new: Vec<&str> = new.split_inclusive('\n').collect();
        let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
        let tail = old[head..].iter().rev().zip(new[head..].iter().rev()).take_while(|(a, b)| a == b).count();
        let (old_end, new_end) = (old.len() - tail, new.len() - tail);
        let mut ops = Vec::new();
        if head > 0 {
            ops.push(DiffOp::Equal { old_index: 0, new_index: 0, len: head });
        }
        let middle = capture_diff_slices(Algorithm::Myers, &old[head..old_end], &new[head..new_end]);
        ops.extend(middle.into_iter().map(|op| shift(op, head)));
        if tail > 0 {
            ops.push(DiffOp::Equal { old_index: old_end, new_index: new_end, len: tail });
        }
        LineDiff { old, new, ops }
    }

    /// The unified diff with `context` lines around each change, under `--- a`/`+++ b` headers; empty when the
    /// texts are equal.
    pub fn unified(&self, context: usize, a: &str, b: &str) -> String {
        let mut out = String::new();
        for hunk in group_diff_ops(self.ops.clone(), context).iter().filter(|h| !h.is_empty()) {
            if out.is_empty() {
                let _ = write!(out, "--- {a}\n+++ {b}\n");
            }
            let _ = writeln!(out, "{}", similar::udiff::UnifiedHunkHeader::new(hunk));
            for op in hunk {
                let (tag, old, new) = op.as_tag_tuple();
                if matches!(tag, DiffTag::Equal) {
                    self.lines(&mut out, ' ', &self.old[old]);
                    continue;
                }
                self.lines(&mut out, '-', &self.old[old]);
                self.lines(&mut out, '+', &self.new[new]);
            }
        }
        out
    }

    fn lines(&self, out: &mut String, sign: char, lines: &[&str]) {
        for line in lines {
            out.push(sign);
            out.push_str(line);
        }
    }

    /// The ranges of new-text lines (0-based) that differ from the old text; a deletion is an empty range.
    pub fn changed(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.ops.iter().filter(|op| op.tag() != DiffTag::Equal).map(DiffOp::new_range)
    }
}

/// `op` moved down by `by` lines on both sides.
fn shift(op: DiffOp, by: usize) -> DiffOp {
    match op {
        DiffOp::Equal { old_index, new_index, len } => {
            DiffOp::Equal { old_index: old_index + by, new_index: new_index + by, len }
        }
        DiffOp::Delete { old_index, old_len, new_index } => {
            DiffOp::Delete { old_index: old_index + by, old_len, new_index: new_index + by }
        }
        DiffOp::Insert { old_index, new_index, new_len } => {
            DiffOp::Insert { old_index: old_index + by, new_index: new_index + by, new_len }
        }
        DiffOp::Replace { old_index, old_len, new_index, new_len } => {
            DiffOp::Replace { old_index: old_index + by, old_len, new_index: new_index + by, new_len }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use similar::TextDiff;

    fn whole(old: &str, new: &str) -> String {
        TextDiff::from_lines(old, new).unified_diff().context_radius(3).header("a/f", "b/f").to_string()
    }

    #[test]
    fn the_trimmed_diff_equals_a_diff_of_the_whole_texts() {
        let base: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let cases = [
            base.replace("line 20\n", "changed\n"),
            base.replace("line 1\n", ""),
            base.replace("line 40\n", "line 40\nextra\n"),
            base.replace("line 5\n", "five\n").replace("line 30\n", ""),
            base.replace("line 10\n", "line 10\nline 10\n"),
            format!("new head\n{base}"),
            String::new(),
            base.clone(),
        ];
        for new in &cases {
            assert_eq!(LineDiff::new(&base, new).unified(3, "a/f", "b/f"), whole(&base, new), "{new}");
            assert_eq!(LineDiff::new(new, &base).unified(3, "a/f", "b/f"), whole(new, &base), "{new}");
        }
    }

    #[test]
    fn changed_ranges_are_in_new_text_lines() {
        let old = "a\nb\nc\nd\n";
        let ranges: Vec<Range<usize>> = LineDiff::new(old, "a\nB\nc\nd\ne\n").changed().collect();
        assert_eq!(ranges, vec![1..2, 4..5]);
        let deleted: Vec<Range<usize>> = LineDiff::new(old, "a\nd\n").changed().collect();
        assert_eq!(deleted, vec![1..1]);
    }
}
