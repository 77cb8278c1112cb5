//! Levenshtein distance with the two-row dynamic programme (seed 000 `edit_levenshtein.go`) and
//! `Similarity = 1 − dist / maxLen`, over characters.
//!
//! Owns string distance only.

/// Edit distance between `a` and `b`, counted in characters.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.is_empty() {
        return b.len();
    }
    if b.is_empty() {
        return a.len();
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// `1 − distance / max(len)`; two empty strings are identical (1.0).
pub fn similarity(a: &str, b: &str) -> f64 {
    let longest = a.chars().count().max(b.chars().count());
    if longest == 0 {
        return 1.0;
    }
    1.0 - distance(a, b) as f64 / longest as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_insertions_deletions_and_substitutions() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("flaw", "lawn"), 2);
        assert_eq!(distance("héllo", "hello"), 1, "characters, not bytes");
    }

    #[test]
    fn similarity_is_one_minus_distance_over_the_longer_length() {
        assert_eq!(similarity("abcd", "abcd"), 1.0);
        assert_eq!(similarity("", ""), 1.0);
        assert_eq!(similarity("abcd", "abcx"), 0.75);
        assert_eq!(similarity("ab", "cdef"), 0.0);
    }
}
