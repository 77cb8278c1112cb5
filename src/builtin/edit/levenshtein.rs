//! Levenshtein distance (seed 000 `edit_levenshtein.go`) and `Similarity = 1 − dist / maxLen`, over characters:
//! the two-row dynamic programme as the reference, and the bit-parallel programme, banded by a limit, that the
//! fuzzy strategies run (64 cells per machine word, the same distances).
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

/// [`distance_within`] that charges its work to `meter` and gives up (`None`) when the meter refuses; see
/// [`Pattern::distance_metered`].
pub fn distance_metered(a: &[char], b: &[char], limit: usize, meter: &Meter) -> Option<usize> {
    Pattern::new(b).distance_metered(a, limit, meter)
}

/// Columns (text characters) of a programme between two charges to the meter (and cancellation checks).
const COLUMNS_PER_CHARGE: usize = 32;

/// The most words a [`Pattern`]'s table (one row of words per distinct character) may take, 4 MB: a pattern
/// longer than a few thousand characters with thousands of distinct ones would otherwise need gigabytes, and
/// is compared by the two-row programme instead.
const TABLE_WORDS: usize = 512 * 1024;

/// Bits in one block of the bit-parallel programme.
const WORD: usize = 64;

/// A string prepared for the bit-parallel distance (Myers 1999, in blocks of 64 rows as Hyyrö 2003
/// describes): for every distinct character, the bit vectors of the positions where it occurs. Build it once
/// and compare it with many texts.
pub struct Pattern {
    len: usize,
    blocks: usize,
    /// Row of `equal` for each ASCII character; 0 (all bits clear) for one absent from the pattern.
    ascii: [u32; 128],
    /// The same for the other characters, sorted.
    other: Vec<(char, u32)>,
    /// `blocks` words per distinct character, after one all-clear row.
    equal: Vec<u64>,
    /// The characters themselves when the table would exceed [`TABLE_WORDS`] (and is left empty).
    scalar: Option<Vec<char>>,
}

impl Pattern {
    pub fn new(chars: &[char]) -> Self {
        Self::with_table_limit(chars, TABLE_WORDS)
    }

    fn with_table_limit(chars: &[char], table_words: usize) -> Self {
        let blocks = chars.len().div_ceil(WORD);
        let mut pattern = Pattern {
            len: chars.len(),
            blocks,
            ascii: [0; 128],
            other: Vec::new(),
            equal: Vec::new(),
            scalar: None,
        };
        // At most one row per character and the all-clear one; count the distinct ones only when that could
        // exceed the limit.
        if (chars.len() + 1).saturating_mul(blocks) > table_words {
            let mut distinct = chars.to_vec();
            distinct.sort_unstable();
            distinct.dedup();
            if (distinct.len() + 1).saturating_mul(blocks) > table_words {
                pattern.scalar = Some(chars.to_vec());
                return pattern;
            }
        }
        pattern.equal = vec![0; blocks];
        for (i, &c) in chars.iter().enumerate() {
            let row = match pattern.row(c) {
                0 => pattern.add_row(c),
                row => row,
            };
            pattern.equal[row as usize * blocks + i / WORD] |= 1 << (i % WORD);
        }
        pattern
    }

    /// Length in characters.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn add_row(&mut self, c: char) -> u32 {
        let row = (self.equal.len() / self.blocks) as u32;
        self.equal.resize(self.equal.len() + self.blocks, 0);
        match usize::try_from(u32::from(c)).ok().filter(|&code| code < 128) {
            Some(code) => self.ascii[code] = row,
            None => {
                let at = self.other.partition_point(|&(o, _)| o < c);
                self.other.insert(at, (c, row));
            }
        }
        row
    }

    fn row(&self, c: char) -> u32 {
        let code = u32::from(c);
        if code < 128 {
            return self.ascii[code as usize];
        }
        self.other.binary_search_by_key(&c, |&(o, _)| o).map_or(0, |at| self.other[at].1)
    }

    /// The distance between the pattern and `text` if it is at most `limit`, charging `meter` for the words
    /// computed; `None` when it is larger or the meter refuses. Only the blocks that meet the diagonal band
    /// `|row − column| ≤ limit` are computed (a block enters the band below, initialised from the block above
    /// as an upper bound, and leaves it above, its lower neighbour then taking `+1` as its top edge): every
    /// cell whose true value is within the limit is computed exactly, every other one is overestimated, which
    /// cannot bring it within the limit. The programme stops as soon as no cell of a column can be within it.
    pub fn distance_metered(&self, text: &[char], limit: usize, meter: &Meter) -> Option<usize> {
        let (m, n) = (self.len, text.len());
        if m.abs_diff(n) > limit {
            return None;
        }
        if m == 0 || n == 0 {
            return Some(m.max(n));
        }
        let limit = limit.min(m.max(n));
        if let Some(chars) = &self.scalar {
            return banded_metered(text, chars, limit, meter);
        }
        if self.blocks == 1 {
            return self.one_block(text, limit, meter);
        }
        let rows = |block: usize| (m - block * WORD).min(WORD);
        let mut positive = vec![u64::MAX; self.blocks];
        let mut negative = vec![0u64; self.blocks];
        // The value at the bottom row of each block, in the last column computed.
        let mut bottom = vec![0usize; self.blocks];
        let mut first = 0;
        let mut last = (limit.clamp(1, m) - 1) / WORD;
        for (block, value) in bottom.iter_mut().enumerate().take(last + 1) {
            *value = block * WORD + rows(block);
        }
        for (j, &c) in text.iter().enumerate().map(|(j, c)| (j + 1, c)) {
            if j % COLUMNS_PER_CHARGE == 1
                && !meter.charge(((last - first + 1) * WORD * COLUMNS_PER_CHARGE) as u64)
            {
                return None;
            }
            while last < (m.min(j + limit) - 1) / WORD {
                last += 1;
                positive[last] = u64::MAX;
                negative[last] = 0;
                bottom[last] = bottom[last - 1] + rows(last);
            }
            first = first.max((j.saturating_sub(limit).max(1) - 1) / WORD);
            let row = self.row(c) as usize * self.blocks;
            let mut carry = 1i8;
            let mut reachable = false;
            for block in first..=last {
                let high = rows(block) - 1;
                let step =
                    Step::advance(positive[block], negative[block], self.equal[row + block], carry, high);
                (positive[block], negative[block], carry) = (step.positive, step.negative, step.carry);
                bottom[block] = bottom[block].wrapping_add_signed(carry as isize);
                reachable |= bottom[block] <= limit + high;
            }
            if !reachable {
                return None;
            }
        }
        let distance = bottom[self.blocks - 1];
        (distance <= limit).then_some(distance)
    }

    /// [`Pattern::distance_metered`] for a pattern of at most 64 characters (a line): one word, no band.
    fn one_block(&self, text: &[char], limit: usize, meter: &Meter) -> Option<usize> {
        let high = self.len - 1;
        let (mut positive, mut negative, mut bottom) = (u64::MAX, 0u64, self.len);
        for (j, &c) in text.iter().enumerate() {
            if j % COLUMNS_PER_CHARGE == 0 && !meter.charge((WORD * COLUMNS_PER_CHARGE) as u64) {
                return None;
            }
            let step = Step::advance(positive, negative, self.equal[self.row(c) as usize], 1, high);
            (positive, negative) = (step.positive, step.negative);
            bottom = bottom.wrapping_add_signed(step.carry as isize);
            if bottom > limit + high {
                return None;
            }
        }
        (bottom <= limit).then_some(bottom)
    }
}

/// The two-row programme in the diagonal band `|i − j| ≤ limit` (two rows of `b.len() + 1` cells, each row
/// writing its `2·limit + 1` band cells and a sentinel on either side), charging `meter` every
/// [`COLUMNS_PER_CHARGE`] rows and stopping as soon as a whole row exceeds the limit. For the patterns too large
/// for a [`Pattern`] table; `a` and `b` are not empty and differ in length by at most `limit`.
fn banded_metered(a: &[char], b: &[char], limit: usize, meter: &Meter) -> Option<usize> {
    let far = limit + 1;
    let band = (2 * limit + 1).min(b.len()) as u64;
    let mut previous: Vec<usize> = (0..=b.len()).map(|j| if j <= limit { j } else { far }).collect();
    let mut current = vec![far; b.len() + 1];
    for i in 1..=a.len() {
        if i % COLUMNS_PER_CHARGE == 1 && !meter.charge(band * COLUMNS_PER_CHARGE as u64) {
            return None;
        }
        let (low, high) = (i.saturating_sub(limit).max(1), (i + limit).min(b.len()));
        current[low - 1] = if low == 1 && i <= limit { i } else { far };
        let mut best = current[low - 1];
        for j in low..=high {
            let substitution = previous[j - 1] + usize::from(a[i - 1] != b[j - 1]);
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

/// One column step of one block: the vertical deltas (`positive`: +1, `negative`: −1 bits) after the step, and
/// the horizontal delta leaving the block's bottom row (`carry`: −1, 0 or +1).
struct Step {
    positive: u64,
    negative: u64,
    carry: i8,
}

impl Step {
    /// Myers' step for a block whose previous column has the deltas `positive`/`negative`, where the text
    /// character matches the rows in `equal`, and the row above the block changed by `carry_in`; `high` is the
    /// bit of the block's bottom row.
    fn advance(positive: u64, negative: u64, equal: u64, carry_in: i8, high: usize) -> Step {
        let below = u64::from(carry_in < 0);
        let vertical = equal | negative;
        let equal = equal | below;
        let horizontal = (((equal & positive).wrapping_add(positive)) ^ positive) | equal;
        let mut plus = negative | !(horizontal | positive);
        let mut minus = positive & horizontal;
        let carry = ((plus >> high) & 1) as i8 - ((minus >> high) & 1) as i8;
        plus = (plus << 1) | u64::from(carry_in > 0);
        minus = (minus << 1) | below;
        Step { positive: minus | !(vertical | plus), negative: plus & vertical, carry }
    }
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

    /// A small deterministic generator (xorshift), so the cases are the same on every run.
    fn strings(seed: u64, count: usize) -> Vec<Vec<char>> {
        let alphabet: Vec<char> = "ab c\u{e9}\u{1f600}xyzab".chars().collect();
        let mut state = seed;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..count)
            .map(|i| {
                // Lengths around the 64-row block edges, and short ones.
                let len = [0, 1, 5, 63, 64, 65, 127, 128, 129, 200][i % 10] + (next() % 3) as usize;
                (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect()
            })
            .collect()
    }

    #[test]
    fn the_bit_parallel_distance_equals_the_dynamic_programme_across_block_edges_and_limits() {
        let texts = strings(0x9e37_79b9_7f4a_7c15, 40);
        // Pairs that differ a little too, so small limits are met as well as missed.
        let mut pairs: Vec<(Vec<char>, Vec<char>)> = Vec::new();
        for (i, a) in texts.iter().enumerate() {
            pairs.push((a.clone(), texts[(i * 7 + 3) % texts.len()].clone()));
            let mut b = a.clone();
            for k in (0..b.len()).step_by(9) {
                b[k] = 'q';
            }
            if b.len() > 70 {
                b.drain(30..33);
                b.insert(60, 'w');
            }
            pairs.push((a.clone(), b));
        }
        for (a, b) in pairs {
            let (sa, sb): (String, String) = (a.iter().collect(), b.iter().collect());
            let full = distance(&sa, &sb);
            let pattern = Pattern::new(&b);
            for limit in [0, 1, 2, 5, full.saturating_sub(1), full, full + 1, 64, 130, 1000] {
                let expected = (full <= limit).then_some(full);
                let unlimited = Budget::unlimited();
                assert_eq!(
                    pattern.distance_metered(&a, limit, &unlimited.meter()),
                    expected,
                    "{sa:?} {sb:?} {limit}"
                );
            }
        }
    }

    #[test]
    fn a_long_pattern_with_thousands_of_distinct_characters_keeps_no_table_and_gives_the_same_distances() {
        // 12,000 characters cycling through 4,000 CJK ideographs: a table would take 188 blocks per character.
        let chars: Vec<char> = (0..12_000).map(|i| char::from_u32(0x4e00 + i % 4_000).unwrap()).collect();
        let mut text = chars.clone();
        for at in [10, 5_000, 11_990] {
            text[at] = 'x';
        }
        text.insert(7_000, 'y');
        let small = Pattern::new(&chars);
        assert!(small.scalar.is_some() && small.equal.is_empty(), "no table for this pattern");
        let table = Pattern::with_table_limit(&chars, usize::MAX);
        assert_eq!(table.equal.len(), (4_000 + 1) * 188);
        for limit in [0, 3, 4, 5, 100] {
            let unlimited = Budget::unlimited();
            let expected = (limit >= 4).then_some(4);
            assert_eq!(small.distance_metered(&text, limit, &unlimited.meter()), expected, "{limit}");
            assert_eq!(table.distance_metered(&text, limit, &unlimited.meter()), expected, "{limit}");
        }
    }

    #[test]
    fn the_bit_parallel_distance_stops_when_its_meter_refuses() {
        let (a, b): (Vec<char>, Vec<char>) =
            ("a".repeat(100).chars().collect(), "b".repeat(100).chars().collect());
        let budget = Budget::with_cells(None, 64);
        assert_eq!(Pattern::new(&b).distance_metered(&a, 100, &budget.meter()), None);
        assert!(budget.ran_out());
        // Four charges of 32 columns by two blocks of 64 rows.
        let budget = Budget::with_cells(None, 4 * 32 * 2 * 64);
        assert_eq!(Pattern::new(&b).distance_metered(&a, 100, &budget.meter()), Some(100));
    }

    #[test]
    fn similarity_is_one_minus_distance_over_the_longer_length() {
        assert_eq!(similarity("abcd", "abcd"), 1.0);
        assert_eq!(similarity("", ""), 1.0);
        assert_eq!(similarity("abcd", "abcx"), 0.75);
        assert_eq!(similarity("ab", "cdef"), 0.0);
    }
}
