//! The ten replacement strategies of seed 000 (`edit_replacer.go`), in cascade order. Each strategy looks at
//! the file and the model's `old_string` and yields candidate substrings of the file that the model probably
//! meant; the cascade accepts the first candidate that occurs exactly once (or every occurrence with
//! `replace_all`).
//!
//! Owns matching only. Known upstream defects are deliberately not reproduced: block anchors consider every
//! closing line rather than stopping at the first one; an empty pattern yields nothing.

use super::budget::{Budget, Meter};
use super::levenshtein::Pattern;

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

    /// The candidates this strategy proposes for `find` in `content`, with no cap on the work.
    pub fn yields(self, content: &str, find: &str) -> Vec<String> {
        self.yields_within(content, find, &Budget::unlimited())
    }

    /// The candidates this strategy proposes, the expensive strategies stopping when `budget` runs out.
    pub fn yields_within(self, content: &str, find: &str, budget: &Budget) -> Vec<String> {
        if find.is_empty() || budget.is_cancelled() {
            return Vec::new();
        }
        let mut found = match self {
            Strategy::Simple => vec![find.to_string()],
            Strategy::LineTrimmed => line_trimmed(content, find, budget),
            Strategy::BlockAnchorStrict => block_anchor(content, find, BLOCK_ANCHOR_STRICT, budget),
            Strategy::WhitespaceNormalized => whitespace_normalized(content, find, budget),
            Strategy::IndentationFlexible => indentation_flexible(content, find, budget),
            Strategy::EscapeNormalized => escape_normalized(content, find, budget),
            Strategy::TrimmedBoundary => trimmed_boundary(content, find, budget),
            Strategy::ContextAware => context_aware(content, find, budget),
            Strategy::BlockAnchorRelaxed => block_anchor(content, find, BLOCK_ANCHOR_RELAXED, budget),
            Strategy::MultiOccurrence => multi_occurrence(content, find, budget),
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

fn line_trimmed(content: &str, find: &str, budget: &Budget) -> Vec<String> {
    let lines: Vec<&str> = content.split('\n').collect();
    let search = search_lines(find);
    if search.len() > lines.len() {
        return Vec::new();
    }
    let starts = line_starts(&lines);
    (0..=lines.len() - search.len())
        .take_while(|&i| !budget.cancelled_at(i))
        .filter(|&i| search.iter().enumerate().all(|(k, s)| lines[i + k].trim() == s.trim()))
        .map(|i| block(content, &starts, i, i + search.len() - 1).to_string())
        .collect()
}

/// Tolerance for the float comparisons that prune candidates: pruning only ever happens when a candidate is
/// short of its threshold by more than this, so rounding never drops one the full computation would keep.
const PRUNE_MARGIN: f64 = 1e-9;

/// `similarity(a, b)` if a line deficit (`1 − similarity`) of at most `allowance` is possible, else `None`.
fn similarity_within(a: &str, b: &Pattern, allowance: f64, meter: &Meter) -> Option<f64> {
    let a: Vec<char> = a.chars().collect();
    let longest = a.len().max(b.len());
    if longest == 0 {
        return Some(1.0);
    }
    let limit = (((allowance + PRUNE_MARGIN) * longest as f64).floor().max(0.0) as usize).min(longest);
    let distance = b.distance_metered(&a, limit, meter)?;
    Some(1.0 - distance as f64 / longest as f64)
}

/// The block-anchor strategy (seed 000): blocks whose first and last lines equal the pattern's (trimmed), and
/// whose interior lines are similar enough on average; the best-scoring block wins. The interior similarity of
/// a block of `b` lines against `s` search lines is the sum of the first `min(b, s) − 2` line similarities
/// over `max(b, s) − 2`, so every block starting at one anchor shares a prefix sum, computed once and lazily:
/// once the summed deficit (`1 − similarity`) exceeds `(1 − threshold)·(s − 2)` no block from that anchor can
/// reach the threshold, and the anchor is left. Each line's distance is banded by the deficit still allowed.
fn block_anchor(content: &str, find: &str, min_similarity: f64, budget: &Budget) -> Vec<String> {
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
    // Each search line's pattern is built the first time a block scores it: a pattern holds a 512-byte table,
    // and a huge `old_string` would otherwise pay for every line before the first anchor.
    let wanted: Vec<std::cell::OnceCell<Pattern>> =
        search.iter().map(|_| std::cell::OnceCell::new()).collect();
    let pattern =
        |k: usize| wanted[k].get_or_init(|| Pattern::new(&search[k].trim().chars().collect::<Vec<_>>()));
    let allowed_deficit = (1.0 - min_similarity) * interior;
    let meter = budget.meter();
    let starts = line_starts(&lines);
    let mut best: Option<(f64, usize, usize)> = None;
    let anchors =
        (0..lines.len()).take_while(|&i| !budget.cancelled_at(i)).filter(|&i| lines[i].trim() == first);
    for i in anchors {
        if !meter.charge(1) {
            break;
        }
        let end = (i + longest).min(lines.len());
        let closing: Vec<usize> = (i + shortest - 1..end).filter(|&j| lines[j].trim() == last).collect();
        let (mut sum, mut computed) = (0.0_f64, 0usize);
        for j in closing {
            let block_len = j - i + 1;
            let terms = block_len.min(search.len()) - 2;
            while computed < terms {
                let k = computed + 1;
                let allowance = allowed_deficit - (computed as f64 - sum);
                match similarity_within(lines[i + k].trim(), pattern(k), allowance, &meter) {
                    Some(value) => sum += value,
                    None => break,
                }
                computed = k;
            }
            if computed < terms {
                break;
            }
            let denominator = block_len.max(search.len()) - 2;
            let score = if denominator == 0 { 1.0 } else { sum / denominator as f64 };
            if score >= min_similarity && best.is_none_or(|(b, _, _)| score > b) {
                best = Some((score, i, j));
            }
        }
        if meter.spent() {
            break;
        }
    }
    best.map(|(_, i, j)| vec![block(content, &starts, i, j).to_string()]).unwrap_or_default()
}

fn whitespace_normalized(content: &str, find: &str, budget: &Budget) -> Vec<String> {
    let wanted: Vec<&str> = find.split_whitespace().collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let joined = wanted.join(" ");
    let lines: Vec<&str> = content.split('\n').collect();
    let tokens: Vec<Vec<&str>> = lines.iter().map(|l| l.split_whitespace().collect()).collect();
    let mut found = Vec::new();
    // Compiled only for a line that holds the tokens: a long pattern's expression takes milliseconds to build.
    let pattern = std::cell::OnceCell::new();
    let compile =
        || regex::Regex::new(&wanted.iter().map(|w| regex::escape(w)).collect::<Vec<_>>().join(r"\s+")).ok();
    for (i, (line, line_tokens)) in lines.iter().zip(&tokens).enumerate() {
        if budget.cancelled_at(i) {
            return Vec::new();
        }
        if *line_tokens == wanted {
            found.push(line.to_string());
        } else if line_tokens.len() > wanted.len()
            && line_tokens.join(" ").contains(&joined)
            && let Some(m) = pattern.get_or_init(compile).as_ref().and_then(|p| p.find(line))
        {
            found.push(m.as_str().to_string());
        }
    }
    let count = find.split('\n').count();
    if count > 1 && count <= lines.len() {
        for start in 0..=lines.len() - count {
            if budget.cancelled_at(start) {
                return Vec::new();
            }
            let mut window = tokens[start..start + count].iter().flatten();
            let same = wanted.iter().all(|w| window.next() == Some(w)) && window.next().is_none();
            if same {
                found.push(lines[start..start + count].join("\n"));
            }
        }
    }
    found
}

/// The width of `line`'s indentation in characters (not bytes: an indentation may hold multi-byte spaces such as
/// U+200A, and the same width in bytes would cut another line inside one).
fn indentation_width(line: &str) -> usize {
    line.chars().take_while(|c| c.is_whitespace()).count()
}

/// `line` without its first `width` characters (at most its indentation, so nothing else is lost).
fn dedent(line: &str, width: usize) -> &str {
    line.char_indices().nth(width).map_or("", |(at, _)| &line[at..])
}

/// Remove the indentation common to all non-blank lines: as many characters as the least indented line has.
fn remove_indentation(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let Some(indent) = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| indentation_width(l)).min()
    else {
        return text.to_string();
    };
    lines
        .iter()
        .map(|l| if l.trim().is_empty() { *l } else { dedent(l, indent) })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every window of `count` lines that `matches`, each looked at in place (a window is a slice of `content`).
fn windows_matching(
    content: &str,
    count: usize,
    budget: &Budget,
    matches: impl Fn(&str) -> bool,
) -> Vec<String> {
    let lines: Vec<&str> = content.split('\n').collect();
    if count == 0 || count > lines.len() {
        return Vec::new();
    }
    let starts = line_starts(&lines);
    (0..=lines.len() - count)
        .take_while(|&i| !budget.cancelled_at(i))
        .map(|i| block(content, &starts, i, i + count - 1))
        .filter(|text| matches(text))
        .map(str::to_string)
        .collect()
}

fn indentation_flexible(content: &str, find: &str, budget: &Budget) -> Vec<String> {
    let wanted = remove_indentation(find);
    let find_lines: Vec<&str> = find.split('\n').collect();
    let lines: Vec<&str> = content.split('\n').collect();
    if find_lines.len() > lines.len() {
        return Vec::new();
    }
    // Removing a common indent never changes a line's trimmed text, so trimmed equality is a cheap filter.
    (0..=lines.len() - find_lines.len())
        .take_while(|&i| !budget.cancelled_at(i))
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

fn escape_normalized(content: &str, find: &str, budget: &Budget) -> Vec<String> {
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
    let starts = line_starts(&lines);
    for (i, line) in lines[..=lines.len() - wanted_lines.len()].iter().enumerate() {
        if budget.cancelled_at(i) {
            return Vec::new();
        }
        // A window can only match if its first line normalises to the pattern's first line (or begins it,
        // when the line holds an escaped newline). A line without a backslash or a tab is its own
        // normalisation (a line holds no `\n`, so no CRLF either), and is compared without a copy.
        let starts_right = if line.contains(['\\', '\t']) {
            normalize_escapes(line).starts_with(first)
        } else {
            line.starts_with(first)
        };
        if !starts_right {
            continue;
        }
        let block = block(content, &starts, i, i + wanted_lines.len() - 1);
        if normalize_escapes(block) == wanted {
            found.push(block.to_string());
        }
    }
    found
}

fn trimmed_boundary(content: &str, find: &str, budget: &Budget) -> Vec<String> {
    let trimmed = find.trim();
    if trimmed == find || trimmed.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    if content.contains(trimmed) {
        found.push(trimmed.to_string());
    }
    found
        .extend(windows_matching(content, find.split('\n').count(), budget, |block| block.trim() == trimmed));
    found
}

fn context_aware(content: &str, find: &str, budget: &Budget) -> Vec<String> {
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
        if budget.cancelled_at(i) {
            return Vec::new();
        }
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

/// Buckets of the character histograms that bound a window's distance from below.
const HISTOGRAM_BUCKETS: usize = 128;

fn bucket(c: char) -> usize {
    c as usize % HISTOGRAM_BUCKETS
}

/// The histogram difference of a sliding window against the pattern, kept with its positive and negative
/// parts: an edit changes each part by at most one, so `max(excess, shortfall)` is a lower bound of the
/// Levenshtein distance (merging characters into buckets only lowers it).
struct Histogram {
    difference: [i64; HISTOGRAM_BUCKETS],
    excess: usize,
    shortfall: usize,
}

impl Histogram {
    fn of_pattern(pattern: &[char]) -> Self {
        let mut histogram = Histogram { difference: [0; HISTOGRAM_BUCKETS], excess: 0, shortfall: 0 };
        for &c in pattern.iter().filter(|&&c| c != '\n') {
            histogram.difference[bucket(c)] -= 1;
            histogram.shortfall += 1;
        }
        histogram
    }

    fn add(&mut self, line: &str) {
        for c in line.chars() {
            let cell = &mut self.difference[bucket(c)];
            *cell += 1;
            if *cell > 0 { self.excess += 1 } else { self.shortfall -= 1 }
        }
    }

    fn remove(&mut self, line: &str) {
        for c in line.chars() {
            let cell = &mut self.difference[bucket(c)];
            *cell -= 1;
            if *cell >= 0 { self.excess -= 1 } else { self.shortfall += 1 }
        }
    }

    fn lower_bound(&self) -> usize {
        self.excess.max(self.shortfall)
    }
}

/// The largest distance a window of `longest` characters may have to score at least `floor`.
fn distance_limit(floor: f64, longest: usize) -> usize {
    ((1.0 - floor + PRUNE_MARGIN) * longest as f64).floor() as usize
}

/// The best fuzzy window (seed 000): every window of as many lines as the pattern, compared trimmed, the
/// highest similarity of at least [`MULTI_OCCURRENCE_MIN`] winning (the first on a tie). Windows are not
/// scored in file order: their lengths and character histograms give lower bounds of their distance in one
/// pass over the file, the windows that can still reach the threshold are scored from the lowest bound up,
/// each in a band as wide as the best score so far allows, and scoring stops when the next bound cannot beat
/// that score (or the budget runs out).
fn multi_occurrence(content: &str, find: &str, budget: &Budget) -> Vec<String> {
    let search = search_lines(find);
    let lines: Vec<&str> = content.split('\n').collect();
    if search.len() > lines.len() {
        return Vec::new();
    }
    let n = search.len();
    let trimmed: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
    let wanted: Vec<char> = search.iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n").chars().collect();
    let mut chars = Vec::with_capacity(trimmed.len() + 1);
    chars.push(0usize);
    for line in &trimmed {
        chars.push(chars[chars.len() - 1] + line.chars().count());
    }
    let window_len = |i: usize| chars[i + n] - chars[i] + n - 1;
    let mut histogram = Histogram::of_pattern(&wanted);
    trimmed[..n].iter().for_each(|line| histogram.add(line));
    // (lower bound, start) of every window that might reach the threshold.
    let mut candidates = Vec::new();
    for i in 0..=lines.len() - n {
        if budget.cancelled_at(i) {
            return Vec::new();
        }
        if i > 0 {
            histogram.remove(trimmed[i - 1]);
            histogram.add(trimmed[i + n - 1]);
        }
        let (length, bound) = (window_len(i), histogram.lower_bound());
        let limit = distance_limit(MULTI_OCCURRENCE_MIN, length.max(wanted.len()));
        let bound = bound.max(length.abs_diff(wanted.len()));
        if bound <= limit {
            candidates.push((bound, i));
        }
    }
    candidates.sort_unstable();
    let pattern = Pattern::new(&wanted);
    let meter = budget.meter();
    let mut best: Option<(f64, usize)> = None;
    for (bound, i) in candidates {
        let longest = window_len(i).max(wanted.len());
        let floor = best.map_or(MULTI_OCCURRENCE_MIN, |(score, _)| score);
        let limit = distance_limit(floor, longest);
        if bound > limit {
            // A window is at most `bound` characters longer than the pattern, so once even that length's
            // limit is below the bound, no later (larger) bound can pass.
            if bound > distance_limit(floor, wanted.len() + bound) {
                break;
            }
            continue;
        }
        let text: Vec<char> = trimmed[i..i + n].join("\n").chars().collect();
        let Some(distance) = pattern.distance_metered(&text, limit, &meter) else {
            if meter.spent() {
                break;
            }
            continue;
        };
        let score = if longest == 0 { 1.0 } else { 1.0 - distance as f64 / longest as f64 };
        let better = best.is_none_or(|(b, start)| score > b || (score == b && i < start));
        if score >= MULTI_OCCURRENCE_MIN && better {
            best = Some((score, i));
        }
    }
    let starts = line_starts(&lines);
    best.map(|(_, i)| vec![block(content, &starts, i, i + n - 1).to_string()]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::levenshtein::similarity;
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
    fn indentation_mixing_hair_spaces_and_spaces_is_measured_in_characters_not_bytes() {
        // U+200A is three bytes: the narrowest indentation in bytes cut another line inside one (a panic).
        assert_eq!(remove_indentation("\u{200A}x();\n y();"), "x();\ny();");
        assert_eq!(remove_indentation("\u{200A}\u{200A}a\n  b\n\n   c"), "a\nb\n\n c");
        assert_eq!(remove_indentation(" \u{3000}\u{200A}a\n\t\t\tb"), "a\nb");
        let content = "fn a() {\n\u{200A}\u{200A}x();\n  y();\n}";
        assert_eq!(
            yields(Strategy::IndentationFlexible, content, "\u{200A}x();\n y();"),
            vec!["\u{200A}\u{200A}x();\n  y();"]
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
    fn every_strategy_stops_walking_the_file_once_the_turn_is_cancelled() {
        let mut content = "    filler_line(1);\n".repeat(1000);
        content.push_str("fn target() {\n    say(\"hi\");\n    body();\n}\n");
        let finds = [
            (Strategy::LineTrimmed, "fn target() {\nsay(\"hi\");\nbody();\n}"),
            (Strategy::BlockAnchorStrict, "fn target() {\n    say(\"hi\");\n    body();\n}"),
            (Strategy::WhitespaceNormalized, "fn  target()   {\n say(\"hi\");\n  body();\n}"),
            (Strategy::IndentationFlexible, "  fn target() {\n      say(\"hi\");\n      body();\n  }"),
            (Strategy::EscapeNormalized, "fn target() {\\n    say(\\\"hi\\\");"),
            (Strategy::TrimmedBoundary, "\nfn target() {\n    say(\"hi\");\n"),
            (Strategy::ContextAware, "fn target() {\n    say(\"hi\");\n    bodx();\n}"),
            (Strategy::BlockAnchorRelaxed, "fn target() {\n    say(\"ho\");\n    body();\n}"),
            (Strategy::MultiOccurrence, "fn target() {\n    say(\"ho\");\n    body();\n}"),
        ];
        for (strategy, find) in finds {
            assert_eq!(
                yields(strategy, &content, find).len(),
                1,
                "{strategy:?} finds the block when not cancelled"
            );
            // Not cancelled when the strategy starts, cancelled at every later check.
            let asked = std::sync::atomic::AtomicUsize::new(0);
            let cancelled = || asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > 0;
            let budget = Budget::new(Some(&cancelled));
            // Trimmed-boundary's one substring search comes before its walk over the lines.
            let expected: Vec<String> =
                if strategy == Strategy::TrimmedBoundary { vec![find.trim().into()] } else { Vec::new() };
            assert_eq!(strategy.yields_within(&content, find, &budget), expected, "{strategy:?}");
            assert!(
                asked.load(std::sync::atomic::Ordering::Relaxed) > 1,
                "{strategy:?} checked while walking"
            );
        }
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

    /// The strategies as the seed states them, without pruning: every window and every anchor pair scored.
    fn multi_occurrence_reference(content: &str, find: &str) -> Vec<String> {
        let search = search_lines(find);
        let lines: Vec<&str> = content.split('\n').collect();
        if search.len() > lines.len() {
            return Vec::new();
        }
        let wanted = search.iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n");
        let starts = line_starts(&lines);
        let mut best: Option<(f64, usize)> = None;
        for i in 0..=lines.len() - search.len() {
            let text = lines[i..i + search.len()].iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n");
            let score = similarity(&text, &wanted);
            if score >= MULTI_OCCURRENCE_MIN && best.is_none_or(|(b, _)| score > b) {
                best = Some((score, i));
            }
        }
        best.map(|(_, i)| vec![block(content, &starts, i, i + search.len() - 1).to_string()])
            .unwrap_or_default()
    }

    fn block_anchor_reference(content: &str, find: &str, min_similarity: f64) -> Vec<String> {
        let lines: Vec<&str> = content.split('\n').collect();
        let search = search_lines(find);
        if search.len() < 3 {
            return Vec::new();
        }
        let (first, last) = (search[0].trim(), search[search.len() - 1].trim());
        let starts = line_starts(&lines);
        let mut best: Option<(f64, usize, usize)> = None;
        for i in (0..lines.len()).filter(|&i| lines[i].trim() == first) {
            for j in (i + 2..lines.len()).filter(|&j| lines[j].trim() == last) {
                let (block_lines, denominator) = (&lines[i..=j], (j - i + 1).max(search.len()) - 2);
                let total: f64 = (1..block_lines.len().min(search.len()) - 1)
                    .map(|k| similarity(block_lines[k].trim(), search[k].trim()))
                    .sum();
                let score = total / denominator as f64;
                if score >= min_similarity && best.is_none_or(|(b, _, _)| score > b) {
                    best = Some((score, i, j));
                }
            }
        }
        best.map(|(_, i, j)| vec![block(content, &starts, i, j).to_string()]).unwrap_or_default()
    }

    /// Files and patterns from a small alphabet of similar lines, so near matches, ties and misses all occur.
    fn generated(seed: u64, lines: usize) -> String {
        const LINES: [&str; 8] =
            ["{", "}", "  let a = 1;", "  let b = 2;", "  let ab = 12;", "", "fn f() {", "  call(a, b);"];
        let mut state = seed;
        (0..lines)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                LINES[(state >> 33) as usize % LINES.len()]
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn pruned_fuzzy_strategies_choose_exactly_what_scoring_every_candidate_chooses() {
        for seed in 0..300 {
            let content = generated(seed, 60);
            let find = generated(seed * 7 + 1, 3 + (seed as usize % 6));
            assert_eq!(
                multi_occurrence(&content, &find, &Budget::unlimited()),
                multi_occurrence_reference(&content, &find),
                "multi-occurrence, seed {seed}"
            );
            for threshold in [BLOCK_ANCHOR_STRICT, BLOCK_ANCHOR_RELAXED] {
                assert_eq!(
                    block_anchor(&content, &find, threshold, &Budget::unlimited()),
                    block_anchor_reference(&content, &find, threshold),
                    "block anchor {threshold}, seed {seed}"
                );
            }
        }
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
