//! The tool input repair pipeline end to end through ACP: a small model's sloppy calls are healed with a
//! `<repair_note>` the model reads (and the user does not), and a call cut off by the output limit is not run.

use serde_json::{Value, json};

use super::turn::{finished, tool_result};
use crate::support::client::Harness;
use crate::support::fake_model::{self as fm, Reply, answer, calls};

/// The arguments of the assistant's tool call `call_id` as sent back in a request.
fn call_arguments(messages: &[Value], call_id: &str) -> String {
    messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .find(|c| c["id"] == call_id)
        .unwrap_or_else(|| panic!("no call {call_id} in {messages:#?}"))["function"]["arguments"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn sloppy_tool_calls_run_and_the_model_reads_what_was_repaired() {
    let h = Harness::start(vec![]).await;
    let file = h.write("notes.txt", "alpha\nbeta\n");
    // Fenced JSON, an alias key, Markdown around the path, a numeric string, under a namespaced, capitalised
    // tool name; and a to-do list sent as a JSON string.
    let read = format!("```json\n{{\"path\": \"`{}`\", \"offset\": \"1\"}}\n```", file.display());
    let todos =
        json!({"todos": json!([{"content": "Fix it", "status": "in_progress"}]).to_string()}).to_string();
    h.model.script(vec![
        calls(&[("r1", "default_api.Read", &read), ("t1", "todowrite", &todos)]),
        answer(&["done"]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "look").await.unwrap();

    let messages = h.model.messages(1);
    assert_eq!(
        serde_json::from_str::<Value>(&call_arguments(&messages, "r1")).unwrap(),
        json!({"path": format!("`{}`", file.display()), "offset": "1"}),
        "the history holds the call as parseable JSON"
    );
    assert_eq!(call_arguments(&messages, "t1"), todos, "valid arguments go back verbatim");
    assert_eq!(
        tool_result(&messages, "r1"),
        "<repair_note>called tool read (sent as default_api.Read); stripped a Markdown code fence; renamed path→file_path; coerced string to integer in offset; stripped Markdown from file_path</repair_note>\n2\tbeta\n\n(End of file: 2 lines)"
    );
    assert_eq!(
        tool_result(&messages, "t1"),
        "<repair_note>parsed stringified array in todos</repair_note>\nThe to-do list now reads:\n[~] Fix it"
    );
    let updates = h.client.updates(&session);
    let started =
        updates.iter().find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "r1").unwrap();
    assert_eq!(
        started["rawInput"],
        json!({"file_path": file, "offset": 1}),
        "the editor sees the repaired input"
    );
    let shown = finished(&updates, "r1");
    assert_eq!(shown["status"], "completed");
    assert_eq!(
        shown["content"],
        json!([{"type": "content", "content": {"type": "text", "text": "2\tbeta\n\n(End of file: 2 lines)"}}]),
        "the note is for the model, not the user"
    );
    h.model.assert_done();
}

#[tokio::test]
async fn a_call_cut_off_by_the_output_limit_is_answered_truncated_and_does_not_run() {
    let h = Harness::start(vec![]).await;
    let target = h.cwd.join("big.rs");
    let cut =
        format!("{{\"file_path\": \"{}\", \"content\": \"fn main() {{\\n    let x = ", target.display());
    h.model.script(vec![
        Reply::Sse(vec![fm::tool_call(0, "w1", "write", &cut), fm::finish("length")]),
        answer(&["ok"]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "write it").await.unwrap();

    let messages = h.model.messages(1);
    assert_eq!(tool_result(&messages, "w1"), tinycode::tool::repair::TRUNCATED);
    assert_eq!(
        call_arguments(&messages, "w1"),
        "{}",
        "the cut-off arguments are not sent back (llama.cpp rejects unparseable history) nor shown completed"
    );
    assert!(!target.exists(), "a truncated write must not create the file");
    assert!(h.client.log.permission_requests.lock().unwrap().is_empty(), "nothing was asked");
    let updates: Vec<Value> = h.client.updates(&session);
    assert_eq!(finished(&updates, "w1")["status"], "failed");
}
