//! Applying hashline operations to a file's current text: every reference is checked against the text as it is
//! now (a stale one is refused with the current tags around it), all operations of one call against the same
//! snapshot and all or nothing, and the file's conventions survive: byte-order mark, line endings (each kept
//! line keeps its own, new lines take the file's usual one) and whether it ends with a newline.
//!
//! Owns the operations' semantics and messages. Pure: no files, no async.

use super::tags::{self, BOM, Ref, split_lines};

/// How many lines around a stale reference the refusal shows.
const STALE_CONTEXT: usize = 2;

/// What one operation does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Replace the line `line` with `new` (which may hold several lines, or none to leave an empty line).
    Replace { line: String },
    /// Replace lines `start`..=`end` with the lines of `new` (none deletes them).
    ReplaceRange { start: String, end: String },
    /// Insert the lines of `new` after `after`; `0` inserts before the first line.
    InsertAfter { after: String },
}

/// One operation as the model sent it: references are still text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    pub kind: Kind,
    pub new: String,
}

/// An operation resolved against the snapshot: replace lines `[from, to)` (0-based) with `lines`.
#[derive(Debug, Clone)]
struct Resolved {
    from: usize,
    to: usize,
    lines: Vec<String>,
    summary: String,
}

/// The result of applying operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    /// What each operation did (`replaced line 2`), in the order given.
    pub summaries: Vec<String>,
}

/// A file's text split for editing.
struct Doc<'a> {
    bom: bool,
    lines: Vec<&'a str>,
    /// The ending of each line (`\n`, `\r\n`, or empty for a last line without one).
    endings: Vec<&'a str>,
    usual: &'static str,
}

impl<'a> Doc<'a> {
    fn parse(text: &'a str) -> Doc<'a> {
        let bom = text.starts_with(BOM);
        let body = text.strip_prefix(BOM).unwrap_or(text);
        let lines = split_lines(body);
        let mut endings = Vec::with_capacity(lines.len());
        let mut at = 0;
        for line in &lines {
            let rest = &body[at + line.len()..];
            let ending = if rest.starts_with("\r\n") {
                "\r\n"
            } else if rest.starts_with('\n') {
                "\n"
            } else {
                ""
            };
            endings.push(ending);
            at += line.len() + ending.len();
        }
        let crlf = endings.iter().filter(|e| **e == "\r\n").count();
        let lf = endings.iter().filter(|e| **e == "\n").count();
        Doc { bom, lines, endings, usual: if crlf > lf { "\r\n" } else { "\n" } }
    }

    /// The tags of lines `[from, to)` (0-based, clamped), one per line.
    fn tags(&self, from: usize, to: usize) -> String {
        let to = to.min(self.lines.len());
        (from.min(to)..to).map(|i| tags::tag(i + 1, self.lines[i])).collect::<Vec<_>>().join("\n")
    }

    /// The 0-based index of the line `raw` names, checked against the current text.
    fn check(&self, raw: &str) -> Result<usize, String> {
        let Ref { line, hash } = tags::parse_ref(raw).map_err(|e| {
            format!("Invalid line reference '{raw}': {e}. Use '<line>:<hash>' from the read output.")
        })?;
        let total = self.lines.len();
        let index = usize::try_from(line).ok().filter(|n| (1..=total).contains(n)).map(|n| n - 1);
        let Some(index) = index else {
            let tail = self.tags(total.saturating_sub(STALE_CONTEXT + 1), total);
            let shown = if tail.is_empty() { String::new() } else { format!(" Its last lines are:\n{tail}") };
            return Err(format!("Line {line} is out of range (file has {total} lines).{shown}"));
        };
        let current = tags::hash(self.lines[index]);
        if current != hash {
            return Err(format!(
                "Line {line} has changed since you read it (your reference says '{hash}', the line is now '{current}'). The current lines around it are:\n{}\nUse these references, or read the file again.",
                self.tags(index.saturating_sub(STALE_CONTEXT), index + STALE_CONTEXT + 1)
            ));
        }
        Ok(index)
    }

    /// The insertion point `raw` names: `0` is before the first line, otherwise after the checked line.
    fn check_after(&self, raw: &str) -> Result<usize, String> {
        let bare = raw.trim();
        if bare == "0" || bare.starts_with("0:") {
            return Ok(0);
        }
        self.check(raw).map(|index| index + 1)
    }
}

/// The lines of an operation's `new` text: split like a file, so a trailing newline adds no empty line.
fn new_lines(new: &str) -> Vec<String> {
    split_lines(new).into_iter().map(str::to_string).collect()
}

fn resolve(doc: &Doc, op: &Op) -> Result<Resolved, String> {
    match &op.kind {
        Kind::Replace { line } => {
            let index = doc.check(line)?;
            let lines = if op.new.is_empty() { vec![String::new()] } else { new_lines(&op.new) };
            Ok(Resolved {
                from: index,
                to: index + 1,
                lines,
                summary: format!("replaced line {}", index + 1),
            })
        }
        Kind::ReplaceRange { start, end } => {
            let (first, last) = (doc.check(start)?, doc.check(end)?);
            if first > last {
                return Err(format!(
                    "Start line ({}) must not be greater than end line ({}).",
                    first + 1,
                    last + 1
                ));
            }
            Ok(Resolved {
                from: first,
                to: last + 1,
                lines: new_lines(&op.new),
                summary: format!("replaced lines {}-{}", first + 1, last + 1),
            })
        }
        Kind::InsertAfter { after } => {
            let at = doc.check_after(after)?;
            let lines = new_lines(&op.new);
            let summary = format!("inserted {} line(s) after line {at}", lines.len());
            Ok(Resolved { from: at, to: at, lines, summary })
        }
    }
}

/// Whether two operations touch the same lines. An insertion at `p` goes between lines `p - 1` and `p`: it
/// collides with another insertion there, and with a replacement of the line it was placed after.
fn collide(a: &Resolved, b: &Resolved) -> bool {
    match (a.from == a.to, b.from == b.to) {
        (true, true) => a.from == b.from,
        (true, false) => b.from < a.from && a.from <= b.to,
        (false, true) => a.from < b.from && b.from <= a.to,
        (false, false) => a.from < b.to && b.from < a.to,
    }
}

/// Refuse operations that touch the same lines: their order would be a guess.
fn check_overlaps(resolved: &[Resolved]) -> Result<(), String> {
    for (i, a) in resolved.iter().enumerate() {
        for (j, b) in resolved.iter().enumerate().skip(i + 1) {
            if collide(a, b) {
                return Err(format!(
                    "Edits {} and {} touch the same lines ({} and {}). Combine them into one edit.",
                    i + 1,
                    j + 1,
                    a.summary,
                    b.summary
                ));
            }
        }
    }
    Ok(())
}

/// Apply `ops` to `text`, all or nothing, every reference checked against `text`.
pub fn apply(text: &str, ops: &[Op]) -> Result<Applied, String> {
    let doc = Doc::parse(text);
    let mut resolved = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let prefix = if ops.len() > 1 { format!("Edit {}: ", i + 1) } else { String::new() };
        resolved.push(resolve(&doc, op).map_err(|e| format!("{prefix}{e}"))?);
    }
    check_overlaps(&resolved)?;
    let summaries = resolved.iter().map(|r| r.summary.clone()).collect();
    // (content, original ending): new lines have none yet.
    let mut lines: Vec<(&str, Option<&str>)> =
        doc.lines.iter().zip(&doc.endings).map(|(l, e)| (*l, Some(*e))).collect();
    let mut order: Vec<&Resolved> = resolved.iter().collect();
    order.sort_by_key(|r| std::cmp::Reverse((r.from, r.to)));
    for r in order {
        lines.splice(r.from..r.to, r.lines.iter().map(|l| (l.as_str(), None)));
    }
    // An empty file gets a final newline; otherwise the file keeps whether it had one.
    let final_newline = doc.endings.last().is_none_or(|e| !e.is_empty());
    let mut out = String::with_capacity(text.len() + 64);
    if doc.bom {
        out.push(BOM);
    }
    let last = lines.len().saturating_sub(1);
    for (i, (content, ending)) in lines.iter().enumerate() {
        out.push_str(content);
        let ending = match ending {
            _ if i == last && !final_newline => "",
            Some(e) if !e.is_empty() => e,
            _ => doc.usual,
        };
        out.push_str(ending);
    }
    Ok(Applied { text: out, summaries })
}

#[cfg(test)]
mod tests;
