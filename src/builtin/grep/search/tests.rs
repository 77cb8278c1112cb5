//! Searching one file: counting, context, clamping, binary and oversized files.

use super::*;

fn matches(text: &str, pattern: &str, cap: usize, around: Around) -> FileMatches {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.txt");
    std::fs::write(&path, text).unwrap();
    match search_file(&compile(pattern).unwrap(), path, cap, around) {
        Searched::Matches(m) => m,
        _ => panic!("no match for {pattern}"),
    }
}

fn shown(m: &FileMatches) -> Vec<(usize, &str, bool)> {
    m.lines.iter().map(|l| (l.number, l.text.as_str(), l.matched)).collect()
}

#[test]
fn every_matching_line_is_counted_once_but_only_the_cap_is_kept() {
    let m = matches("alpha\nbeta\r\nalpha beta beta\n", "beta", 1, Around::default());
    assert_eq!((m.count, m.kept), (2, 1));
    assert_eq!(shown(&m), vec![(2, "beta", true)]);
}

#[test]
fn binary_files_are_skipped_and_anchors_match_any_line() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("b.bin");
    std::fs::write(&bin, b"beta\0\0\0\0\0\0").unwrap();
    assert!(matches!(search_file(&compile("beta").unwrap(), bin, 10, Around::default()), Searched::Nothing));
    let m = matches("a\r\nc\r\nd\n", "^c$", 10, Around::default());
    assert_eq!(shown(&m), vec![(2, "c", true)]);
}

#[test]
fn context_lines_surround_matches_without_repeating_lines_between_close_matches() {
    let text: String = (1..=12).map(|i| format!("l{i}\n")).collect();
    let m = matches(&text, "^l(3|5|11)$", 10, Around { before: 1, after: 1 });
    assert_eq!(
        shown(&m),
        vec![
            (2, "l2", false),
            (3, "l3", true),
            (4, "l4", false),
            (5, "l5", true),
            (6, "l6", false),
            (10, "l10", false),
            (11, "l11", true),
            (12, "l12", false),
        ]
    );
    let edges = matches("first\nsecond\n", "first|second", 10, Around { before: 3, after: 3 });
    assert_eq!(shown(&edges), vec![(1, "first", true), (2, "second", true)]);
}

#[test]
fn long_lines_are_clamped_at_500_columns_keeping_the_match_in_view() {
    let early = format!("needle{}", "x".repeat(600));
    assert_eq!(
        clamp(early.as_bytes(), Some(0)),
        format!("needle{}... [line of 606 characters, clamped]", "x".repeat(494))
    );
    let late = format!("{}needle{}", "a".repeat(1_000), "b".repeat(1_000));
    let clamped = clamp(late.as_bytes(), Some(1_000));
    assert_eq!(
        clamped,
        format!("...{}needle{}... [line of 2006 characters, clamped]", "a".repeat(100), "b".repeat(394))
    );
    assert_eq!(clamp("short\r".as_bytes(), Some(0)), "short");
}

#[test]
fn a_procfs_file_reporting_size_zero_is_read_only_up_to_the_size_limit() {
    let searched = search_file(&compile("x").unwrap(), "/proc/self/pagemap".into(), 10, Around::default());
    assert!(matches!(searched, Searched::TooLarge));
}
