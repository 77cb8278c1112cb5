//! The YAML frontmatter of skill and command files, read leniently: `key: value` lines with plain, quoted or
//! block (`|`, `>`) scalars and indented continuation lines. Nested maps and lists (`metadata:`, `allowed-tools:`
//! as a list) are skipped: nothing here needs them. Anything else that is not `key: value` is an error naming the
//! line, so a broken file is reported rather than half read.
//!
//! Owns the parsing only.

use std::collections::BTreeMap;

/// A file split into its frontmatter fields and its body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Document {
    pub fields: BTreeMap<String, String>,
    pub body: String,
}

impl Document {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str).filter(|v| !v.is_empty())
    }
}

fn indented(line: &str) -> bool {
    line.starts_with(' ') || line.starts_with('\t')
}

/// A double-quoted scalar with its escapes, or a single-quoted one (`''` is a quote).
fn quoted(value: &str) -> Option<String> {
    if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        }
        return Some(out);
    }
    value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).map(|inner| inner.replace("''", "'"))
}

/// A plain scalar: trimmed, without a trailing ` # comment`.
fn plain(value: &str) -> String {
    let value = match value.find(" #") {
        Some(at) => &value[..at],
        None => value,
    };
    value.trim().to_string()
}

/// A block scalar's lines (`|` keeps line breaks, `>` folds them into spaces), without the indentation common to
/// them, counted in characters (a multi-byte space such as U+200A is one; in bytes a line would be cut inside it).
fn block(lines: &[&str], literal: bool) -> String {
    let width = |l: &str| l.chars().take_while(|c| c.is_whitespace()).count();
    let indent = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| width(l)).min().unwrap_or(0);
    let cut: Vec<&str> = lines
        .iter()
        .map(|l| l.char_indices().nth(indent).map_or("", |(at, _)| &l[at..]).trim_end())
        .collect();
    let text = if literal {
        cut.join("\n")
    } else {
        let mut out = String::new();
        for line in cut {
            if line.is_empty() {
                out.push('\n');
            } else {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push(' ');
                }
                out.push_str(line);
            }
        }
        out
    };
    text.trim_end().to_string()
}

/// Does this indented block look like a nested map or list rather than a continued scalar?
fn nested(lines: &[&str]) -> bool {
    lines
        .iter()
        .map(|l| l.trim_start())
        .any(|l| l.starts_with("- ") || l == "-" || l.contains(": ") || l.ends_with(':'))
}

fn fields(lines: &[&str]) -> Result<BTreeMap<String, String>, String> {
    let mut fields = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let number = i + 2;
        i += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if indented(line) {
            return Err(format!("line {number} of the frontmatter is indented but belongs to no key"));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("line {number} of the frontmatter is not `key: value`: `{}`", line.trim()));
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(format!("line {number} of the frontmatter has an invalid key `{key}`"));
        }
        let start = i;
        while i < lines.len() && (indented(lines[i]) || lines[i].trim().is_empty()) {
            i += 1;
        }
        let more = &lines[start..i];
        let value = value.trim();
        let text = match value.chars().next() {
            Some('|') => block(more, true),
            Some('>') => block(more, false),
            Some('"' | '\'') => quoted(value)
                .ok_or_else(|| format!("line {number}: the quoted value of `{key}` is not closed"))?,
            Some('[' | '{') => value.to_string(),
            None if nested(more) => continue,
            _ => {
                let mut text = plain(value);
                for line in more.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
                    if !text.is_empty() {
                        text.push(' ');
                    }
                    text.push_str(&plain(line));
                }
                text
            }
        };
        fields.insert(key.to_string(), text);
    }
    Ok(fields)
}

/// Split `text` into frontmatter and body. A file without a leading `---` line is all body.
pub fn parse(text: &str) -> Result<Document, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Ok(Document { fields: BTreeMap::new(), body: text.to_string() });
    }
    let mut head = Vec::new();
    let mut consumed = first.len();
    for line in lines {
        consumed += line.len();
        if line.trim_end() == "---" {
            let fields = fields(&head)?;
            return Ok(Document { fields, body: text[consumed..].to_string() });
        }
        head.push(line.trim_end_matches(['\n', '\r']));
    }
    Err("the frontmatter that starts with `---` is never closed".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_quoted_block_and_continued_values_are_read() {
        let doc = parse(
            "---\nname: pdf-tools\ndescription: >\n  Extract text\n  from PDFs.\n\n  Use for forms.\n\
             argument-hint: \"[file] [pages]\"\nmodel: 'gpt-5'  \nnote: first\n  second # comment\n\
             metadata:\n  author: me\nallowed-tools: [Read, Grep]\nsummary: |\n  line 1\n  line 2\n---\nBody\n",
        )
        .unwrap();
        assert_eq!(doc.get("name"), Some("pdf-tools"));
        assert_eq!(doc.get("description"), Some("Extract text from PDFs.\nUse for forms."));
        assert_eq!(doc.get("argument-hint"), Some("[file] [pages]"));
        assert_eq!(doc.get("model"), Some("gpt-5"));
        assert_eq!(doc.get("note"), Some("first second"));
        assert_eq!(doc.get("metadata"), None);
        assert_eq!(doc.get("allowed-tools"), Some("[Read, Grep]"));
        assert_eq!(doc.get("summary"), Some("line 1\nline 2"));
        assert_eq!(doc.body, "Body\n");
    }

    #[test]
    fn block_lines_indented_with_a_hair_space_keep_their_text() {
        let doc = parse("---\nsummary: |\n \u{200A}first\n  second\n   third\n---\n").unwrap();
        assert_eq!(doc.get("summary"), Some("first\nsecond\n third"));
    }

    #[test]
    fn a_file_without_frontmatter_is_all_body() {
        let doc = parse("Review $ARGUMENTS\n").unwrap();
        assert_eq!(doc, Document { fields: BTreeMap::new(), body: "Review $ARGUMENTS\n".into() });
    }

    #[test]
    fn broken_frontmatter_is_an_error_naming_the_line() {
        assert_eq!(
            parse("---\nname: x\n").unwrap_err(),
            "the frontmatter that starts with `---` is never closed"
        );
        assert_eq!(
            parse("---\nname: x\njust words\n---\n").unwrap_err(),
            "line 3 of the frontmatter is not `key: value`: `just words`"
        );
        assert_eq!(
            parse("---\ndescription: \"open\n---\n").unwrap_err(),
            "line 2: the quoted value of `description` is not closed"
        );
    }
}
