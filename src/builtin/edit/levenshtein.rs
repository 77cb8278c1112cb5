//! Levenshtein distance with the two-row dynamic programme (seed 000 `edit_levenshtein.go`) and
//! `Similarity = 1 − dist / maxLen`, over characters.
//!
//! Owns string distance only.

use super::budget::{Budget, Meter};

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

/// The distance between `a` and `b` if it is at most `limit`, computed only in the diagonal band that can
/// stay within the limit (two rows of `2·limit + 1` cells).
pub fn distance_within(a: &[char], b: &[char], limit: usize) -> Option<usize> {
    distance_metered(a, b, limit, &Budget::unlimited().meter())
}

/// Rows of the banded programme between two charges to the meter (and cancellation checks).
const ROWS_PER_CHARGE: usize = 32;

/// [`distance_within`] that charges its cells to `meter` and gives up (`None`) when the meter refuses.
/// Only the band is touched: each row writes its cells plus one sentinel on either side, so a row costs
/// `2·limit + 3` cells however long `b` is, and the programme stops as soon as a whole row exceeds the limit.
pub fn distance_metered(a: &[char], b: &[char], limit: usize, meter: &Meter) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    if a.is_empty() || b.is_empty() {
        return Some(a.len().max(b.len()));
    }
    let far = limit + 1;
    let band = (2 * limit + 1).min(b.len()) as u64;
    let mut previous: Vec<usize> = (0..=b.len()).map(|j| if j <= limit { j } else { far }).collect();
    let mut current = vec![far; b.len() + 1];
    for i in 1..=a.len() {
        if i % ROWS_PER_CHARGE == 1 && !meter.charge(band * ROWS_PER_CHARGE as u64) {
            return None;
        }
        let (low, high) = (i.saturating_sub(limit).max(1), (i + limit).min(b.len()));
        current[low - 1] = if low == 1 && i <= limit { i } else { far };
        let mut best = current[low - 1];
        let ai = a[i - 1];
        for j in low..=high {
            let substitution = previous[j - 1] + usize::from(ai != b[j - 1]);
            let value = substitution.min(previous[j] + 1).min(current[j - 1] + 1).min(far);
            current[j] = value;
            best = best.min(value);
        }
        if high < b.len() {
            current[high + 1] = far;
        }
        if best > limit {
            return None;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    (previous[b.len()] <= limit).then_some(previous[b.len()])
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
    fn the_banded_distance_agrees_with_the_full_one_within_its_limit() {
        let words = [
            "kitten",
            "sitting",
            "",
            "abc",
            "flaw",
            "lawn",
            "héllo",
            "hello",
            "a much longer line of code",
            "a much lunger line of cod",
        ];
        for a in words {
            for b in words {
                let (ca, cb): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                let full = distance(a, b);
                for limit in 0..8 {
                    let expected = (full <= limit).then_some(full);
                    assert_eq!(distance_within(&ca, &cb, limit), expected, "{a:?} {b:?} {limit}");
                }
            }
        }
    }

    #[test]
    fn similarity_is_one_minus_distance_over_the_longer_length() {
        assert_eq!(similarity("abcd", "abcd"), 1.0);
        assert_eq!(similarity("", ""), 1.0);
        assert_eq!(similarity("abcd", "abcx"), 0.75);
        assert_eq!(similarity("ab", "cdef"), 0.0);
    }
}
