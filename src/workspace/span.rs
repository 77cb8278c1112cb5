//! Where two versions of a text differ, in bytes: how long their common prefix and common suffix are. Found by
//! comparing blocks (the platform's vectorised `memcmp`) and then bytes only inside the first differing block,
//! so a one-line change to a 10 MB file costs a couple of milliseconds rather than a line-by-line walk.
//!
//! Owns that comparison. Knows nothing of lines, files or tools.

/// Bytes compared at once before looking at single bytes.
const BLOCK: usize = 4096;

/// The common ends of two texts. `prefix + suffix` never exceeds the shorter text's length, so the changed
/// region is `[prefix, len - suffix)` in each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub prefix: usize,
    pub suffix: usize,
}

impl Span {
    /// The common prefix and suffix of `old` and `new`.
    pub fn between(old: &[u8], new: &[u8]) -> Span {
        let prefix = common_prefix(old, new);
        let room = old.len().min(new.len()) - prefix;
        let suffix = common_suffix(&old[old.len() - room..], &new[new.len() - room..]);
        Span { prefix, suffix }
    }

    /// The changed bytes of `text` (one of the two texts this span was computed from).
    pub fn changed(self, text: &[u8]) -> std::ops::Range<usize> {
        self.prefix..text.len() - self.suffix
    }
}

/// The length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..len].iter().zip(&b[at..len]).take_while(|(x, y)| x == y).count()
}

/// The length of the longest common suffix of `a` and `b`.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let (a, b) = (&a[a.len() - len..], &b[b.len() - len..]);
    let mut matched = 0;
    while matched + BLOCK <= len
        && a[len - matched - BLOCK..len - matched] == b[len - matched - BLOCK..len - matched]
    {
        matched += BLOCK;
    }
    matched
        + a[..len - matched]
            .iter()
            .rev()
            .zip(b[..len - matched].iter().rev())
            .take_while(|(x, y)| x == y)
            .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The span as a byte-by-byte walk finds it.
    fn naive(old: &[u8], new: &[u8]) -> Span {
        let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let room = old.len().min(new.len()) - prefix;
        let suffix = old.iter().rev().zip(new.iter().rev()).take(room).take_while(|(a, b)| a == b).count();
        Span { prefix, suffix }
    }

    #[test]
    fn the_span_is_what_a_byte_walk_finds_across_block_edges() {
        let base: Vec<u8> = (0..3 * BLOCK + 123).map(|i| b"abcdefgh\n"[i % 9]).collect();
        let mut cases: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (Vec::new(), Vec::new()),
            (base.clone(), base.clone()),
            (base.clone(), Vec::new()),
            (b"aaaa".to_vec(), b"aa".to_vec()),
            (b"abcabc".to_vec(), b"abc".to_vec()),
        ];
        for at in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK, base.len() - BLOCK, base.len() - 1] {
            let mut changed = base.clone();
            changed[at] = b'X';
            cases.push((base.clone(), changed));
            let mut inserted = base.clone();
            inserted.splice(at..at, b"new text\n".iter().copied());
            cases.push((base.clone(), inserted.clone()));
            cases.push((inserted, base.clone()));
            cases.push((base.clone(), base[..at].to_vec()));
            cases.push((base[at..].to_vec(), base.clone()));
        }
        for (old, new) in cases {
            let span = Span::between(&old, &new);
            assert_eq!(span, naive(&old, &new), "{} -> {} bytes", old.len(), new.len());
            assert!(span.prefix + span.suffix <= old.len().min(new.len()));
        }
    }

    #[test]
    fn the_changed_range_is_what_lies_between_the_common_ends() {
        let span = Span::between(b"let a = 1;\nlet b = 2;\n", b"let a = 1;\nlet b = 3;\n");
        assert_eq!(span, Span { prefix: 19, suffix: 2 });
        assert_eq!(span.changed(b"let a = 1;\nlet b = 3;\n"), 19..20);
    }
}
