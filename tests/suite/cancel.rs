//! `session/cancel`: the model stream and running tools stop, the turn answers `cancelled`, nothing is lost.
//! (Prompts queued behind a running turn are in `queue.rs`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::turn::{finished, stop, tool_result};
use crate::support::client::{Harness, Setup};
use crate::support::fake_model::{self as fm, Reply, answer, calls};
use crate::support::tools::with_blocking_tool;

fn has(updates: &[Value], kind: &str, text: &str) -> bool {
    updates.iter().any(|n| n["update"]["sessionUpdate"] == kind && n["update"].to_string().contains(text))
}

#[tokio::test]
async fn cancel_during_streaming_answers_cancelled_and_keeps_the_text_already_shown() {
    let h = Harness::start(vec![Reply::Hang(vec![fm::text("Hel")]), answer(&["next"])]).await;
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "tell me");
    h.client.wait_for("the first chunk", |u| has(u, "agent_message_chunk", "Hel")).await;
    h.client.cancel(&session);
    let response = turn.await.unwrap().unwrap();
    assert_eq!(stop(&response), json!("cancelled"));

    h.client.prompt(&session, "go on").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(messages[2], json!({"role": "assistant", "content": "Hel"}));
    assert_eq!(messages[3], json!({"role": "user", "content": "go on"}));
    h.model.assert_done();
}

#[tokio::test]
async fn cancel_during_a_tool_stops_it_fails_the_call_and_keeps_every_call_answered() {
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let h = Setup::new(vec![
        calls(&[("b1", "block", "{}"), ("b2", "read", "{\"file_path\": \"/x\"}")]),
        answer(&["after"]),
    ])
    .registry(with_blocking_tool(saw_cancel.clone()))
    .start()
    .await;
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "block");
    h.client
        .wait_for("the tool to run", |u| {
            u.iter().any(|n| n["update"]["toolCallId"] == "b1" && n["update"]["status"] == "in_progress")
        })
        .await;
    h.client.cancel(&session);
    let response = turn.await.unwrap().unwrap();
    assert_eq!(stop(&response), json!("cancelled"));
    assert!(saw_cancel.load(Ordering::SeqCst), "the tool observed the cancellation");
    let updates = h.transcript(&session);
    let done = finished(&updates, "b1");
    assert_eq!(done["status"], "failed");
    assert_eq!(done["content"][0]["content"]["text"], "Cancelled by the user before the tool finished.");
    assert!(!updates.iter().any(|u| u["toolCallId"] == "b2"), "the second call never started");

    h.client.prompt(&session, "next").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(tool_result(&messages, "b1"), "Cancelled by the user before the tool finished.");
    assert_eq!(tool_result(&messages, "b2"), "Cancelled by the user before the tool finished.");
    h.model.assert_done();
}

#[tokio::test]
async fn a_prompt_sent_right_after_a_cancel_runs_once_the_cancelled_turn_has_ended() {
    let h = Harness::start(vec![Reply::Hang(vec![fm::text("first")]), answer(&["second"])]).await;
    let session = h.session().await;
    let first = h.client.prompt_later(&session, "one");
    h.client.wait_for("the first turn to stream", |u| has(u, "agent_message_chunk", "first")).await;
    // As Zed does on Stop: cancel, then the user's next prompt at once (it must not be cancelled too).
    h.client.cancel(&session);
    let second = h.client.prompt(&session, "two").await.unwrap();
    assert_eq!(stop(&first.await.unwrap().unwrap()), json!("cancelled"));
    assert_eq!(stop(&second), json!("end_turn"));
    let users: Vec<Value> = h
        .model
        .messages(1)
        .into_iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(users, vec![json!("one"), json!("two")]);
}

#[tokio::test]
async fn sessions_run_concurrently_and_cancel_only_touches_its_own_session() {
    let h = Harness::start(vec![Reply::Hang(vec![fm::text("slow")]), answer(&["fast"])]).await;
    let slow = h.session().await;
    let fast = h.session().await;
    let slow_turn = h.client.prompt_later(&slow, "slow one");
    h.client.wait_for("the slow session to stream", |u| has(u, "agent_message_chunk", "slow")).await;
    let fast_response = h.client.prompt(&fast, "fast one").await.unwrap();
    assert_eq!(stop(&fast_response), json!("end_turn"));
    h.client.cancel(&fast);
    assert!(!slow_turn.is_finished());
    h.client.cancel(&slow);
    assert_eq!(stop(&slow_turn.await.unwrap().unwrap()), json!("cancelled"));
}

#[tokio::test]
async fn closing_the_connection_mid_turn_cancels_the_turn_and_ends_serving_cleanly() {
    let h = Harness::start(vec![Reply::Hang(vec![fm::text("partial")])]).await;
    let session = h.session().await;
    let _turn = h.client.prompt_later(&session, "hang");
    h.client.wait_for("streaming", |u| has(u, "agent_message_chunk", "partial")).await;
    let Harness { client, model, .. } = h;
    assert!(client.close().await.is_ok());
    // The fake model saw the connection dropped: its hanging reply ended, so a new request would be served.
    assert_eq!(model.requests().len(), 1);
}
