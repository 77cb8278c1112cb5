//! Finding a chunk's old lines in a file: exact, then ignoring trailing whitespace, then ignoring surrounding
//! whitespace, then with Unicode punctuation and spaces folded to ASCII. The first pass that matches wins.
//!
//! Owns line matching only.

/// Fold typographic dashes, quotes and spaces to their ASCII forms.
pub fn normalize_punctuation(line: &str) -> String {
    line.trim()
        .chars()
        .map(|c| match c {
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}' | '\u{2212}' => '-',
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// Compares a file line with a pattern line.
type LineEq = dyn Fn(&str, &str) -> bool;

/// The index at or after `start` where `pattern` occurs in `lines`. With `eof`, the search starts where the
/// pattern would end the file (but not before `start`).
pub fn seek<S: AsRef<str>>(lines: &[S], pattern: &[String], start: usize, eof: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(start);
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let from = if eof { last.max(start) } else { start };
    if from > last {
        return None;
    }
    let passes: [&LineEq; 4] =
        [&|a, b| a == b, &|a, b| a.trim_end() == b.trim_end(), &|a, b| a.trim() == b.trim(), &|a, b| {
            normalize_punctuation(a) == normalize_punctuation(b)
        }];
    passes.iter().find_map(|same| {
        (from..=last).find(|&i| pattern.iter().enumerate().all(|(k, p)| same(lines[i + k].as_ref(), p)))
    })
}
