//! Huge MCP results through ACP, against `tinycode-mcp-fixture`: a 10 MB result reaches the editor as the same
//! bounded preview the model gets (the full text saved), and an answer on one line over the client's line limit
//! fails its call at once, saying why, instead of waiting out the call timeout.

use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::turn::{finished, tool_result};
use crate::support::client::{Answer, Harness};
use crate::support::fake_model::{Reply, answer, calls};
use crate::support::mcp::{FIXTURE, stdio};

fn call(id: &str, tool: &str, args: Value) -> Reply {
    calls(&[(id, tool, &args.to_string())])
}

#[tokio::test]
async fn a_ten_megabyte_result_reaches_the_editor_as_the_models_bounded_preview() {
    // 10 MB in 10-byte lines.
    let args = json!({"text": "0123456789\n", "repeat": 1_000_000});
    let h = Harness::start(vec![call("c1", "mcp__fx__echo", args), answer(&["ok"])]).await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client.prompt(&session, "echo a lot").await.unwrap();

    let for_model = tool_result(&h.model.messages(1), "c1");
    assert!(for_model.len() < 60_000, "{}", for_model.len());
    let saved = for_model
        .lines()
        .find_map(|l| l.strip_prefix("The output was truncated. Full output saved to: "))
        .unwrap_or_else(|| panic!("no saved path in {}", &for_model[for_model.len() - 300..]));
    assert_eq!(std::fs::metadata(saved).unwrap().len(), 6 + 11_000_000);
    let updates = h.client.updates(&session);
    let done = finished(&updates, "c1");
    assert_eq!(done["content"], json!([{"type": "content", "content": {"type": "text", "text": for_model}}]));
    let largest = updates
        .iter()
        .filter(|u| u["toolCallId"] == "c1")
        .map(|u| serde_json::to_string(u).unwrap().len())
        .max()
        .unwrap();
    assert!(largest < 100_000, "a session/update for the call carried {largest} bytes");
}

#[tokio::test]
async fn an_answer_over_the_line_limit_fails_its_call_at_once_saying_why() {
    // 51 MiB on one line; the call timeout (10 minutes) would outlast the test.
    let args = json!({"text": "x".repeat(1024), "repeat": 51 * 1024});
    let h = Harness::start(vec![
        call("c1", "mcp__fx__echo", args),
        call("c2", "mcp__fx__echo", json!({"text": "still here"})),
        answer(&["ok"]),
    ])
    .await;
    std::fs::write(
        h.config_home().join("tinycode/config.toml"),
        format!("[mcp.fx]\ncommand = \"{FIXTURE}\"\ncall_timeout_ms = 600000\n"),
    )
    .unwrap();
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "echo too much").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "c1"),
        "Error: the MCP server `fx` answered with a message longer than the 50 MB line limit; it was discarded"
    );
    assert_eq!(tool_result(&h.model.messages(2), "c2"), "echo: still here", "the server stays connected");
}
