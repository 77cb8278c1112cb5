//! Secret scanning: a veto on writing private keys, cloud keys and API tokens into files. Only secrets that the
//! change introduces count; a secret already in the file (a test fixture, say) does not block unrelated edits.
//!
//! Owns the patterns. Reports kinds, never the secret values.

use std::sync::LazyLock;

use regex::Regex;

use super::span::Span;

static PATTERNS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    [
        ("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        ("AWS access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{60,})\b"),
        ("Slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
        ("Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{32,}"),
        ("OpenAI API key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{40,}"),
        ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
        ("Stripe secret key", r"\b[rs]k_live_[0-9A-Za-z]{24,}\b"),
    ]
    .into_iter()
    .filter_map(|(kind, pattern)| Regex::new(pattern).ok().map(|re| (kind, re)))
    .collect()
});

/// The kinds of secret found in `new` that do not already appear in `old`.
///
/// No pattern matches across a line break, so a match that `old` lacks lies on a line the change touched: only
/// those lines are scanned (an edit to a 10 MB file scans a few lines, not the file). A match elsewhere sits in
/// the common prefix or suffix, which `old` holds byte for byte.
pub fn introduced(old: &str, new: &str) -> Vec<&'static str> {
    let changed = changed_lines(old, new);
    let mut kinds = Vec::new();
    for (kind, re) in PATTERNS.iter() {
        if re.find_iter(changed).any(|m| !old.contains(m.as_str())) && !kinds.contains(kind) {
            kinds.push(*kind);
        }
    }
    kinds
}

/// The whole lines of `new` that hold its changed bytes, or the line where bytes were only removed (a deletion
/// can join two halves of a key).
fn changed_lines<'a>(old: &str, new: &'a str) -> &'a str {
    let range = Span::between(old.as_bytes(), new.as_bytes()).changed(new.as_bytes());
    let bytes = new.as_bytes();
    let start = memchr::memrchr(b'\n', &bytes[..range.start]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &bytes[range.end..]).map_or(bytes.len(), |i| range.end + i);
    // Both ends are at a line break or an end of the text, so both are character boundaries.
    new.get(start..end).unwrap_or(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_keys_and_tokens_are_found_by_kind() {
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----";
        assert_eq!(introduced("", key), vec!["private key"]);
        assert_eq!(introduced("", "aws = \"AKIAIOSFODNN7EXAMPLE\""), vec!["AWS access key"]);
        assert_eq!(introduced("", &format!("token: ghp_{}", "a".repeat(36))), vec!["GitHub token"]);
        assert_eq!(
            introduced("", &format!("OPENAI_API_KEY=sk-proj-{}", "x".repeat(48))),
            vec!["OpenAI API key"]
        );
        assert_eq!(introduced("", &format!("k = AIza{}", "b".repeat(35))), vec!["Google API key"]);
    }

    #[test]
    fn secrets_already_in_the_file_and_ordinary_code_do_not_count() {
        let old = "aws = \"AKIAIOSFODNN7EXAMPLE\"\n";
        assert!(introduced(old, &format!("{old}more = 1\n")).is_empty());
        assert!(introduced("", "let task = \"sk-learn\"; // sklearn").is_empty());
        assert!(introduced("", "fn main() { println!(\"hello\"); }").is_empty());
    }

    /// What `introduced` found when it scanned the whole new text.
    fn scanning_everything(old: &str, new: &str) -> Vec<&'static str> {
        let mut kinds = Vec::new();
        for (kind, re) in PATTERNS.iter() {
            if re.find_iter(new).any(|m| !old.contains(m.as_str())) && !kinds.contains(kind) {
                kinds.push(*kind);
            }
        }
        kinds
    }

    #[test]
    fn scanning_only_the_changed_lines_finds_what_scanning_everything_finds() {
        let aws = "AKIAIOSFODNN7EXAMPLE";
        let github = format!("ghp_{}", "a".repeat(36));
        let filler: String = (0..200).map(|i| format!("let value_{i} = {i};\n")).collect();
        let old = format!("{filler}key = \"{aws}\"\ntail = \"{}\";\n{filler}", "b".repeat(16));
        let cases = [
            // A key typed into the middle of a line, completed by text after the change, at either end.
            format!("{filler}token = \"{github}\"\n{filler}"),
            format!("{filler}key = \"{aws}\" // {github}\n{filler}"),
            format!("{github}{old}"),
            format!("{old}{github}"),
            // A key completed by the unchanged text around the change: `ghp_` + 36 characters split across it.
            old.replacen("tail = \"", &format!("tail = \"ghp_{}", "b".repeat(20)), 1),
            // The key already there, moved or copied: not new.
            format!("{old}copy = \"{aws}\"\n"),
            old.replacen("let value_3 = 3;", "let value_3 = 4;", 1),
            old.replacen(aws, "", 1),
            String::new(),
        ];
        for new in &cases {
            assert_eq!(introduced(&old, new), scanning_everything(&old, new), "{new:.80}");
        }
        assert_eq!(introduced(&old, &cases[0]), vec!["GitHub token"]);
        assert_eq!(introduced(&old, &cases[4]), vec!["GitHub token"]);
        assert!(introduced(&old, &cases[5]).is_empty());
        // A deletion alone (no byte added) that joins two halves of a key on one line.
        let split = format!("{filler}t = \"ghp_{}\n{}\";\n{filler}", "c".repeat(20), "c".repeat(16));
        let joined = split.replacen(&format!("{}\n", "c".repeat(20)), &"c".repeat(20), 1);
        assert_eq!(scanning_everything(&split, &joined), vec!["GitHub token"]);
        assert_eq!(introduced(&split, &joined), vec!["GitHub token"]);
    }
}
