//! Hashline mode through ACP: the configuration picks the tools offered, `read` tags lines, `hashline_edit`
//! edits by reference with the diff in the ask, refuses references the file no longer matches (also after an
//! edit in the editor), applies `edits` lists all or nothing, and keeps CRLF, BOM and UTF-16.

use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};
use tinycode::builtin::hashline::tags::{hash, tag};

use super::turn::{finished, tool_result};
use crate::support::client::{Answer, Harness, Setup, editor_fs};
use crate::support::fake_model::{Reply, answer, calls};

fn call(id: &str, tool: &str, args: Value) -> (String, String, String) {
    (id.into(), tool.into(), args.to_string())
}

fn steps(steps: Vec<Vec<(String, String, String)>>) -> Vec<Reply> {
    let mut replies: Vec<Reply> = steps
        .iter()
        .map(|step| {
            calls(&step.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect::<Vec<_>>())
        })
        .collect();
    replies.push(answer(&["done"]));
    replies
}

/// The names of the tools offered in request `n`.
fn offered(h: &Harness, n: usize) -> Vec<String> {
    h.model.requests()[n].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn hashline() -> Setup {
    Setup::new(vec![]).config("edit_mode = \"hashline\"")
}

#[tokio::test]
async fn hashline_mode_offers_hashline_edit_instead_of_edit_and_apply_patch_globally_or_per_model() {
    let plain = Harness::start(vec![answer(&["hi"])]).await;
    let session = plain.session().await;
    plain.client.prompt(&session, "hi").await.unwrap();
    let tools = offered(&plain, 0);
    assert!(tools.contains(&"edit".to_string()) && tools.contains(&"apply_patch".to_string()), "{tools:?}");
    assert!(!tools.contains(&"hashline_edit".to_string()));

    let global = hashline().start().await;
    global.model.script(vec![answer(&["hi"])]);
    let session = global.session().await;
    global.client.prompt(&session, "hi").await.unwrap();
    let tools = offered(&global, 0);
    assert_eq!(
        tools,
        vec![
            "read",
            "write",
            "hashline_edit",
            "bash",
            "glob",
            "grep",
            "list_dir",
            "discover",
            "monitor",
            "shell_output",
            "shell_tasks",
            "kill_shell",
            "todowrite",
            "question",
            "task",
            "webfetch",
            "plan_enter",
            "plan_exit",
            "enter_worktree",
            "exit_worktree",
            "sleep",
            "cron_create",
            "cron_list",
            "cron_delete"
        ]
    );

    // Per model: the fake model named in the environment gets hashline, other models keep replace.
    let per_model = Setup::new(vec![answer(&["hi"])])
        .config(
            "[models.\"fake-model\"]\nedit_mode = \"hashline\"\n[models.\"other\"]\nedit_mode = \"replace\"",
        )
        .start()
        .await;
    let session = per_model.session().await;
    per_model.client.prompt(&session, "hi").await.unwrap();
    assert!(offered(&per_model, 0).contains(&"hashline_edit".to_string()));
    assert!(!offered(&per_model, 0).contains(&"edit".to_string()));
}

#[tokio::test]
async fn read_tags_lines_and_hashline_edit_shows_the_diff_in_the_ask_and_returns_new_references() {
    let h = hashline().start().await;
    let file = h.write("src/lib.rs", "fn a() {\n    1\n}\n");
    let edit = json!({"filepath": file, "operation": "replace", "line": format!("2:{}", hash("    1")), "new": "    2\n    3"});
    h.model.script(steps(vec![
        vec![call("r", "read", json!({"file_path": file}))],
        vec![call("e", "hashline_edit", edit)],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "change it").await.unwrap();
    let read = tool_result(&h.model.messages(1), "r");
    assert_eq!(
        read,
        format!("{}\n{}\n{}\n\n(End of file: 3 lines)", tag(1, "fn a() {"), tag(2, "    1"), tag(3, "}"))
    );
    let ask = serde_json::to_value(&h.client.log.permission_requests.lock().unwrap()[0]).unwrap();
    assert_eq!(
        h.shown_content(&session, "e"),
        json!([{"type": "diff", "path": file, "oldText": "fn a() {\n    1\n}\n", "newText": "fn a() {\n    2\n    3\n}\n"}])
    );
    assert_eq!(ask["toolCall"]["title"], "Edit src/lib.rs");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn a() {\n    2\n    3\n}\n");
    assert_eq!(
        tool_result(&h.model.messages(2), "e"),
        format!(
            "File '{}' updated: replaced line 2.\n\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n fn a() {{\n-    1\n+    2\n+    3\n }}\n\nCurrent references around the change:\n{}\n{}\n{}\n{}",
            file.display(),
            tag(1, "fn a() {"),
            tag(2, "    2"),
            tag(3, "    3"),
            tag(4, "}")
        )
    );
    assert_eq!(finished(&h.client.updates(&session), "e")["status"], "completed");
}

#[tokio::test]
async fn a_reference_the_editor_buffer_no_longer_matches_is_refused_with_the_current_tags_and_nothing_is_asked()
 {
    let h = hashline().capabilities(editor_fs()).start().await;
    let file = h.write("a.txt", "one\ntwo\nthree\n");
    let edit =
        json!({"filepath": file, "operation": "replace", "line": format!("2:{}", hash("two")), "new": "TWO"});
    h.model.script(steps(vec![
        vec![call("r", "read", json!({"file_path": file}))],
        vec![call("e", "hashline_edit", edit)],
    ]));
    let session = h.session().await;
    let buffers = h.client.log.clone();
    let turn = h.client.prompt_later(&session, "edit");
    h.client
        .wait_for("the read", |u| {
            u.iter().any(|n| n["update"]["toolCallId"] == "r" && n["update"]["status"] == "completed")
        })
        .await;
    // The user changes line 2 in the editor after the model read it.
    buffers.buffers.lock().unwrap().insert(file.clone(), "one\n2 (typed)\nthree\n".into());
    turn.await.unwrap().unwrap();
    assert_eq!(
        tool_result(&h.model.messages(2), "e"),
        format!(
            "Line 2 has changed since you read it (your reference says '{}', the line is now '{}'). The current lines around it are:\n{}\n{}\n{}\nUse these references, or read the file again.",
            hash("two"),
            hash("2 (typed)"),
            tag(1, "one"),
            tag(2, "2 (typed)"),
            tag(3, "three")
        )
    );
    assert!(h.client.log.permission_requests.lock().unwrap().is_empty(), "a stale edit asks nothing");
    assert!(h.client.log.fs_writes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_edits_list_applies_all_or_nothing_and_keeps_crlf_and_the_bom() {
    let h = hashline().start().await;
    let file = h.write("win.txt", "\u{feff}a\r\nb\r\nc\r\nd\r\n");
    let good = json!({"filepath": file, "edits": [
        {"operation": "replace", "line": format!("1:{}", hash("a")), "new": "A"},
        {"operation": "insert_after", "after": format!("3:{}", hash("c")), "new": "c2"},
        {"operation": "replace_range", "start": format!("4:{}", hash("d")), "end": format!("4:{}", hash("d")), "new": ""},
    ]});
    let bad = json!({"filepath": file, "edits": [
        {"operation": "replace", "line": format!("1:{}", hash("A")), "new": "first"},
        {"operation": "replace", "line": "2:zz", "new": "never"},
    ]});
    h.model.script(steps(vec![
        vec![call("r", "read", json!({"file_path": file}))],
        vec![call("g", "hashline_edit", good)],
        vec![call("b", "hashline_edit", bad)],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "edit").await.unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), "\u{feff}A\r\nb\r\nc\r\nc2\r\n".as_bytes());
    let result = tool_result(&h.model.messages(2), "g");
    assert!(
        result.starts_with(&format!(
            "File '{}' updated: replaced line 1; inserted 1 line(s) after line 3; replaced lines 4-4.",
            file.display()
        )),
        "{result}"
    );
    let refused = tool_result(&h.model.messages(3), "b");
    assert!(refused.starts_with("Edit 2: Line 2 has changed since you read it"), "{refused}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        "\u{feff}A\r\nb\r\nc\r\nc2\r\n".as_bytes(),
        "nothing of the list applied"
    );
}

#[tokio::test]
async fn an_unread_file_cannot_be_edited_by_reference() {
    let h = hashline().start().await;
    let file = h.write("a.txt", "x\n");
    let edit =
        json!({"filepath": file, "operation": "replace", "line": format!("1:{}", hash("x")), "new": "y"});
    h.model.script(steps(vec![vec![call("e", "hashline_edit", edit)]]));
    let session = h.session().await;
    h.client.prompt(&session, "edit").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "e"),
        format!(
            "You must read {} before changing it. Use the read tool first: it shows each line's reference.",
            file.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x\n");
}

#[tokio::test]
async fn a_utf16_file_is_read_as_text_and_edited_in_its_own_encoding() {
    let h = hashline().start().await;
    let file = h.cwd.join("notes.txt");
    let encoded = tinycode::workspace::encoding::encode(
        "first\r\nsecond\r\n",
        tinycode::workspace::encoding::Encoding::Utf16Le,
    );
    std::fs::write(&file, &encoded).unwrap();
    let edit = json!({"filepath": file, "operation": "replace", "line": format!("2:{}", hash("second")), "new": "zweite"});
    h.model.script(steps(vec![
        vec![call("r", "read", json!({"file_path": file}))],
        vec![call("e", "hashline_edit", edit)],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "edit").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "r"),
        format!("{}\n{}\n\n(End of file: 2 lines)", tag(1, "first"), tag(2, "second"))
    );
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(
        bytes,
        tinycode::workspace::encoding::encode(
            "\u{feff}first\r\nzweite\r\n",
            tinycode::workspace::encoding::Encoding::Utf16Le
        )
    );
    assert_eq!(&bytes[..2], &[0xFF, 0xFE]);
}
