//! Searching one file for `grep`: the regex, the matching lines (each counted once, at most the cap kept),
//! context lines around them, and the 500-column clamp that keeps the match in view. Also the collector that
//! keeps only what can still be shown, newest files first.
//!
//! Owns how matches are found and kept. Reads each file at most once and never more than 1 MB of it.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use regex::bytes::Regex;

use crate::builtin::read;
use crate::tool::ToolError;
use crate::workspace::regular;

/// Larger files are skipped.
pub const MAX_FILE_SIZE: u64 = 1024 * 1024;
/// Shown lines are clamped to this many characters (seed 003's 500-column clamp).
pub const MAX_LINE_CHARS: usize = 500;
/// Characters shown before the match when a long line is clamped around it.
const LEAD_CHARS: usize = 100;

/// The search regex. `^` and `$` anchor at line ends (also before `\r\n`): the whole file is matched first, so
/// without multi-line mode an anchored pattern would only ever match the file's first or last line.
pub fn compile(pattern: &str) -> Result<Regex, ToolError> {
    regex::bytes::RegexBuilder::new(pattern)
        .multi_line(true)
        .crlf(true)
        .build()
        .map_err(|e| ToolError::retry(format!("invalid regex `{pattern}`: {e}")))
}

/// Lines shown around each match.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Around {
    pub before: usize,
    pub after: usize,
}

/// One shown line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based.
    pub number: usize,
    pub text: String,
    /// A matching line (else a context line).
    pub matched: bool,
}

/// The matches found in one file.
#[derive(Debug)]
pub struct FileMatches {
    pub path: PathBuf,
    pub modified: SystemTime,
    /// Matching lines (at most the cap) with their context, in line order.
    pub lines: Vec<Line>,
    /// Matching lines kept.
    pub kept: usize,
    /// All matching lines in the file, including those not kept.
    pub count: usize,
}

/// Cut `line` to [`MAX_LINE_CHARS`], keeping the match at `match_at` (a byte offset) in view.
pub fn clamp(line: &[u8], match_at: Option<usize>) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches('\r');
    let total = text.chars().count();
    if total <= MAX_LINE_CHARS {
        return text.to_string();
    }
    let match_char =
        match_at.map_or(0, |at| String::from_utf8_lossy(&line[..at.min(line.len())]).chars().count());
    let start = if match_char + MAX_LINE_CHARS / 2 < MAX_LINE_CHARS { 0 } else { match_char - LEAD_CHARS };
    let shown: String = text.chars().skip(start).take(MAX_LINE_CHARS).collect();
    let head = if start > 0 { "..." } else { "" };
    let tail = if start + MAX_LINE_CHARS < total { "..." } else { "" };
    format!("{head}{shown}{tail} [line of {total} characters, clamped]")
}

/// What searching one file gave.
pub enum Searched {
    Matches(FileMatches),
    Nothing,
    /// Over [`MAX_FILE_SIZE`], whatever size the file system reported.
    TooLarge,
}

/// The byte ranges of the lines of `bytes` (without their `\n`); a final newline ends the last line.
fn line_ranges(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            ranges.push((start, i));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        ranges.push((start, bytes.len()));
    }
    ranges
}

/// Search `path` for `regex`, keeping at most `cap` matching lines with `around` context lines each.
pub fn search_file(regex: &Regex, path: PathBuf, cap: usize, around: Around) -> Searched {
    search_read(regex, regular::read(&path, MAX_FILE_SIZE), path, cap, around)
}

/// [`search_file`] for a file a walk listed as regular (opened without a check by path first; see
/// `regular::open_listed`).
pub fn search_listed(regex: &Regex, path: PathBuf, cap: usize, around: Around) -> Searched {
    search_read(regex, regular::read_listed(&path, MAX_FILE_SIZE), path, cap, around)
}

fn search_read(
    regex: &Regex,
    read: Result<regular::Capped, regular::OpenError>,
    path: PathBuf,
    cap: usize,
    around: Around,
) -> Searched {
    let Ok(read) = read else { return Searched::Nothing };
    if !read.complete {
        return Searched::TooLarge;
    }
    let bytes = read.bytes;
    if !regex.is_match(&bytes) || read::is_binary(&bytes) {
        return Searched::Nothing;
    }
    let ranges = line_ranges(&bytes);
    // (line index, byte offset of the match within the line) of every kept matching line.
    let mut hits: Vec<(usize, usize)> = Vec::new();
    let mut count = 0;
    for (i, &(start, end)) in ranges.iter().enumerate() {
        if let Some(found) = regex.find(&bytes[start..end]) {
            count += 1;
            if hits.len() < cap {
                hits.push((i, found.start()));
            }
        }
    }
    if count == 0 {
        return Searched::Nothing;
    }
    let kept = hits.len();
    let lines = with_context(&bytes, &ranges, &hits, around);
    Searched::Matches(FileMatches {
        path,
        modified: read.meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        lines,
        kept,
        count,
    })
}

/// The matching lines and their context, each line once, in order.
fn with_context(
    bytes: &[u8],
    ranges: &[(usize, usize)],
    hits: &[(usize, usize)],
    around: Around,
) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    let mut next = 0;
    for (n, &(index, at)) in hits.iter().enumerate() {
        let from = index.saturating_sub(around.before).max(next);
        let until = hits.get(n + 1).map_or(ranges.len(), |(following, _)| *following);
        let to = (index + around.after).min(ranges.len() - 1).min(until.saturating_sub(1).max(index));
        for (i, &(start, end)) in ranges.iter().enumerate().take(to + 1).skip(from) {
            let matched = i == index;
            lines.push(Line {
                number: i + 1,
                text: clamp(&bytes[start..end], matched.then_some(at)),
                matched,
            });
        }
        next = to + 1;
    }
    lines
}

/// The matches that can still be shown: files newest first, and no more of them than it takes to fill the
/// cap, so a search of a whole disk holds at most `cap` matching lines however many files match.
pub struct Collector {
    pub kept: BTreeMap<(Reverse<SystemTime>, PathBuf), FileMatches>,
    kept_lines: usize,
    /// Every match seen, shown or not.
    pub total: usize,
    pub too_large: usize,
    cap: usize,
}

impl Collector {
    pub fn new(cap: usize) -> Self {
        Self { kept: BTreeMap::new(), kept_lines: 0, total: 0, too_large: 0, cap }
    }

    pub fn add(&mut self, found: FileMatches) {
        self.total += found.count;
        self.kept_lines += found.kept;
        self.kept.insert((Reverse(found.modified), found.path.clone()), found);
        while let Some((_, oldest)) = self.kept.last_key_value() {
            if self.kept_lines - oldest.kept < self.cap {
                break;
            }
            self.kept_lines -= oldest.kept;
            self.kept.pop_last();
        }
    }
}

/// `path` relative to `cwd` when inside it.
pub fn display_path(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests;
