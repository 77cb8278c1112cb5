//! Table tests over `tests/fixtures/hashline_cases.json` (tunacode's hashline module, run upstream). Where we
//! chose to differ (hashline_notes.md §7 asks for these decisions), [`DIFFERENCES`] says why and the test checks
//! what we do instead:
//! - references are checked against the file as it is now, not a cache of the last read, so edits by others are
//!   caught and a reference to a line the file no longer has is "out of range" (with the last lines' tags);
//! - one line splitter (`\n`, with one `\r` before it) for reading and editing, so `\r`, form feeds and U+2028
//!   are content, not line breaks;
//! - CRLF files stay CRLF;
//! - references forgive case, spaces and a pasted `|content` tail;
//! - the model reads with `read`, so the hints name it.

use serde_json::Value;

use super::apply::{self, Op};
use super::tags::{self, hash, split_lines, tag};
use super::{parse_op, report};

fn cases() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hashline_cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Case name → what we do instead (`ok:<file text>` or `err:<message start>`), and why.
const DIFFERENCES: &[(&str, &str, &str)] = &[
    ("uncached file", "tool", "checked by the tool: the file must have been read (`was_read`)"),
    (
        "line not in cache",
        "err:Line 99 is out of range (file has 1 lines). Its last lines are:",
        "checked against the file",
    ),
    (
        "stale hash",
        "err:Line 1 has changed since you read it (your reference says 'zz', the line is now '5d').",
        "checked against the file",
    ),
    (
        "invalid ref format",
        "err:Invalid line reference 'not-a-ref': Invalid line reference 'not-a-ref': expected format '<line>:<hash>'. Use '<line>:<hash>' from the read output.",
        "our read tool is `read`",
    ),
    (
        "uppercase hash is a mismatch (comparison is case-sensitive)",
        "ok:",
        "hashes are hex: case is forgiven",
    ),
    (
        "negative line number parses but is not cached",
        "err:Line -1 is out of range (file has 1 lines).",
        "checked against the file",
    ),
    (
        "replace line beyond EOF (cache has line 99, file has 1 line)",
        "err:Line 99 is out of range (file has 1 lines).",
        "the last lines' tags follow",
    ),
    (
        "e2e: disk changed after read, cache still matches -> edit applied to disk lines",
        "err:Line 2 has changed since you read it",
        "edits by others are caught, not overwritten by line number",
    ),
    (
        "e2e: ref stale after cache changed",
        "err:Line 2 is out of range (file has 1 lines).",
        "checked against the file",
    ),
    ("e2e: CRLF file is rewritten with LF", "ok:A\r\nb\r\n", "line endings are kept"),
    ("e2e: file not found", "tool", "checked by the tool before references are"),
];

fn difference(name: &str) -> Option<&'static str> {
    DIFFERENCES.iter().find(|(n, _, _)| *n == name).map(|(_, ours, _)| *ours)
}

#[test]
fn every_hash_vector_is_the_md5_prefix() {
    let cases = cases();
    let hashes = cases["hash_cases"].as_array().unwrap();
    assert_eq!(hashes.len(), 28);
    for case in hashes {
        assert_eq!(hash(case["line"].as_str().unwrap()), case["hash"].as_str().unwrap(), "{case}");
    }
}

#[test]
fn tags_are_number_colon_hash_bar_content() {
    let cases = cases();
    for case in cases["format_cases"].as_array().unwrap() {
        let (number, content) =
            (case["line_number"].as_u64().unwrap() as usize, case["content"].as_str().unwrap());
        // Two upstream cases give a made-up hash; ours is always the real one.
        let expect =
            case["expect"].as_str().unwrap().replacen(case["hash"].as_str().unwrap(), &hash(content), 1);
        assert_eq!(tag(number, content), expect);
    }
    for case in cases["tag_cases"].as_array().unwrap() {
        let (content, offset) =
            (case["content"].as_str().unwrap(), case["offset"].as_u64().unwrap() as usize);
        let ours: Vec<String> =
            split_lines(content).iter().enumerate().map(|(i, line)| tag(offset + i + 1, line)).collect();
        if content.contains('\u{2028}') {
            // One splitter: only `\n` (with an optional `\r`) ends a line.
            assert_eq!(ours, vec![tag(1, "a"), tag(2, "b\rc\u{c}d\u{2028}e")]);
        } else {
            assert_eq!(ours.join("\n"), case["expect"].as_str().unwrap(), "{case}");
        }
    }
}

#[test]
fn references_parse_as_upstream_except_where_we_forgive() {
    let forgiven = ["2:F1", "2:f1|content", "2:f1 "];
    for case in cases()["parse_ref_cases"].as_array().unwrap() {
        let raw = case["ref"].as_str().unwrap();
        let ours = tags::parse_ref(raw);
        if forgiven.contains(&raw) {
            assert_eq!(ours.unwrap(), tags::Ref { line: 2, hash: "f1".into() }, "{raw}");
        } else if case["expect"]["ok"] == true {
            let got = ours.unwrap();
            assert_eq!(got.line, case["expect"]["line"].as_i64().unwrap(), "{raw}");
            assert_eq!(got.hash, case["expect"]["hash"].as_str().unwrap(), "{raw}");
        } else {
            assert_eq!(ours.unwrap_err(), case["expect"]["error"].as_str().unwrap(), "{raw}");
        }
    }
}

/// The text a list of lines makes as a file (upstream joins with `\n`).
fn file(lines: &Value) -> String {
    lines.as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect::<Vec<_>>().join("\n")
}

/// Run one op-level case: its operation on the file's current lines.
fn run(case: &Value, text: &str) -> Result<apply::Applied, String> {
    let mut args = case["args"].clone();
    if case["operation"] == "validate_ref" {
        let reference = args["ref"].as_str().unwrap().to_string();
        return apply::apply(text, &[Op { kind: apply::Kind::Replace { line: reference }, new: "x".into() }]);
    }
    args["operation"] = case["operation"].clone();
    if let Some(new) = case.get("new") {
        args["new"] = new.clone();
    }
    let op = parse_op(&args)?;
    apply::apply(text, &[op])
}

fn check(name: &str, ours: Result<String, String>, upstream: Result<String, String>) {
    match difference(name) {
        Some("tool") => {}
        Some(expected) => match expected.split_once(':') {
            Some(("ok", text)) if !text.is_empty() => assert_eq!(ours.unwrap(), text, "{name}"),
            Some(("ok", _)) => assert!(ours.is_ok(), "{name}: {ours:?}"),
            Some(("err", start)) => {
                let err = ours.unwrap_err();
                assert!(err.starts_with(start), "{name}: {err}");
            }
            _ => unreachable!("{expected}"),
        },
        None => assert_eq!(ours, upstream, "{name}"),
    }
}

#[test]
fn every_edit_vector_behaves_as_upstream_or_as_our_documented_difference() {
    let cases = cases();
    let edits = cases["edit_cases"].as_array().unwrap();
    assert_eq!(edits.len(), 31);
    for case in edits {
        let name = case["name"].as_str().unwrap();
        let expect = &case["expect"];
        if let Some(before) = case.get("file_before") {
            let Some(before) = before.as_str() else {
                check(name, Err(String::new()), Err(String::new()));
                continue;
            };
            let path = std::path::Path::new("<path>");
            let ours = run(case, before).map(|applied| {
                if expect.get("output").is_some() {
                    report(path, "<path>", before, &applied.text, &applied.summaries)
                } else {
                    applied.text.clone()
                }
            });
            let ours_text = run(case, before).map(|applied| applied.text);
            let upstream = if expect["ok"] == true {
                Ok(expect["output"].as_str().unwrap().to_string())
            } else {
                Err(expect["error"].as_str().unwrap().to_string())
            };
            if difference(name).is_some_and(|d| d.starts_with("ok:") && d.len() > 3) {
                check(name, ours_text, upstream);
            } else {
                check(name, ours, upstream);
            }
            continue;
        }
        let text = match (case.get("file_lines"), case.get("cached_lines")) {
            (Some(lines), _) => file(lines),
            (None, Some(lines)) if !lines.is_null() => file(lines),
            _ => {
                check(name, Err(String::new()), Err(String::new()));
                continue;
            }
        };
        let ours = run(case, &text).map(|applied| {
            if case["operation"] == "validate_ref" {
                String::new()
            } else {
                format!("{}|File '<path>' updated: {}.", applied.text, applied.summaries.join("; "))
            }
        });
        let upstream = if expect["ok"] == true {
            if case["operation"] == "validate_ref" {
                Ok(String::new())
            } else {
                Ok(format!("{}|{}", file(&expect["lines"]), expect["description"].as_str().unwrap()))
            }
        } else {
            Err(expect["error"].as_str().unwrap().to_string())
        };
        check(name, ours, upstream);
    }
}
