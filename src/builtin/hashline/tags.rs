//! Hashline tags (seed 004): each line of a file is shown as `N:hh|content`, where `N` is its 1-based number
//! and `hh` the first two hex digits of the MD5 of its content (without the line ending). A reference `N:hh`
//! names a line and proves what the model saw there.
//!
//! One splitter serves reading and editing: lines end at `\n`, one `\r` before it belongs to the ending, a
//! final newline does not start another line, and a leading byte-order mark is not part of line 1.
//!
//! Owns the tag format and reference parsing. Must not touch files.

/// The byte-order mark, kept out of line 1.
pub const BOM: char = '\u{feff}';

/// The two-hex-digit hash of a line's content.
pub fn hash(line: &str) -> String {
    format!("{:02x}", md5::compute(line.as_bytes()).0[0])
}

/// `N:hh|content`.
pub fn tag(number: usize, line: &str) -> String {
    format!("{number}:{}|{line}", hash(line))
}

/// The lines of `text` (see the module docs), without their endings.
pub fn split_lines(text: &str) -> Vec<&str> {
    let text = text.strip_prefix(BOM).unwrap_or(text);
    let mut lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    if text.is_empty() || text.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// A parsed `N:hh` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    pub line: i64,
    pub hash: String,
}

/// Parse a reference. Forgiving where the intent is clear: surrounding spaces, a pasted `|content` tail and an
/// upper-case hash are accepted (the hash is hexadecimal, so case carries nothing).
pub fn parse_ref(raw: &str) -> Result<Ref, String> {
    let trimmed = raw.trim();
    let trimmed = trimmed.split_once('|').map_or(trimmed, |(head, _)| head).trim();
    let Some((line, hash)) = trimmed.split_once(':') else {
        return Err(format!("Invalid line reference '{raw}': expected format '<line>:<hash>'"));
    };
    let number = line
        .trim()
        .parse::<i64>()
        .map_err(|_| format!("Invalid line number in reference '{raw}': {}", line.trim()))?;
    let hash = hash.trim().to_ascii_lowercase();
    if hash.chars().count() != 2 {
        return Err(format!(
            "Invalid hash length in reference '{raw}': expected 2 chars, got {}",
            hash.chars().count()
        ));
    }
    Ok(Ref { line: number, hash })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_splitter_for_every_ending() {
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("\n"), vec![""]);
        assert_eq!(split_lines("a\nb"), vec!["a", "b"]);
        assert_eq!(split_lines("a\r\nb\r\n"), vec!["a", "b"]);
        assert_eq!(split_lines("\u{feff}a\n\nc\x0cd\n"), vec!["a", "", "c\x0cd"], "a form feed is content");
        assert_eq!(split_lines("a\rb\n"), vec!["a\rb"], "a lone carriage return is content");
    }
}
