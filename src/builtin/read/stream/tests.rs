//! The streamed window gives byte for byte what the whole-text window gives, whatever the chunk size.

use super::*;
use crate::builtin::read::lines;
use crate::tool::truncate;

/// The whole-text read: decoded as `read_disk` decodes, windowed by `lines::window`, hashed whole.
fn whole(
    bytes: &[u8],
    offset: usize,
    limit: usize,
    budget: usize,
    labels: Labels,
) -> Result<Streamed, String> {
    let text = String::from_utf8_lossy(bytes);
    if is_binary(text.as_bytes()) {
        return Ok(Streamed::Binary);
    }
    let (output, full) = lines::window(&text, offset, limit, budget, labels).map_err(|e| e.to_string())?;
    let mut hash = TextHash::default();
    hash.write(&text);
    Ok(Streamed::Text { output, full, hash: Some(hash.finish()) })
}

fn streamed(
    bytes: &[u8],
    offset: usize,
    limit: usize,
    budget: usize,
    labels: Labels,
    chunk: usize,
) -> Result<Streamed, String> {
    let ask = Ask { offset, limit, budget, labels, chunk, hashed: true };
    window(bytes, ask).map_err(|e| match e {
        StreamError::Io(e) => e.to_string(),
        StreamError::Window(e) => e.to_string(),
    })
}

fn texts() -> Vec<Vec<u8>> {
    let mut long = "é".repeat(2_100).into_bytes();
    long.extend_from_slice(b"\r\nnext\n");
    vec![
        b"".to_vec(),
        b"\n".to_vec(),
        b"a".to_vec(),
        b"a\n".to_vec(),
        b"a\n\n".to_vec(),
        b"a\r\nb\r\nc\r".to_vec(),
        b"\r\n\r\n".to_vec(),
        "\u{feff}".as_bytes().to_vec(),
        "\u{feff}first\r\nsecond\nthird".as_bytes().to_vec(),
        // Invalid bytes, cut sequences at the end and before a newline, a lone continuation byte.
        b"ok \xff\xfe bad\n\xe2\x82\nmid \xf0\x9f\x98\x80 emoji \x80\n\xe2\x82".to_vec(),
        "ü🦀ü🦀ü\nü🦀\n".repeat(40).into_bytes(),
        long,
        (0..3_000).map(|i| format!("line {i:0>70}\n")).collect::<String>().into_bytes(),
        // Mostly control characters: binary.
        [b"\x01\x02\x03\x04".repeat(3_000), b"\n".to_vec()].concat(),
        // Text at first, NUL bytes after the sample.
        [b"a\n".repeat(5_000), vec![0; 100]].concat(),
    ]
}

#[test]
fn every_window_of_every_text_matches_the_whole_text_read_at_any_chunk_size() {
    for bytes in texts() {
        for labels in [Labels::Numbers, Labels::Hashes] {
            for (offset, limit) in [(0, 2_000), (0, 1), (1, 2), (2, 5), (40, 3), (2_990, 2_000), (5_000, 10)]
            {
                for budget in [truncate::MAX_BYTES, 300] {
                    let expected = whole(&bytes, offset, limit, budget, labels);
                    for chunk in [1, 2, 3, 5, 7, 64, CHUNK] {
                        assert_eq!(
                            streamed(&bytes, offset, limit, budget, labels, chunk),
                            expected,
                            "{labels:?} offset {offset} limit {limit} budget {budget} chunk {chunk} of {:?}",
                            String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_window_near_the_end_of_a_large_text_is_numbered_from_its_place_in_the_file() {
    let text: String = (0..100_000).map(|i| format!("row {i}\n")).collect();
    let Streamed::Text { output, full, .. } =
        streamed(text.as_bytes(), 99_998, 200, truncate::MAX_BYTES, Labels::Numbers, CHUNK).unwrap()
    else {
        panic!("not text")
    };
    assert_eq!(output, "99999\trow 99998\n100000\trow 99999\n\n(End of file: 100000 lines)");
    assert!(!full);
}

#[test]
fn a_text_too_large_to_edit_is_not_hashed() {
    let ask = Ask {
        offset: 0,
        limit: 10,
        budget: truncate::MAX_BYTES,
        labels: Labels::Numbers,
        chunk: 4,
        hashed: false,
    };
    let Streamed::Text { output, hash, .. } = window(&b"a\nb\n"[..], ask).unwrap() else {
        panic!("not text")
    };
    assert_eq!((output.as_str(), hash), ("1\ta\n2\tb\n\n(End of file: 2 lines)", None));
    // Past the binary check nothing but the window is decoded; the window is still what the whole text gives.
    let text: String = (0..5_000).map(|i| format!("row é{i}\n")).collect();
    let ask = Ask { offset: 4_990, limit: 5, chunk: 100, ..ask };
    let Streamed::Text { output, .. } = window(text.as_bytes(), ask).unwrap() else { panic!("not text") };
    assert_eq!(output, lines::window(&text, 4_990, 5, truncate::MAX_BYTES, Labels::Numbers).unwrap().0);
}

#[test]
fn cut_points_never_split_a_sequence_that_may_go_on() {
    assert_eq!(safe_cut(b"abc"), 3);
    assert_eq!(safe_cut(b"ab\xe2\x82"), 2);
    assert_eq!(safe_cut(b"ab\xe2\x82\xac"), 5);
    assert_eq!(safe_cut(b"\xf0\x9f\x98"), 0);
    assert_eq!(safe_cut(b"\x80\x80\x80\x80\x80"), 5);
    assert_eq!(safe_cut(b""), 0);
}
