//! The edit itself, on text: the cascade's acceptance rule (first candidate that occurs exactly once, or every
//! occurrence with `replace_all`), plus the tool-level rules around it: BOM kept, CRLF files edited in CRLF,
//! an empty `old_string` rewriting the whole file, identical strings refused, ambiguity reported with a count,
//! and a did-you-mean when nothing matches.
//!
//! Owns text transformation only; no I/O.

use super::budget::Budget;
use super::levenshtein::Pattern;
use super::replacers::Strategy;

const BOM: char = '\u{feff}';

/// Why an edit cannot be made. Every variant goes back to the model as a retryable tool error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    Identical,
    NotFound { hint: Option<String> },
    Ambiguous { count: usize },
}

impl EditError {
    pub fn message(&self, path: &str) -> String {
        match self {
            EditError::Identical => "No changes to apply: old_string and new_string are identical.".into(),
            EditError::NotFound { hint } => {
                let mut message = format!(
                    "Could not find old_string in {path}. It must match the file's text, including indentation; re-read the file and copy the lines exactly."
                );
                if let Some(hint) = hint {
                    message.push_str("\n\n");
                    message.push_str(hint);
                }
                message
            }
            EditError::Ambiguous { count } => format!(
                "Found {count} matches for old_string in {path}. Include more surrounding lines to make the match unique, or set replace_all to true to change every occurrence."
            ),
        }
    }
}

/// A successful edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The whole new file text, BOM and line endings preserved.
    pub content: String,
    /// `None` when an empty `old_string` rewrote the whole file.
    pub strategy: Option<Strategy>,
    /// How many occurrences were replaced.
    pub count: usize,
    /// Byte offset (in `content`) where the first replacement starts.
    pub offset: usize,
    /// Length in bytes of the first inserted replacement.
    pub inserted_len: usize,
}

/// The replacement cascade on `content` (which has no BOM and consistent line endings), within the default
/// [`Budget`].
pub fn replace(content: &str, old: &str, new: &str, replace_all: bool) -> Result<Edited, EditError> {
    replace_within(content, old, new, replace_all, &Budget::new(None))
}

/// [`replace`] with the caller's budget (and cancellation check).
pub fn replace_within(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    budget: &Budget,
) -> Result<Edited, EditError> {
    if old == new {
        return Err(EditError::Identical);
    }
    let mut ambiguous = 0;
    for strategy in Strategy::CASCADE {
        for candidate in strategy.yields_within(content, old, budget) {
            if candidate.is_empty() {
                continue;
            }
            // memchr's finder is vectorised; `match_indices` walks a 10 MB file three times slower.
            let positions: Vec<usize> =
                memchr::memmem::find_iter(content.as_bytes(), candidate.as_bytes()).collect();
            let Some(&first) = positions.first() else { continue };
            if replace_all {
                let replaced = content.replace(candidate.as_str(), new);
                return Ok(Edited {
                    content: replaced,
                    strategy: Some(strategy),
                    count: positions.len(),
                    offset: first,
                    inserted_len: new.len(),
                });
            }
            if positions.len() == 1 {
                let mut replaced = String::with_capacity(content.len() + new.len());
                replaced.push_str(&content[..first]);
                replaced.push_str(new);
                replaced.push_str(&content[first + candidate.len()..]);
                return Ok(Edited {
                    content: replaced,
                    strategy: Some(strategy),
                    count: 1,
                    offset: first,
                    inserted_len: new.len(),
                });
            }
            ambiguous = ambiguous.max(positions.len());
        }
    }
    if ambiguous > 0 {
        return Err(EditError::Ambiguous { count: ambiguous });
    }
    let mut hint = did_you_mean_within(content, old, budget);
    if budget.ran_out() && !budget.is_cancelled() {
        let note = "Fuzzy matching examined only the most promising parts of this file (its work is capped); \
                    copy the lines exactly, or use a shorter old_string.";
        hint = Some(match hint {
            Some(hint) => format!("{hint}\n\n{note}"),
            None => note.to_string(),
        });
    }
    Err(EditError::NotFound { hint })
}

/// Bring `text` to the file's line ending: `\r\n` everywhere when the file uses CRLF, `\n` otherwise.
fn to_line_ending(text: &str, crlf: bool) -> String {
    let lf = text.replace("\r\n", "\n");
    if crlf { lf.replace('\n', "\r\n") } else { lf }
}

/// The edit tool's text rules around [`replace`]: strip and restore a BOM, match in the file's line ending,
/// rewrite the whole file for an empty `old_string`.
pub fn edit(original: &str, old: &str, new: &str, replace_all: bool) -> Result<Edited, EditError> {
    edit_within(original, old, new, replace_all, &Budget::new(None))
}

/// [`edit`] with the caller's budget (and cancellation check).
pub fn edit_within(
    original: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    budget: &Budget,
) -> Result<Edited, EditError> {
    let (bom, body) = match original.strip_prefix(BOM) {
        Some(rest) => (BOM.len_utf8(), rest),
        None => (0, original),
    };
    let crlf = memchr::memmem::find(body.as_bytes(), b"\r\n").is_some();
    let old = to_line_ending(old, crlf);
    let new = to_line_ending(new.strip_prefix(BOM).unwrap_or(new), crlf);
    let mut edited = if old.is_empty() {
        if new == body {
            return Err(EditError::Identical);
        }
        Edited { content: new.clone(), strategy: None, count: 1, offset: 0, inserted_len: new.len() }
    } else {
        replace_within(body, &old, &new, replace_all, budget)?
    };
    if bom > 0 {
        edited.content.insert(0, BOM);
        edited.offset += bom;
    }
    Ok(edited)
}

/// Lines of `text` around the 1-based line `center`, numbered like the read tool.
pub fn numbered_excerpt(text: &str, first: usize, last: usize) -> String {
    let skip = first.saturating_sub(1);
    // Jump to the first line by its line break (vectorised) rather than walking every line before it.
    let start = match skip {
        0 => 0,
        n => memchr::memchr_iter(b'\n', text.as_bytes()).nth(n - 1).map_or(text.len() + 1, |i| i + 1),
    };
    match text.get(start..) {
        Some(rest) => numbered_lines(rest, first, last),
        None => String::new(),
    }
}

/// Lines `first..=last` (1-based, `first` at least 1 counted as 1) numbered like the read tool, from `from`: the
/// text that starts at line `first`.
pub fn numbered_lines(from: &str, first: usize, last: usize) -> String {
    let skip = first.saturating_sub(1);
    from.split('\n')
        .enumerate()
        .take(last + 1 - first.max(1))
        .map(|(i, line)| format!("{}\t{}", skip + i + 1, line.trim_end_matches('\r')))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A hint for a failed match: where the most similar line to the pattern's first line is, with context.
pub fn did_you_mean(content: &str, old: &str) -> Option<String> {
    did_you_mean_within(content, old, &Budget::new(None))
}

/// [`did_you_mean`] within a budget. The most similar line (the last of equals, as `max_by` picks) with a
/// similarity of at least 0.5; each line's distance is banded by the best similarity so far.
fn did_you_mean_within(content: &str, old: &str, budget: &Budget) -> Option<String> {
    let wanted: Vec<char> = old.lines().map(str::trim).find(|l| !l.is_empty())?.chars().collect();
    let pattern = Pattern::new(&wanted);
    let meter = budget.meter();
    let mut best: Option<(usize, f64)> = None;
    let mut line: Vec<char> = Vec::new();
    for (i, text) in content.split('\n').enumerate() {
        line.clear();
        line.extend(text.trim().chars());
        let longest = line.len().max(wanted.len());
        let floor = best.map_or(0.5, |(_, score)| score);
        // One more than the exact limit, so rounding never drops a tie; the score decides.
        let limit = ((1.0 - floor) * longest as f64).floor() as usize + 1;
        let Some(distance) = pattern.distance_metered(&line, limit, &meter) else {
            if meter.spent() {
                break;
            }
            continue;
        };
        let score = if longest == 0 { 1.0 } else { 1.0 - distance as f64 / longest as f64 };
        if score >= floor {
            best = Some((i, score));
        }
    }
    let (index, _) = best?;
    let line = index + 1;
    let span = old.lines().count().max(1);
    let excerpt = numbered_excerpt(content, line.saturating_sub(2).max(1), line + span + 1);
    Some(format!("Did you mean the text near line {line}?\n{excerpt}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_numbers_the_lines_it_jumps_to_as_a_walk_over_every_line_would() {
        let walk = |text: &str, first: usize, last: usize| {
            text.split('\n')
                .enumerate()
                .skip(first.saturating_sub(1))
                .take(last + 1 - first.max(1))
                .map(|(i, line)| format!("{}\t{}", i + 1, line.trim_end_matches('\r')))
                .collect::<Vec<_>>()
                .join("\n")
        };
        for text in ["", "a", "a\n", "a\nb", "a\r\nb\r\nc\r\n", "one\ntwo\nthree\nfour\nfive\n"] {
            for first in 0..8 {
                for last in first.max(1) - 1..9 {
                    assert_eq!(
                        numbered_excerpt(text, first, last),
                        walk(text, first, last),
                        "{text:?} {first}..{last}"
                    );
                }
            }
        }
        assert_eq!(numbered_excerpt("a\nb\nc\nd", 2, 3), "2\tb\n3\tc");
    }

    #[test]
    fn replace_all_inserts_dollar_signs_literally() {
        let edited = replace("cost = a; a", "a", "$&$&", true).unwrap();
        assert_eq!(edited.content, "cost = $&$&; $&$&");
        assert_eq!(edited.count, 2);
    }

    #[test]
    fn several_matches_without_replace_all_are_refused_with_the_count() {
        assert_eq!(replace("x\ny\nx\nx", "x", "z", false), Err(EditError::Ambiguous { count: 3 }));
    }

    #[test]
    fn an_empty_pattern_rewrites_the_file_instead_of_looping() {
        let edited = edit("\u{feff}old\n", "", "new\n", false).unwrap();
        assert_eq!(edited.content, "\u{feff}new\n");
        assert_eq!(edited.strategy, None);
    }

    #[test]
    fn crlf_files_are_matched_and_written_in_crlf() {
        let edited = edit("a\r\nb\r\nc\r\n", "a\nb", "a\nB", false).unwrap();
        assert_eq!(edited.content, "a\r\nB\r\nc\r\n");
        let edited = edit("a\nb\n", "a\r\nb", "x\r\ny", false).unwrap();
        assert_eq!(edited.content, "x\ny\n");
    }

    #[test]
    fn a_miss_points_at_the_closest_line_with_numbered_context() {
        let content = "fn main() {\n    let total = 1;\n    println!(\"{total}\");\n}\n";
        let err = replace(content, "let totl = 1;\nprint(total);", "x", false).unwrap_err();
        let EditError::NotFound { hint: Some(hint) } = err else { panic!("{err:?}") };
        assert_eq!(
            hint,
            "Did you mean the text near line 2?\n1\tfn main() {\n2\t    let total = 1;\n3\t    println!(\"{total}\");\n4\t}\n5\t"
        );
    }

    #[test]
    fn an_old_string_indented_with_hair_spaces_and_spaces_goes_through_every_strategy() {
        // The whole cascade, as the fuzzer drove it: every strategy sees the mixed indentation and none panics.
        assert_eq!(
            edit("fn a() {}\n", "\u{200A}x();\n y();", "z();", false),
            Err(EditError::NotFound { hint: None })
        );
        let edited =
            edit("fn a() {\n\u{200A}\u{200A}x();\n  y();\n}\n", "\u{200A}x();\n y();", "z();", false);
        assert_eq!(
            edited.map(|e| (e.content, e.strategy)),
            Ok(("fn a() {\nz();\n}\n".to_string(), Some(Strategy::LineTrimmed)))
        );
    }

    #[test]
    fn a_cancelled_edit_stops_matching_and_adds_no_note() {
        let cancelled = || true;
        let budget = Budget::new(Some(&cancelled));
        let content = "start\n  alpha\n  beta\nend\n";
        assert_eq!(
            edit_within(content, "start\nalpha\nbetx\nend", "x", false, &budget),
            Err(EditError::NotFound { hint: None })
        );
        assert!(budget.ran_out());
    }

    #[test]
    fn a_miss_that_hit_the_work_cap_says_matching_was_capped() {
        let content: String = (0..50).map(|i| format!("line number {i} of the file\n")).collect();
        let budget = Budget::with_cells(None, 100);
        let err = replace_within(&content, "line number 7 of the flie\nsomething else", "x", false, &budget);
        assert_eq!(
            err,
            Err(EditError::NotFound {
                hint: Some(
                    "Fuzzy matching examined only the most promising parts of this file (its work is capped); copy the lines exactly, or use a shorter old_string."
                        .into()
                )
            })
        );
        let unlimited = replace_within(
            &content,
            "line number 7 of the flie\nsomething else",
            "x",
            false,
            &Budget::unlimited(),
        );
        let excerpt: String = (5..=10).map(|i| format!("\n{}\tline number {i} of the file", i + 1)).collect();
        assert_eq!(
            unlimited,
            Err(EditError::NotFound { hint: Some(format!("Did you mean the text near line 8?{excerpt}")) })
        );
    }

    #[test]
    fn the_result_names_where_the_replacement_landed() {
        let edited = edit("\u{feff}ab cd", "cd", "XY", false).unwrap();
        assert_eq!(&edited.content[edited.offset..edited.offset + edited.inserted_len], "XY");
        assert_eq!(edited.strategy, Some(Strategy::Simple));
    }
}
