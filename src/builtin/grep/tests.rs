//! Formatting, the collector's cap, filters and argument checks of `grep`.

use super::*;
use std::time::{Duration, SystemTime};

use search::Line;

fn hit(path: &str, secs: u64, lines: &[(usize, &str)]) -> FileMatches {
    FileMatches {
        path: path.into(),
        modified: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
        lines: lines.iter().map(|(n, t)| Line { number: *n, text: t.to_string(), matched: true }).collect(),
        kept: lines.len(),
        count: lines.len(),
    }
}

fn collect(hits: Vec<FileMatches>, cap: usize) -> Results {
    let mut collector = Collector::new(cap);
    for hit in hits {
        collector.add(hit);
    }
    Results {
        found: collector.kept.into_values().collect(),
        total: collector.total,
        too_large: collector.too_large,
        secret_files: 0,
        timed_out: false,
    }
}

#[test]
fn matches_are_listed_newest_file_first_in_line_order() {
    let found = vec![hit("/p/old.rs", 1, &[(3, "a"), (9, "b")]), hit("/p/new.rs", 2, &[(1, "c")])];
    let results = collect(found, 500);
    assert_eq!(format_results(&results, 500, Path::new("/p"), false), "new.rs:1:c\nold.rs:3:a\nold.rs:9:b");
    assert_eq!(results.total, 3);
}

#[test]
fn the_collector_drops_older_files_once_newer_ones_fill_the_cap() {
    let hits = (0..1_000u64).map(|i| hit(&format!("/p/f{i:04}"), i, &[(1, "x"), (2, "y")])).collect();
    let results = collect(hits, 3);
    let kept: Vec<&Path> = results.found.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(kept, vec![Path::new("/p/f0999"), Path::new("/p/f0998")]);
    assert_eq!(results.total, 2_000);
    assert_eq!(
        format_results(&results, 3, Path::new("/p"), false),
        "f0999:1:x\nf0999:2:y\nf0998:1:x\n\n(Results truncated: showing 3 of 2000 matches. Consider using a more specific path, pattern or include.)"
    );
}

#[test]
fn the_cap_keeps_exactly_that_many_matches_and_reports_the_total() {
    let lines: Vec<(usize, &str)> = (1..=501).map(|i| (i, "x")).collect();
    let results = collect(vec![hit("/p/a", 1, &lines)], 500);
    let out = format_results(&results, 500, Path::new("/p"), false);
    assert_eq!(results.total, 501);
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 502);
    assert_eq!(rows[499], "a:500:x");
    assert_eq!(
        rows[501],
        "(Results truncated: showing 500 of 501 matches. Consider using a more specific path, pattern or include.)"
    );
    let lines: Vec<(usize, &str)> = (1..=500).map(|i| (i, "x")).collect();
    let out = format_results(&collect(vec![hit("/p/a", 1, &lines)], 500), 500, Path::new("/p"), false);
    assert!(!out.contains("truncated"));
}

#[test]
fn context_lines_use_dashes_and_separate_groups_and_files() {
    let line = |number, text: &str, matched| Line { number, text: text.into(), matched };
    let mut a = hit("/p/a.rs", 2, &[]);
    a.lines =
        vec![line(1, "one", false), line(2, "two", true), line(3, "three", false), line(9, "nine", true)];
    a.kept = 2;
    a.count = 2;
    let mut b = hit("/p/b.rs", 1, &[]);
    b.lines = vec![line(4, "four", true)];
    b.kept = 1;
    b.count = 1;
    let results = collect(vec![a, b], 500);
    assert_eq!(
        format_results(&results, 500, Path::new("/p"), true),
        "a.rs-1-one\na.rs:2:two\na.rs-3-three\n--\na.rs:9:nine\n--\nb.rs:4:four"
    );
}

#[test]
fn a_timed_out_search_says_its_results_are_partial() {
    let mut results = collect(vec![hit("/p/a", 1, &[(1, "x")])], 500);
    results.timed_out = true;
    assert_eq!(
        format_results(&results, 500, Path::new("/p"), false),
        "a:1:x\n\n(The search stopped after 20 s: these results are partial. Search a smaller path, or narrow the pattern or include.)"
    );
}

#[test]
fn a_search_past_its_deadline_returns_at_once_with_the_note() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..20 {
        std::fs::write(dir.path().join(format!("f{i}.txt")), "needle\n").unwrap();
    }
    let results = run_search(Search {
        scope: Scope { root: dir.path().to_path_buf(), single: false },
        regex: search::compile("needle").unwrap(),
        keep: include_filter(None).unwrap(),
        cap: 500,
        around: Around::default(),
        stack: std::sync::Arc::new(Stack::plain(dir.path())),
        cancel: tokio_util::sync::CancellationToken::new(),
        deadline: Instant::now(),
    });
    assert!(results.timed_out);
    assert_eq!(results.total, 0);
}

#[test]
fn include_matches_file_names_unless_it_names_a_directory() {
    let by_name = include_filter(Some("*.{rs,toml}")).unwrap();
    assert!(by_name(Path::new("src/deep/main.rs")));
    assert!(!by_name(Path::new("src/main.py")));
    let by_path = include_filter(Some("src/*.rs")).unwrap();
    assert!(by_path(Path::new("src/main.rs")));
    assert!(!by_path(Path::new("tests/main.rs")));
}

#[test]
fn context_arguments_default_to_context_and_are_bounded() {
    assert_eq!(around(&json!({})).unwrap(), Around { before: 0, after: 0 });
    assert_eq!(around(&json!({"context": 2})).unwrap(), Around { before: 2, after: 2 });
    assert_eq!(around(&json!({"context": 2, "after": 5})).unwrap(), Around { before: 2, after: 5 });
    assert_eq!(
        around(&json!({"before": 21})).unwrap_err(),
        ToolError::retry("before must be at most 20 lines, got 21")
    );
}
