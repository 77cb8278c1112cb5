//! Finding the query's terms in text: one multi-literal scan (Aho-Corasick, ASCII case ignored) that counts
//! each term where it starts a word or a sub-word (`token` in `access_token`, `TokenStore`, `tokens`, but not in
//! `detokenize`; `run` in `run_step` but not in `truncate`), and a case-sensitive scan for exact identifiers.
//!
//! Owns what counts as a hit. Must not read files.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

use super::terms::Terms;

/// The compiled scans of one query.
pub struct Matcher {
    terms: Option<AhoCorasick>,
    exact: Option<AhoCorasick>,
    /// Number of terms (the length of the count vectors).
    pub len: usize,
    pub exact_len: usize,
}

/// Does a sub-word start at `at` in `text`?
fn starts_word(text: &[u8], at: usize) -> bool {
    let Some(&before) = at.checked_sub(1).and_then(|i| text.get(i)) else { return true };
    if !before.is_ascii_alphanumeric() {
        return true;
    }
    // A camel hump: `accessToken` (lower or digit, then upper), `HTTPServer` (upper, then upper and lower).
    let upper = |i: usize| text.get(i).is_some_and(u8::is_ascii_uppercase);
    let lower = |i: usize| text.get(i).is_some_and(u8::is_ascii_lowercase);
    upper(at) && (!before.is_ascii_uppercase() || lower(at + 1))
}

impl Matcher {
    pub fn new(terms: &Terms) -> Matcher {
        let build = |patterns: Vec<&str>, fold: bool| {
            if patterns.is_empty() {
                return None;
            }
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(fold)
                .match_kind(MatchKind::Standard)
                // A query has a few dozen short terms: the DFA is small and the fastest overlapping scan.
                .kind(Some(AhoCorasickKind::DFA))
                .build(patterns)
                .ok()
        };
        Matcher {
            terms: build(terms.terms.iter().map(|t| t.text.as_str()).collect(), true),
            exact: build(terms.exact.iter().map(String::as_str).collect(), false),
            len: terms.terms.len(),
            exact_len: terms.exact.len(),
        }
    }

    /// How often each term starts a word or sub-word of `text`, by term index.
    pub fn count(&self, text: &[u8]) -> Vec<u32> {
        let mut counts = vec![0u32; self.len];
        if let Some(scan) = &self.terms {
            for hit in scan.find_overlapping_iter(text) {
                if starts_word(text, hit.start()) {
                    let slot = &mut counts[hit.pattern().as_usize()];
                    *slot = slot.saturating_add(1);
                }
            }
        }
        counts
    }

    /// Which exact identifiers occur in `text` (case-sensitive), by index.
    pub fn exact(&self, text: &[u8]) -> Vec<bool> {
        let mut seen = vec![false; self.exact_len];
        if let Some(scan) = &self.exact {
            for hit in scan.find_overlapping_iter(text) {
                seen[hit.pattern().as_usize()] = true;
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::super::terms::extract;
    use super::*;

    #[test]
    fn terms_count_where_they_start_a_word_or_a_camel_or_snake_sub_word() {
        let matcher = Matcher::new(&extract("token run"));
        let text =
            b"HTTPToken accessToken access_token TokenStore tokens detokenize run_step truncate rerun RUN";
        assert_eq!(matcher.count(text), vec![5, 2]);
    }

    #[test]
    fn exact_identifiers_are_case_sensitive() {
        let matcher = Matcher::new(&extract("where is SessionStore"));
        assert_eq!(matcher.exact(b"struct sessionstore"), vec![false]);
        assert_eq!(matcher.exact(b"struct SessionStore"), vec![true]);
    }
}
