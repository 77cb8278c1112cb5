//! Edits the user reviews: write, edit and apply_patch through ACP, with and without the editor's file system.

use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::turn::{finished, stop, tool_result};
use crate::support::client::{Answer, Harness, Setup, editor_fs};
use crate::support::fake_model::{Reply, answer, calls};

fn read(id: &str, path: &std::path::Path) -> (String, String, String) {
    (id.into(), "read".into(), json!({"file_path": path}).to_string())
}

fn script(steps: Vec<Vec<(String, String, String)>>, last: &str) -> Vec<Reply> {
    let mut replies: Vec<Reply> = steps
        .iter()
        .map(|step| {
            let borrowed: Vec<(&str, &str, &str)> =
                step.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
            calls(&borrowed)
        })
        .collect();
    replies.push(answer(&[last]));
    replies
}

fn ask_json(h: &Harness, n: usize) -> Value {
    serde_json::to_value(&h.client.log.permission_requests.lock().unwrap()[n]).unwrap()
}

#[tokio::test]
async fn an_edit_asks_about_the_call_showing_its_diff_and_writes_through_the_editor() {
    let h = Setup::new(vec![]).capabilities(editor_fs()).start().await;
    let file = h.write("src/lib.rs", "fn a() {\n    1\n}\n");
    let edit = json!({"file_path": file, "old_string": "    1", "new_string": "    2"}).to_string();
    h.model.script(script(vec![vec![read("r", &file)], vec![("e".into(), "edit".into(), edit)]], "done"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "change 1 to 2").await.unwrap()), json!("end_turn"));

    let ask = ask_json(&h, 0);
    assert_eq!(
        ask["toolCall"],
        json!({
            "toolCallId": "e",
            "title": "Edit src/lib.rs",
            "kind": "edit",
            "status": "pending",
            "locations": [{"path": file, "line": 2}],
            "rawInput": {"file_path": file, "old_string": "    1", "new_string": "    2"}
        })
    );
    let revised =
        h.client.updates(&session).into_iter().find(|u| u["toolCallId"] == "e" && u.get("content").is_some());
    assert_eq!(
        revised.unwrap()["content"],
        json!([{"type": "diff", "path": file, "oldText": "fn a() {\n    1\n}\n", "newText": "fn a() {\n    2\n}\n"}]),
        "the call the ask refers to shows the diff"
    );
    assert_eq!(
        *h.client.log.fs_writes.lock().unwrap(),
        vec![(file.clone(), "fn a() {\n    2\n}\n".to_string())]
    );
    assert_eq!(
        *h.client.log.fs_reads.lock().unwrap(),
        vec![file.clone(), file.clone(), file.clone()],
        "read, preview, re-check"
    );
    let result = tool_result(&h.model.messages(2), "e");
    assert_eq!(
        result,
        format!(
            "Edited {}: 1 replacement (SimpleReplacer matched).\n\n1\tfn a() {{\n2\t    2\n3\t}}\n4\t",
            file.display()
        )
    );
    let done = finished(&h.client.updates(&session), "e");
    assert_eq!(
        (&done["status"], done.get("content"), &done["locations"]),
        (&json!("completed"), None, &json!([{"path": file, "line": 2}])),
        "the diff the card shows stays: the result leaves it out"
    );
}

/// The updates of one call, as the editor received them.
fn call_updates(h: &Harness, session: &agent_client_protocol::v1::schema::SessionId, id: &str) -> Vec<Value> {
    h.client.updates(session).into_iter().filter(|u| u["toolCallId"] == id).collect()
}

#[tokio::test]
async fn an_edit_is_announced_before_matching_and_its_diff_crosses_the_wire_once() {
    let h = Setup::new(vec![]).start().await;
    let file = h.write("src/lib.rs", "fn a() {\n    1\n}\n");
    let edit = json!({"file_path": file, "old_string": "    1", "new_string": "    2"}).to_string();
    h.model.script(script(vec![vec![read("r", &file)], vec![("e".into(), "edit".into(), edit)]], "done"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "change 1 to 2").await.unwrap()), json!("end_turn"));

    let input = json!({"file_path": file, "old_string": "    1", "new_string": "    2"});
    let diff = json!({"type": "diff", "path": file, "oldText": "fn a() {\n    1\n}\n", "newText": "fn a() {\n    2\n}\n"});
    assert_eq!(
        call_updates(&h, &session, "e"),
        vec![
            json!({"sessionUpdate": "tool_call", "toolCallId": "e", "title": "Edit src/lib.rs (matching…)", "name": "edit", "kind": "edit", "locations": [{"path": file}], "rawInput": input}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "title": "Edit src/lib.rs", "kind": "edit", "locations": [{"path": file, "line": 2}], "content": [diff]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "in_progress"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "completed", "locations": [{"path": file, "line": 2}], "rawOutput": {"path": file, "strategy": "SimpleReplacer", "replacements": 1, "formatterError": null}}),
        ]
    );
    assert_eq!(
        ask_json(&h, 0)["toolCall"],
        json!({"toolCallId": "e", "title": "Edit src/lib.rs", "kind": "edit", "status": "pending", "locations": [{"path": file, "line": 2}], "rawInput": input}),
        "the ask refers to the call the editor has, without its diff"
    );
}

#[tokio::test]
async fn an_edit_of_a_file_over_the_diff_limit_shows_the_changed_region_and_says_so_also_on_reload() {
    let h = Setup::new(vec![]).config("max_diff_bytes = 200").start().await;
    let original: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    let file = h.write("big.txt", &original);
    let edit =
        json!({"file_path": file, "old_string": "line 20\n", "new_string": "line twenty\n"}).to_string();
    h.model.script(script(vec![vec![read("r", &file)], vec![("e".into(), "edit".into(), edit)]], "done"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "rename line 20").await.unwrap();

    let shown = json!([
        {"type": "content", "content": {"type": "text", "text": "The file is 0.0 MB, so only the changed region is shown: lines 17–23 of 41 before, 17–23 of 41 after (3 lines of context)."}},
        {"type": "diff", "path": file, "oldText": "line 17\nline 18\nline 19\nline 20\nline 21\nline 22\nline 23", "newText": "line 17\nline 18\nline 19\nline twenty\nline 21\nline 22\nline 23"}
    ]);
    let updates = call_updates(&h, &session, "e");
    assert_eq!(updates[1]["content"], shown);
    let raw = json!({"path": file, "strategy": "SimpleReplacer", "replacements": 1, "formatterError": null});
    assert_eq!(
        updates[2..],
        [
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "in_progress"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "completed", "locations": [{"path": file, "line": 20}], "rawOutput": raw}),
        ],
        "the result leaves out the region the card shows"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original.replace("line 20\n", "line twenty\n"));
    assert_eq!(
        tool_result(&h.model.messages(2), "e"),
        format!(
            "Edited {}: 1 replacement (SimpleReplacer matched).\n\n17\tline 17\n18\tline 18\n19\tline 19\n20\tline twenty\n21\tline 21\n22\tline 22\n23\tline 23\n24\tline 24",
            file.display()
        ),
        "the excerpt runs from three lines above the replacement to three below the line after it, found from where it landed"
    );

    let mut h = h;
    h.restart().await;
    h.client
        .call(agent_client_protocol::v1::schema::LoadSessionRequest::new(session.clone(), h.cwd.clone()))
        .await
        .unwrap();
    let replayed: Vec<Value> = call_updates(&h, &session, "e");
    let revised =
        replayed.iter().find(|u| u["sessionUpdate"] == "tool_call_update" && u.get("content").is_some());
    assert_eq!(revised.map(|u| u["content"].clone()), Some(shown), "{replayed:#?}");
}

#[tokio::test]
async fn a_write_over_the_diff_limit_shows_the_changed_region_once_and_says_so() {
    let h = Setup::new(vec![]).config("max_diff_bytes = 200").start().await;
    let original: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    let file = h.write("big.txt", &original);
    let rewritten = original.replace("line 20\n", "line twenty\n");
    let write = json!({"file_path": file, "content": rewritten}).to_string();
    h.model.script(script(vec![vec![read("r", &file)], vec![("w".into(), "write".into(), write)]], "done"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "rename line 20").await.unwrap();

    let updates = call_updates(&h, &session, "w");
    assert_eq!(
        updates[0]["content"],
        json!([
            {"type": "content", "content": {"type": "text", "text": "The file is 0.0 MB, so only the changed region is shown: lines 17–23 of 41 before, 17–23 of 41 after (3 lines of context)."}},
            {"type": "diff", "path": file, "oldText": "line 17\nline 18\nline 19\nline 20\nline 21\nline 22\nline 23", "newText": "line 17\nline 18\nline 19\nline twenty\nline 21\nline 22\nline 23"}
        ])
    );
    let raw = json!({"path": file, "created": false, "lines": 40, "formatterError": null});
    assert_eq!(
        updates[1..],
        [
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "w", "status": "in_progress"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "w", "status": "completed", "locations": [{"path": file, "line": 20}], "rawOutput": raw}),
        ],
        "the result leaves out the region the card shows"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), rewritten);
}

#[tokio::test]
async fn a_rejected_edit_leaves_the_file_untouched_and_the_model_is_told() {
    let h = Harness::start(vec![]).await;
    let file = h.write("a.txt", "keep me\n");
    let edit = json!({"file_path": file, "old_string": "keep", "new_string": "lose"}).to_string();
    h.model.script(script(vec![vec![read("r", &file)], vec![("e".into(), "edit".into(), edit)]], "ok"));
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "edit").await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me\n");
    assert_eq!(
        tool_result(&h.model.messages(2), "e"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
}

#[tokio::test]
async fn an_edit_after_the_buffer_changed_is_refused_without_asking() {
    let h = Setup::new(vec![]).capabilities(editor_fs()).start().await;
    let file = h.write("a.txt", "one\n");
    let edit = json!({"file_path": file, "old_string": "one", "new_string": "ONE"}).to_string();
    h.model.script(script(vec![vec![read("r", &file)], vec![("e".into(), "edit".into(), edit)]], "ok"));
    let session = h.session().await;
    let buffers = h.client.log.clone();
    // The user types in the editor after the model read the file.
    h.client.wait_for("nothing", |_| true).await;
    let turn = h.client.prompt_later(&session, "edit");
    h.client
        .wait_for("the read", |u| {
            u.iter().any(|n| n["update"]["toolCallId"] == "r" && n["update"]["status"] == "completed")
        })
        .await;
    buffers.buffers.lock().unwrap().insert(file.clone(), "one (typed in the editor)\n".into());
    assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("end_turn"));
    assert_eq!(
        tool_result(&h.model.messages(2), "e"),
        format!(
            "{} has changed since you last read it (on disk or in the editor). Read it again before changing it.",
            file.display()
        )
    );
    assert!(h.client.log.permission_requests.lock().unwrap().is_empty(), "nothing to review: no ask");
    assert!(h.client.log.fs_writes.lock().unwrap().is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
}

#[tokio::test]
async fn unread_and_partly_read_files_cannot_be_overwritten() {
    let h = Harness::start(vec![]).await;
    let unread = h.write("unread.txt", "secret plans\n");
    let partial = h.write("partial.txt", "1\n2\n3\n");
    let write = |p: &std::path::Path| json!({"file_path": p, "content": "replaced\n"}).to_string();
    let partial_read = json!({"file_path": partial, "offset": 1, "limit": 1}).to_string();
    h.model.script(script(
        vec![
            vec![("p".into(), "read".into(), partial_read)],
            vec![
                ("w1".into(), "write".into(), write(&unread)),
                ("w2".into(), "write".into(), write(&partial)),
            ],
        ],
        "ok",
    ));
    let session = h.session().await;
    h.client.prompt(&session, "overwrite").await.unwrap();
    let messages = h.model.messages(2);
    assert_eq!(
        tool_result(&messages, "w1"),
        format!("You must read {} before changing it. Use the read tool first.", unread.display())
    );
    assert_eq!(
        tool_result(&messages, "w2"),
        format!(
            "You have only read part of {}. Read the whole file before overwriting it.",
            partial.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&unread).unwrap(), "secret plans\n");
    assert_eq!(std::fs::read_to_string(&partial).unwrap(), "1\n2\n3\n");
}

#[tokio::test]
async fn crlf_and_bom_survive_an_edit_byte_for_byte_on_disk() {
    let h = Harness::start(vec![]).await;
    let file = h.write("win.txt", "\u{feff}first\r\nsecond\r\nthird\r\n");
    let edit =
        json!({"file_path": file, "old_string": "second\nthird", "new_string": "2nd\nthird"}).to_string();
    h.model.script(script(vec![vec![read("r", &file)], vec![("e".into(), "edit".into(), edit)]], "ok"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "edit").await.unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), "\u{feff}first\r\n2nd\r\nthird\r\n".as_bytes());
}

#[tokio::test]
async fn a_fuzzy_match_names_its_strategy_and_an_ambiguous_one_gives_the_count() {
    let h = Harness::start(vec![]).await;
    let file = h.write("m.py", "def f():\n        return 1\n\nx = 0\nx = 0\n");
    let fuzzy = json!({"file_path": file, "old_string": "def f():\n    return 1", "new_string": "def f():\n    return 2"}).to_string();
    let ambiguous = json!({"file_path": file, "old_string": "x = 0", "new_string": "x = 1"}).to_string();
    h.model.script(script(
        vec![
            vec![read("r", &file)],
            vec![("a".into(), "edit".into(), ambiguous), ("f".into(), "edit".into(), fuzzy)],
        ],
        "ok",
    ));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "edit").await.unwrap();
    let messages = h.model.messages(2);
    assert_eq!(
        tool_result(&messages, "a"),
        format!(
            "Found 2 matches for old_string in {}. Include more surrounding lines to make the match unique, or set replace_all to true to change every occurrence.",
            file.display()
        )
    );
    let fuzzy_result = tool_result(&messages, "f");
    assert!(fuzzy_result.contains("1 replacement (LineTrimmedReplacer matched)"), "{fuzzy_result}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "def f():\n    return 2\n\nx = 0\nx = 0\n");
}

#[tokio::test]
async fn write_creates_directories_and_files_and_reports_the_modified_file_as_a_location() {
    let h = Harness::start(vec![]).await;
    let file = h.cwd.join("deep/new/file.rs");
    let write = json!({"file_path": file, "content": "fn main() {}\n"}).to_string();
    h.model.script(script(vec![vec![("w".into(), "write".into(), write)]], "ok"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "create").await.unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn main() {}\n");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o644);
    let ask = ask_json(&h, 0);
    assert_eq!(ask["toolCall"]["title"], "Create deep/new/file.rs");
    assert_eq!(ask["toolCall"].get("content"), None, "the ask refers to the call, which shows the diff");
    assert_eq!(
        h.shown_content(&session, "w"),
        json!([{"type": "diff", "path": file, "newText": "fn main() {}\n"}]),
        "no oldText: a new file"
    );
    assert_eq!(finished(&h.client.updates(&session), "w")["locations"], json!([{"path": file, "line": 1}]));
    assert_eq!(tool_result(&h.model.messages(1), "w"), format!("Created {} (1 lines).", file.display()));
}

#[tokio::test]
async fn a_failing_formatter_is_reported_and_the_write_stands() {
    let h = Setup::new(vec![])
        .trusted()
        .config("[formatters]\ntxt = [\"sh\", \"-c\", \"echo 'fmt: bad input' >&2; exit 2\", \"fmt\"]")
        .start()
        .await;
    let file = h.cwd.join("notes.txt");
    let write = json!({"file_path": file, "content": "hello\n"}).to_string();
    h.model.script(script(vec![vec![("w".into(), "write".into(), write)]], "ok"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "write").await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello\n");
    let result = tool_result(&h.model.messages(1), "w");
    assert_eq!(
        result,
        format!(
            "Created {} (1 lines).\nThe formatter failed (the file was still written): `sh -c echo 'fmt: bad input' >&2; exit 2 fmt {}` exited with exit status: 2: fmt: bad input",
            file.display(),
            file.display()
        )
    );
}

#[tokio::test]
async fn a_successful_formatter_result_reaches_the_editor_and_the_model() {
    let h = Setup::new(vec![])
        .capabilities(editor_fs())
        .trusted()
        .config("[formatters]\ntxt = [\"sh\", \"-c\", \"tr a-z A-Z < \\\"$0\\\" > \\\"$0.tmp\\\" && mv \\\"$0.tmp\\\" \\\"$0\\\"\", \"{file}\"]")
        .start()
        .await;
    let file = h.cwd.join("shout.txt");
    let write = json!({"file_path": file, "content": "quiet\n"}).to_string();
    h.model.script(script(vec![vec![("w".into(), "write".into(), write)]], "ok"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "write").await.unwrap();
    assert_eq!(
        *h.client.log.fs_writes.lock().unwrap(),
        vec![(file.clone(), "quiet\n".to_string()), (file.clone(), "QUIET\n".to_string())],
        "the editor gets the text, then the formatted text"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "QUIET\n");
}

#[tokio::test]
async fn paths_outside_the_workspace_and_new_secrets_are_refused_before_any_ask() {
    let h = Harness::start(vec![]).await;
    let outside = h.cwd.join("../outside.txt");
    let key = format!("AWS_KEY=AKIA{}\n", "ABCDEFGHIJKLMNOP");
    h.model.script(script(
        vec![vec![
            ("o".into(), "write".into(), json!({"file_path": outside, "content": "x"}).to_string()),
            (
                "s".into(),
                "write".into(),
                json!({"file_path": h.cwd.join(".env.example"), "content": key}).to_string(),
            ),
        ]],
        "ok",
    ));
    let session = h.session().await;
    h.client.prompt(&session, "write").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(
        tool_result(&messages, "o"),
        format!(
            "Refusing to change {}: it is outside the workspace ({}). Only files inside the session's directories can be changed.",
            h.cwd.parent().unwrap().join("outside.txt").display(),
            h.cwd.display()
        )
    );
    assert!(tool_result(&messages, "s").starts_with(&format!(
        "Refusing to write {}: the new content contains what looks like a AWS access key.",
        h.cwd.join(".env.example").display()
    )));
    assert!(h.client.log.permission_requests.lock().unwrap().is_empty());
    assert!(!h.cwd.parent().unwrap().join("outside.txt").exists());
    assert!(!h.cwd.join(".env.example").exists());
}

#[tokio::test]
async fn a_file_changed_on_disk_while_the_ask_is_open_is_not_clobbered() {
    let h = Harness::start(vec![]).await;
    let file = h.write("race.txt", "v1\n");
    let edit = json!({"file_path": file, "old_string": "v1", "new_string": "v2"}).to_string();
    h.model.script(script(vec![vec![read("r", &file)], vec![("e".into(), "edit".into(), edit)]], "ok"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let racing = file.clone();
    *h.client.log.before_answer.lock().unwrap() =
        Some(Box::new(move || std::fs::write(&racing, "v1 changed by someone else\n").unwrap()));
    let session = h.session().await;
    h.client.prompt(&session, "edit").await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "v1 changed by someone else\n");
    assert_eq!(
        tool_result(&h.model.messages(2), "e"),
        format!(
            "{} changed while the change was waiting for approval. Read it again and redo the change.",
            file.display()
        )
    );
}

#[tokio::test]
async fn apply_patch_shows_every_file_in_one_ask_and_applies_all_of_them() {
    let h = Harness::start(vec![]).await;
    let a = h.write("a.txt", "alpha\nbeta\n");
    let gone = h.write("old/gone.txt", "bye\n");
    let moved = h.write("old/move.txt", "m1\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+BETA\n*** Add File: new/b.txt\n+fresh\n*** Delete File: old/gone.txt\n*** Update File: old/move.txt\n*** Move to: moved/here.txt\n@@\n-m1\n+m2\n*** End Patch";
    h.model.script(script(
        vec![
            vec![read("r1", &a), read("r2", &gone), read("r3", &moved)],
            vec![("p".into(), "apply_patch".into(), json!({"patch": patch}).to_string())],
        ],
        "ok",
    ));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "patch").await.unwrap();
    let ask = ask_json(&h, 0);
    assert_eq!(ask["toolCall"]["title"], "Patch a.txt, new/b.txt, old/gone.txt, +1 more");
    assert_eq!(ask["toolCall"].get("content"), None, "the ask refers to the call, which shows the diffs");
    assert_eq!(
        h.shown_content(&session, "p"),
        json!([
            {"type": "diff", "path": a, "oldText": "alpha\nbeta\n", "newText": "alpha\nBETA\n"},
            {"type": "diff", "path": h.cwd.join("new/b.txt"), "newText": "fresh\n"},
            {"type": "diff", "path": gone, "oldText": "bye\n", "newText": ""},
            {"type": "diff", "path": h.cwd.join("moved/here.txt"), "newText": "m2\n"},
            {"type": "diff", "path": moved, "oldText": "m1\n", "newText": ""}
        ])
    );
    assert_eq!(
        tool_result(&h.model.messages(2), "p"),
        "Success. Updated the following files:\nA new/b.txt\nM a.txt\nM moved/here.txt\nD old/gone.txt"
    );
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "alpha\nBETA\n");
    assert_eq!(std::fs::read_to_string(h.cwd.join("new/b.txt")).unwrap(), "fresh\n");
    assert_eq!(std::fs::read_to_string(h.cwd.join("moved/here.txt")).unwrap(), "m2\n");
    assert!(!gone.exists() && !moved.exists());
}

#[tokio::test]
async fn a_patch_with_one_bad_hunk_changes_nothing_and_says_where() {
    let h = Harness::start(vec![]).await;
    let a = h.write("a.txt", "alpha\n");
    let patch = "*** Begin Patch\n*** Add File: created.txt\n+hello\n*** Update File: a.txt\n@@\n-missing line\n+x\n*** End Patch";
    let bad_syntax =
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+beta\nnot a diff line\n*** End Patch";
    h.model.script(script(
        vec![
            vec![read("r", &a)],
            vec![
                ("p".into(), "apply_patch".into(), json!({"patchText": patch}).to_string()),
                ("q".into(), "apply_patch".into(), json!({"input": bad_syntax}).to_string()),
                ("z".into(), "apply_patch".into(), "{}".into()),
            ],
        ],
        "ok",
    ));
    let session = h.session().await;
    h.client.prompt(&session, "patch").await.unwrap();
    let messages = h.model.messages(2);
    assert_eq!(
        tool_result(&messages, "p"),
        format!(
            "<repair_note>renamed patchText→patch</repair_note>\napply_patch verification failed: Failed to find expected lines in {}:\nmissing line\nNo files were changed.",
            a.display()
        )
    );
    assert_eq!(
        tool_result(&messages, "q"),
        "<repair_note>renamed input→patch</repair_note>\napply_patch verification failed: Invalid patch hunk on line 6: Expected update hunk to start with a @@ context marker, got: 'not a diff line'\nNo files were changed."
    );
    assert_eq!(
        tool_result(&messages, "z"),
        "Tool apply_patch needs patch: string (The whole patch, from '*** Begin Patch' to '*** End Patch'); you sent keys []. Resend the call with every required argument."
    );
    assert!(!h.cwd.join("created.txt").exists());
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "alpha\n");
    assert!(h.client.log.permission_requests.lock().unwrap().is_empty());
}

#[tokio::test]
async fn crlf_files_stay_crlf_through_apply_patch() {
    let h = Harness::start(vec![]).await;
    let file = h.write("dos.txt", "one\r\ntwo\r\n");
    let patch = "*** Begin Patch\n*** Update File: dos.txt\n@@\n one\n-two\n+2\n+three\n*** End Patch";
    h.model.script(script(
        vec![
            vec![read("r", &file)],
            vec![("p".into(), "apply_patch".into(), json!({"patch": patch}).to_string())],
        ],
        "ok",
    ));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "patch").await.unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), b"one\r\n2\r\nthree\r\n");
}

#[tokio::test]
async fn common_argument_aliases_are_renamed_and_the_model_is_told() {
    let h = Harness::start(vec![]).await;
    let file = h.write("alias.txt", "old content\n");
    let edit = json!({"filePath": file, "oldString": "old", "newString": "new"}).to_string();
    h.model.script(script(vec![vec![read("r", &file)], vec![("e".into(), "edit".into(), edit)]], "ok"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "edit").await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new content\n");
    let result = tool_result(&h.model.messages(2), "e");
    assert!(
        result.starts_with("<repair_note>renamed filePath→file_path; renamed oldString→old_string; renamed newString→new_string</repair_note>\nEdited "),
        "{result}"
    );
    let call = h.client.updates(&session).into_iter().find(|u| u["toolCallId"] == "e").unwrap();
    assert_eq!(
        call["rawInput"],
        json!({"file_path": file, "old_string": "old", "new_string": "new"}),
        "the editor sees the repaired input"
    );
}
