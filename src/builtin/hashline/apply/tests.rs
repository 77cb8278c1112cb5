//! Operations on real texts: conventions kept, stale references refused with current tags, `edits` lists.

use super::*;

fn tagged(text: &str, line: usize) -> String {
    let lines = split_lines(text);
    format!("{line}:{}", tags::hash(lines[line - 1]))
}

fn op(kind: Kind, new: &str) -> Op {
    Op { kind, new: new.into() }
}

fn replace(line: String, new: &str) -> Op {
    op(Kind::Replace { line }, new)
}

#[test]
fn crlf_bom_and_the_missing_final_newline_survive_an_edit() {
    let text = "\u{feff}a\r\nb\r\nc";
    let applied = apply(text, &[replace(tagged(text, 2), "B1\nB2")]).unwrap();
    assert_eq!(applied.text, "\u{feff}a\r\nB1\r\nB2\r\nc");
    let appended = apply(text, &[op(Kind::InsertAfter { after: tagged(text, 3) }, "d")]).unwrap();
    assert_eq!(appended.text, "\u{feff}a\r\nb\r\nc\r\nd", "the new last line has no newline either");
    let lf = "x\ny\n";
    assert_eq!(apply(lf, &[replace(tagged(lf, 2), "Y")]).unwrap().text, "x\nY\n");
}

#[test]
fn mixed_endings_keep_each_kept_line_s_own_and_new_lines_take_the_usual_one() {
    let text = "a\r\nb\nc\r\nd\r\n";
    let applied = apply(text, &[op(Kind::InsertAfter { after: tagged(text, 1) }, "new")]).unwrap();
    assert_eq!(applied.text, "a\r\nnew\r\nb\nc\r\nd\r\n");
}

#[test]
fn a_stale_reference_is_refused_with_the_current_tags_around_it() {
    let text = "one\ntwo\nthree\nfour\nfive\n";
    let stale = format!("3:{}", tags::hash("old three"));
    let err = apply(text, &[replace(stale.clone(), "3")]).unwrap_err();
    assert_eq!(
        err,
        format!(
            "Line 3 has changed since you read it (your reference says '{}', the line is now '{}'). The current lines around it are:\n{}\n{}\n{}\n{}\n{}\nUse these references, or read the file again.",
            tags::hash("old three"),
            tags::hash("three"),
            tags::tag(1, "one"),
            tags::tag(2, "two"),
            tags::tag(3, "three"),
            tags::tag(4, "four"),
            tags::tag(5, "five"),
        )
    );
    let beyond = apply(text, &[replace("9:ab".into(), "x")]).unwrap_err();
    assert_eq!(
        beyond,
        format!(
            "Line 9 is out of range (file has 5 lines). Its last lines are:\n{}\n{}\n{}",
            tags::tag(3, "three"),
            tags::tag(4, "four"),
            tags::tag(5, "five")
        )
    );
}

#[test]
fn an_edits_list_is_checked_against_one_snapshot_and_applied_all_or_nothing() {
    let text = "a\nb\nc\nd\ne\n";
    let ops = vec![
        replace(tagged(text, 1), "A"),
        op(Kind::ReplaceRange { start: tagged(text, 3), end: tagged(text, 4) }, ""),
        op(Kind::InsertAfter { after: tagged(text, 5) }, "f\ng"),
        op(Kind::InsertAfter { after: "0".into() }, "top"),
    ];
    let applied = apply(text, &ops).unwrap();
    assert_eq!(applied.text, "top\nA\nb\ne\nf\ng\n");
    assert_eq!(
        applied.summaries,
        vec![
            "replaced line 1",
            "replaced lines 3-4",
            "inserted 2 line(s) after line 5",
            "inserted 1 line(s) after line 0"
        ]
    );
    let mut bad = ops.clone();
    bad.push(replace("2:zz".into(), "B"));
    let err = apply(text, &bad).unwrap_err();
    assert!(err.starts_with("Edit 5: Line 2 has changed since you read it"), "{err}");
}

#[test]
fn edits_that_touch_the_same_lines_are_refused() {
    let text = "a\nb\nc\n";
    let twice = vec![
        replace(tagged(text, 2), "x"),
        op(Kind::ReplaceRange { start: tagged(text, 1), end: tagged(text, 2) }, "y"),
    ];
    assert_eq!(
        apply(text, &twice).unwrap_err(),
        "Edits 1 and 2 touch the same lines (replaced line 2 and replaced lines 1-2). Combine them into one edit."
    );
    let inside = vec![op(Kind::InsertAfter { after: tagged(text, 2) }, "x"), replace(tagged(text, 2), "B")];
    assert!(apply(text, &inside).is_err(), "inserting after a line that is replaced is ambiguous");
    let beside = vec![op(Kind::InsertAfter { after: tagged(text, 1) }, "x"), replace(tagged(text, 2), "B")];
    assert_eq!(
        apply(text, &beside).unwrap().text,
        "a\nx\nB\nc\n",
        "an insertion before a replaced line is fine"
    );
}

#[test]
fn an_empty_file_takes_lines_inserted_before_line_one() {
    assert_eq!(apply("", &[op(Kind::InsertAfter { after: "0".into() }, "first")]).unwrap().text, "first\n");
    assert_eq!(
        apply("", &[replace("1:ab".into(), "x")]).unwrap_err(),
        "Line 1 is out of range (file has 0 lines)."
    );
}

#[test]
fn references_forgive_spaces_pasted_content_and_upper_case() {
    let text = "def foo():\n";
    let hash = tags::hash("def foo():");
    for reference in
        [format!(" 1:{hash} "), format!("1:{hash}|def foo():"), format!("1:{}", hash.to_uppercase())]
    {
        assert_eq!(apply(text, &[replace(reference.clone(), "x")]).unwrap().text, "x\n", "{reference}");
    }
}
