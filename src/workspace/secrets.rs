//! Secret scanning: a veto on writing private keys, cloud keys and API tokens into files. Only secrets that the
//! change introduces count; a secret already in the file (a test fixture, say) does not block unrelated edits.
//!
//! Owns the patterns. Reports kinds, never the secret values.

use std::sync::LazyLock;

use regex::Regex;

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
pub fn introduced(old: &str, new: &str) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    for (kind, re) in PATTERNS.iter() {
        if re.find_iter(new).any(|m| !old.contains(m.as_str())) && !kinds.contains(kind) {
            kinds.push(*kind);
        }
    }
    kinds
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
}
