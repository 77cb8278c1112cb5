//! The ten replacement strategies of seed 000 (`edit_replacer.go`), in cascade order. Each strategy looks at
//! the file and the model's `old_string` and yields candidate substrings of the file that the model probably
//! meant; the cascade accepts the first candidate that occurs exactly once (or every occurrence with
//! `replace_all`).
//!
//! Owns matching only. Known upstream defects are deliberately not reproduced: block anchors consider every
//! closing line rather than stopping at the first one; an empty pattern yields nothing.

use super::levenshtein::similarity;

/// One strategy, named as in the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Simple,
    LineTrimmed,
    BlockAnchorStrict,
    WhitespaceNormalized,
    IndentationFlexible,
    EscapeNormalized,
    TrimmedBoundary,
    ContextAware,
    BlockAnchorRelaxed,
    MultiOccurrence,
}

/// Interior similarity a strict block-anchor match needs.
pub const BLOCK_ANCHOR_STRICT: f64 = 1.0;
/// Interior similarity a relaxed block-anchor match needs (a distance budget of 0.3).
pub const BLOCK_ANCHOR_RELAXED: f64 = 0.7;
/// Similarity the fuzzy multi-occurrence match needs.
pub const MULTI_OCCURRENCE_MIN: f64 = 0.8;
/// Share of non-empty interior lines a context-aware match needs to equal.
const CONTEXT_AWARE_MIN: f64 = 0.5;

impl Strategy {
    pub const CASCADE: [Strategy; 10] = [
        Strategy::Simple,
        Strategy::LineTrimmed,
        Strategy::BlockAnchorStrict,
        Strategy::WhitespaceNormalized,
        Strategy::IndentationFlexible,
        Strategy::EscapeNormalized,
        Strategy::TrimmedBoundary,
        Strategy::ContextAware,
        Strategy::BlockAnchorRelaxed,
        Strategy::MultiOccurrence,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Simple => "SimpleReplacer",
            Strategy::LineTrimmed => "LineTrimmedReplacer",
            Strategy::BlockAnchorStrict => "BlockAnchorReplacer (strict)",
            Strategy::WhitespaceNormalized => "WhitespaceNormalizedReplacer",
            Strategy::IndentationFlexible => "IndentationFlexibleReplacer",
            Strategy::EscapeNormalized => "EscapeNormalizedReplacer",
            Strategy::TrimmedBoundary => "TrimmedBoundaryReplacer",
            Strategy::ContextAware => "ContextAwareReplacer",
            Strategy::BlockAnchorRelaxed => "BlockAnchorReplacer (relaxed)",
            Strategy::MultiOccurrence => "MultiOccurrenceReplacer",
        }
    }

    /// The candidates this strategy proposes for `find` in `content`.
    pub fn yields(self, content: &str, find: &str) -> Vec<String> {
        if find.is_empty() {
            return Vec::new();
        }
        let mut found = match self {
            Strategy::Simple => vec![find.to_string()],
            Strategy::LineTrimmed => line_trimmed(content, find),
            Strategy::BlockAnchorStrict => block_anchor(content, find, BLOCK_ANCHOR_STRICT),
            Strategy::WhitespaceNormalized => whitespace_normalized(content, find),
            Strategy::IndentationFlexible => indentation_flexible(content, find),
            Strategy::EscapeNormalized => escape_normalized(content, find),
            Strategy::TrimmedBoundary => trimmed_boundary(content, find),
            Strategy::ContextAware => context_aware(content, find),
            Strategy::BlockAnchorRelaxed => block_anchor(content, find, BLOCK_ANCHOR_RELAXED),
            Strategy::MultiOccurrence => multi_occurrence(content, find),
        };
        let mut seen = std::collections::HashSet::new();
        found.retain(|candidate| seen.insert(candidate.clone()));
        found
    }
}

/// The lines of `find`, without the empty line a trailing newline leaves.
fn search_lines(find: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = find.split('\n').collect();
    if lines.len() > 1 && lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// Byte offsets of the start of every line of `content` (split on `\n`).
fn line_starts(lines: &[&str]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(lines.len() + 1);
    let mut offset = 0;
    for line in lines {
        starts.push(offset);
        offset += line.len() + 1;
    }
    starts.push(offset);
    starts
}

/// The text of lines `first..=last` of `content`, without the final newline.
fn block<'a>(content: &'a str, starts: &[usize], first: usize, last: usize) -> &'a str {
    &content[starts[first]..starts[last + 1] - 1]
}

fn line_trimmed(content: &str, find: &str) -> Vec<String> {
    let lines: Vec<&str> = content.split('\n').collect();
    let search = search_lines(find);
    if search.len() > lines.len() {
        return Vec::new();
    }
    let starts = line_starts(&lines);
    (0..=lines.len() - search.len())
        .filter(|&i| search.iter().enumerate().all(|(k, s)| lines[i + k].trim() == s.trim()))
        .map(|i| block(content, &starts, i, i + search.len() - 1).to_string())
        .collect()
}

/// Interior similarity of a candidate block against the search lines; a size mismatch counts against it.
fn interior_similarity(block: &[&str], search: &[&str]) -> f64 {
    let denominator = block.len().max(search.len()).saturating_sub(2);
    if denominator == 0 {
        return 1.0;
    }
    let total: f64 =
        (1..block.len().min(search.len()) - 1).map(|k| similarity(block[k].trim(), search[k].trim())).sum();
    total / denominator as f64
}

fn block_anchor(content: &str, find: &str, min_similarity: f64) -> Vec<String> {
    let lines: Vec<&str> = content.split('\n').collect();
    let search = search_lines(find);
    if search.len() < 3 {
        return Vec::new();
    }
    let (first, last) = (search[0].trim(), search[search.len() - 1].trim());
    // With interior similarity s the block size is bounded, so only plausible closing lines are scored.
    let interior = (search.len() - 2) as f64;
    let longest = (interior / min_similarity).floor() as usize + 2;
    let shortest = ((interior * min_similarity).ceil() as usize + 2).max(3);
    let starts = line_starts(&lines);
    let mut best: Option<(f64, usize, usize)> = None;
    for i in (0..lines.len()).filter(|&i| lines[i].trim() == first) {
        let end = (i + longest).min(lines.len());
        for j in (i + shortest - 1..end).filter(|&j| lines[j].trim() == last) {
            let score = interior_similarity(&lines[i..=j], &search);
            if score >= min_similarity && best.is_none_or(|(b, _, _)| score > b) {
                best = Some((score, i, j));
            }
        }
    }
    best.map(|(_, i, j)| vec![block(content, &starts, i, j).to_string()]).unwrap_or_default()
}

fn whitespace_normalized(content: &str, find: &str) -> Vec<String> {
    let wanted: Vec<&str> = find.split_whitespace().collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let joined = wanted.join(" ");
    let lines: Vec<&str> = content.split('\n').collect();
    let tokens: Vec<Vec<&str>> = lines.iter().map(|l| l.split_whitespace().collect()).collect();
    let mut found = Vec::new();
    let pattern =
        regex::Regex::new(&wanted.iter().map(|w| regex::escape(w)).collect::<Vec<_>>().join(r"\s+")).ok();
    for (line, line_tokens) in lines.iter().zip(&tokens) {
        if *line_tokens == wanted {
            found.push(line.to_string());
        } else if line_tokens.len() > wanted.len()
            && line_tokens.join(" ").contains(&joined)
            && let Some(m) = pattern.as_ref().and_then(|p| p.find(line))
        {
            found.push(m.as_str().to_string());
        }
    }
    let count = find.split('\n').count();
    if count > 1 && count <= lines.len() {
        for start in 0..=lines.len() - count {
            let mut window = tokens[start..start + count].iter().flatten();
            let same = wanted.iter().all(|w| window.next() == Some(w)) && window.next().is_none();
            if same {
                found.push(lines[start..start + count].join("\n"));
            }
        }
    }
    found
}

fn leading_whitespace(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Remove the indentation common to all non-blank lines.
fn remove_indentation(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let Some(indent) = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| leading_whitespace(l)).min()
    else {
        return text.to_string();
    };
    lines.iter().map(|l| if l.trim().is_empty() { *l } else { &l[indent..] }).collect::<Vec<_>>().join("\n")
}

fn windows_matching(content: &str, count: usize, matches: impl Fn(&str) -> bool) -> Vec<String> {
    let lines: Vec<&str> = content.split('\n').collect();
    if count == 0 || count > lines.len() {
        return Vec::new();
    }
    lines.windows(count).map(|w| w.join("\n")).filter(|text| matches(text)).collect()
}

fn indentation_flexible(content: &str, find: &str) -> Vec<String> {
    let wanted = remove_indentation(find);
    let find_lines: Vec<&str> = find.split('\n').collect();
    let lines: Vec<&str> = content.split('\n').collect();
    if find_lines.len() > lines.len() {
        return Vec::new();
    }
    // Removing a common indent never changes a line's trimmed text, so trimmed equality is a cheap filter.
    (0..=lines.len() - find_lines.len())
        .filter(|&i| find_lines.iter().enumerate().all(|(k, f)| lines[i + k].trim() == f.trim()))
        .map(|i| lines[i..i + find_lines.len()].join("\n"))
        .filter(|block| remove_indentation(block) == wanted)
        .collect()
}

/// Turn the escape sequences a model may have typed literally (`\n`, `\t`, `\"`, ...) into characters.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let replacement = match chars.peek() {
            Some('n') | Some('\n') => '\n',
            Some('t') => '\t',
            Some('r') => '\r',
            Some(&q @ ('\'' | '"' | '`' | '\\' | '$')) => q,
            _ => {
                out.push(c);
                continue;
            }
        };
        chars.next();
        out.push(replacement);
    }
    out
}

/// Escapes resolved, CRLF as LF, tabs as four spaces.
fn normalize_escapes(text: &str) -> String {
    unescape(text).replace("\r\n", "\n").replace('\t', "    ")
}

fn escape_normalized(content: &str, find: &str) -> Vec<String> {
    let mut found = Vec::new();
    let unescaped = unescape(find);
    if content.contains(&unescaped) {
        found.push(unescaped.clone());
    }
    let wanted = normalize_escapes(find);
    let wanted_lines: Vec<&str> = wanted.split('\n').collect();
    let first = wanted_lines[0];
    let lines: Vec<&str> = content.split('\n').collect();
    if wanted_lines.len() > lines.len() {
        return found;
    }
    for i in 0..=lines.len() - wanted_lines.len() {
        // A window can only match if its first line normalises to the pattern's first line (or begins it,
        // when the line holds an escaped newline).
        if !normalize_escapes(lines[i]).starts_with(first) {
            continue;
        }
        let block = lines[i..i + wanted_lines.len()].join("\n");
        if normalize_escapes(&block) == wanted {
            found.push(block);
        }
    }
    found
}

fn trimmed_boundary(content: &str, find: &str) -> Vec<String> {
    let trimmed = find.trim();
    if trimmed == find || trimmed.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    if content.contains(trimmed) {
        found.push(trimmed.to_string());
    }
    found.extend(windows_matching(content, find.split('\n').count(), |block| block.trim() == trimmed));
    found
}

fn context_aware(content: &str, find: &str) -> Vec<String> {
    let search = search_lines(find);
    if search.len() < 3 {
        return Vec::new();
    }
    let lines: Vec<&str> = content.split('\n').collect();
    if search.len() > lines.len() {
        return Vec::new();
    }
    let starts = line_starts(&lines);
    let (first, last) = (search[0].trim(), search[search.len() - 1].trim());
    let mut found = Vec::new();
    for i in 0..=lines.len() - search.len() {
        let j = i + search.len() - 1;
        if lines[i].trim() != first || lines[j].trim() != last {
            continue;
        }
        let (mut matching, mut non_empty) = (0usize, 0usize);
        for k in 1..search.len() - 1 {
            let (have, want) = (lines[i + k].trim(), search[k].trim());
            if !have.is_empty() || !want.is_empty() {
                non_empty += 1;
                matching += usize::from(have == want);
            }
        }
        if non_empty == 0 || matching as f64 / non_empty as f64 >= CONTEXT_AWARE_MIN {
            found.push(block(content, &starts, i, j).to_string());
        }
    }
    found
}

fn multi_occurrence(content: &str, find: &str) -> Vec<String> {
    let search = search_lines(find);
    let lines: Vec<&str> = content.split('\n').collect();
    if search.len() > lines.len() {
        return Vec::new();
    }
    let trimmed: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
    let wanted: Vec<char> = search.iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n").chars().collect();
    let starts = line_starts(&lines);
    // (distance, window length, start): the best window so far; later windows must beat its similarity.
    let mut best: Option<(f64, usize)> = None;
    for i in 0..=lines.len() - search.len() {
        let text: Vec<char> = trimmed[i..i + search.len()].join("\n").chars().collect();
        let longest = text.len().max(wanted.len());
        let floor = best.map_or(MULTI_OCCURRENCE_MIN, |(score, _)| score);
        // similarity > floor  ⇔  distance < (1 − floor) · longest
        let limit = ((1.0 - floor) * longest as f64).floor() as usize;
        let Some(distance) = super::levenshtein::distance_within(&text, &wanted, limit) else { continue };
        let score = if longest == 0 { 1.0 } else { 1.0 - distance as f64 / longest as f64 };
        if score >= MULTI_OCCURRENCE_MIN && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, i));
        }
    }
    best.map(|(_, i)| vec![block(content, &starts, i, i + search.len() - 1).to_string()]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yields(strategy: Strategy, content: &str, find: &str) -> Vec<String> {
        strategy.yields(content, find)
    }

    #[test]
    fn simple_yields_the_pattern_itself() {
        assert_eq!(yields(Strategy::Simple, "abc", "b"), vec!["b"]);
        assert!(yields(Strategy::Simple, "abc", "").is_empty(), "an empty pattern yields nothing");
    }

    #[test]
    fn line_trimmed_matches_whole_lines_ignoring_surrounding_whitespace() {
        let content = "fn a() {\n    let x = 1;\n}\n";
        assert_eq!(yields(Strategy::LineTrimmed, content, "let x = 1;\n}"), vec!["    let x = 1;\n}"]);
        assert!(yields(Strategy::LineTrimmed, content, "let x = 2;").is_empty());
    }

    #[test]
    fn block_anchor_strict_needs_identical_interiors_and_relaxed_accepts_close_ones() {
        let content = "start\n  alpha\n  beta\nend\n";
        assert_eq!(
            yields(Strategy::BlockAnchorStrict, content, "start\nalpha\nbeta\nend"),
            vec!["start\n  alpha\n  beta\nend"]
        );
        assert!(yields(Strategy::BlockAnchorStrict, content, "start\nalpha\nbetx\nend").is_empty());
        assert_eq!(
            yields(Strategy::BlockAnchorRelaxed, content, "start\nalpha\nbetx\nend"),
            vec!["start\n  alpha\n  beta\nend"]
        );
        assert!(yields(Strategy::BlockAnchorRelaxed, content, "start\nzzzzz\nqqqq\nend").is_empty());
        assert!(yields(Strategy::BlockAnchorRelaxed, content, "start\nend").is_empty(), "needs three lines");
    }

    #[test]
    fn block_anchor_does_not_stop_at_the_first_closing_line() {
        let content = "class A {\n  m() {\n    x();\n  }\n  n() {}\n}\n";
        let find = "class A {\n  m() {\n    x();\n  }\n  n() {}\n}";
        let got =
            yields(Strategy::BlockAnchorRelaxed, content, "class A {\n  m() {\n    y();\n  }\n  n() {}\n}");
        assert_eq!(got, vec![find.to_string()], "the whole class, not up to the method's brace");
    }

    #[test]
    fn whitespace_normalized_collapses_runs_of_whitespace() {
        assert_eq!(
            yields(Strategy::WhitespaceNormalized, "let   x =  1;", "let x = 1;"),
            vec!["let   x =  1;"]
        );
        assert_eq!(yields(Strategy::WhitespaceNormalized, "foo(a,  b) + 1", "a, b"), vec!["a,  b"]);
        assert_eq!(yields(Strategy::WhitespaceNormalized, "a\n  b", "a\nb"), vec!["a\n  b"]);
    }

    #[test]
    fn indentation_flexible_ignores_a_different_common_indent() {
        let content = "mod m {\n        fn f() {\n            g();\n        }\n}";
        assert_eq!(
            yields(Strategy::IndentationFlexible, content, "fn f() {\n    g();\n}"),
            vec!["        fn f() {\n            g();\n        }"]
        );
    }

    #[test]
    fn escape_normalized_resolves_literal_escapes_crlf_and_tabs() {
        assert_eq!(
            yields(Strategy::EscapeNormalized, "say(\"hi\")\nnext", "say(\\\"hi\\\")\\nnext"),
            vec!["say(\"hi\")\nnext"]
        );
        assert_eq!(yields(Strategy::EscapeNormalized, "\tx = 1", "    x = 1"), vec!["\tx = 1"]);
    }

    #[test]
    fn trimmed_boundary_drops_blank_lines_around_the_pattern() {
        assert_eq!(yields(Strategy::TrimmedBoundary, "a\nb\nc", "\n\nb\n"), vec!["b"]);
        assert!(yields(Strategy::TrimmedBoundary, "a\nb", "b").is_empty(), "already trimmed");
    }

    #[test]
    fn context_aware_uses_first_and_last_lines_as_anchors_and_half_the_middle() {
        let content = "fn f() {\n    one();\n    two();\n    three();\n}";
        assert_eq!(
            yields(Strategy::ContextAware, content, "fn f() {\n    one();\n    2();\n    three();\n}"),
            vec![content]
        );
        assert!(
            yields(Strategy::ContextAware, content, "fn f() {\n    x();\n    y();\n    three();\n}")
                .is_empty()
        );
    }

    #[test]
    fn multi_occurrence_picks_the_best_fuzzy_window_above_the_threshold() {
        let content = "let total = compute(a, b);\nlet other = 1;\n";
        assert_eq!(
            yields(Strategy::MultiOccurrence, content, "let total = compute(a, c);"),
            vec!["let total = compute(a, b);"]
        );
        assert!(yields(Strategy::MultiOccurrence, content, "completely different").is_empty());
    }
}
