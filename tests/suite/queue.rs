//! Talking to a running turn: prompts sent meanwhile wait in line (each `session/prompt` answers when its own
//! turn ends, and the user is told it is queued), a steering message (`/steer TEXT` or `_meta.tinycode.steer`)
//! reaches the running turn at its next model request, and a cancel stops the turn and empties the line.

use std::sync::Arc;

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};

use super::turn::{stop, tool_result};
use crate::support::client::{Harness, Setup};
use crate::support::fake_model::{answer, calls};
use crate::support::tools::with_gate_tool;

fn notices(h: &Harness, session: &acp::SessionId) -> Vec<Value> {
    h.client
        .updates(session)
        .into_iter()
        .filter(|u| u["_meta"]["tinycode"]["queued"].is_object())
        .map(|u| json!({"text": u["content"]["text"], "meta": u["_meta"]}))
        .collect()
}

fn running(updates: &[Value], call: &str) -> bool {
    updates.iter().any(|n| n["update"]["toolCallId"] == call && n["update"]["status"] == "in_progress")
}

/// The text of the last user message of model request `n`.
fn last_user(h: &Harness, n: usize) -> Value {
    h.model.messages(n).into_iter().rfind(|m| m["role"] == "user").unwrap()["content"].clone()
}

async fn gated(script: Vec<crate::support::fake_model::Reply>) -> (Harness, Arc<tokio::sync::Semaphore>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let h = Setup::new(script).registry(with_gate_tool(gate.clone())).start().await;
    (h, gate)
}

#[tokio::test]
async fn rapid_prompts_during_a_turn_wait_in_line_and_each_answers_when_its_own_turn_ends() {
    let (h, gate) = gated(vec![
        calls(&[("g", "gate", "{}")]),
        answer(&["first done"]),
        answer(&["a"]),
        answer(&["b"]),
        answer(&["c"]),
    ])
    .await;
    let session = h.session().await;
    let first = h.client.prompt_later(&session, "first");
    h.client.wait_for("the gate", |u| running(u, "g")).await;
    let mut queued = Vec::new();
    for (n, text) in ["a", "b", "c"].into_iter().enumerate() {
        queued.push(h.client.prompt_later(&session, text));
        h.client.wait_for("the queued notice", |_| notices(&h, &session).len() == n + 1).await;
    }
    assert!(!first.is_finished() && queued.iter().all(|q| !q.is_finished()));
    assert_eq!(h.model.requests().len(), 1, "nothing queued reached the model yet");
    gate.add_permits(1);
    assert_eq!(stop(&first.await.unwrap().unwrap()), json!("end_turn"));
    for turn in queued {
        assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("end_turn"));
    }
    assert_eq!(
        notices(&h, &session),
        vec![
            json!({"text": "\n\n_Queued: “a” runs after the running turn. Send `/steer …` to add to the running turn instead._\n\n", "meta": {"tinycode": {"queued": {"position": 1}}}}),
            json!({"text": "\n\n_Queued: “b” runs after the running turn and 1 queued before it. Send `/steer …` to add to the running turn instead._\n\n", "meta": {"tinycode": {"queued": {"position": 2}}}}),
            json!({"text": "\n\n_Queued: “c” runs after the running turn and 2 queued before it. Send `/steer …` to add to the running turn instead._\n\n", "meta": {"tinycode": {"queued": {"position": 3}}}}),
        ]
    );
    assert_eq!(tool_result(&h.model.messages(1), "g"), "through the gate");
    let users: Vec<Value> = (1..5).map(|n| last_user(&h, n)).collect();
    assert_eq!(users, vec![json!("first"), json!("a"), json!("b"), json!("c")]);
    assert_eq!(
        h.said(&session).into_iter().filter(|t| !t.contains("Queued")).collect::<Vec<_>>(),
        vec!["first done", "a", "b", "c"]
    );
    h.model.assert_done();
}

#[tokio::test]
async fn a_cancel_stops_the_running_turn_and_answers_every_queued_prompt_cancelled() {
    let (h, _gate) = gated(vec![calls(&[("g", "gate", "{}")]), answer(&["after the cancel"])]).await;
    let session = h.session().await;
    let first = h.client.prompt_later(&session, "first");
    h.client.wait_for("the gate", |u| running(u, "g")).await;
    let second = h.client.prompt_later(&session, "second");
    let third = h.client.prompt_later(&session, "third");
    h.client.wait_for("both queued", |_| notices(&h, &session).len() == 2).await;
    h.client.cancel(&session);
    for turn in [first, second, third] {
        assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("cancelled"));
    }
    assert_eq!(h.model.requests().len(), 1);
    let next = h.client.prompt(&session, "fresh start").await.unwrap();
    assert_eq!(stop(&next), json!("end_turn"));
    assert_eq!(last_user(&h, 1), json!("fresh start"));
    h.model.assert_done();
}

fn steering(session: &acp::SessionId, text: &str) -> acp::PromptRequest {
    let mut meta = acp::Meta::new();
    meta.insert("tinycode".into(), json!({"steer": true}));
    acp::PromptRequest::new(session.clone(), vec![acp::ContentBlock::Text(acp::TextContent::new(text))])
        .meta(meta)
}

#[tokio::test]
async fn a_steering_message_reaches_the_running_turn_at_its_next_model_request_without_stopping_it() {
    let (h, gate) = gated(vec![calls(&[("g", "gate", "{}")]), answer(&["used v2"])]).await;
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "migrate the client");
    h.client.wait_for("the gate", |u| running(u, "g")).await;
    let steer = h.client.request_later(steering(&session, "use the v2 API"));
    h.client
        .wait_for("the steering notice", |u| {
            u.iter().any(|n| n["update"]["_meta"]["tinycode"]["steering"].is_object())
        })
        .await;
    gate.add_permits(1);
    let steered = steer.await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(&steered).unwrap(),
        json!({"stopReason": "end_turn", "_meta": {"tinycode": {"steered": true}}})
    );
    assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("end_turn"));
    let messages = h.model.messages(1);
    let tail: Vec<Value> = messages[messages.len() - 2..].to_vec();
    assert_eq!(
        tail,
        vec![
            json!({"role": "tool", "tool_call_id": "g", "content": "through the gate"}),
            json!({"role": "user", "content": "use the v2 API"})
        ]
    );
    assert!(notices(&h, &session).is_empty(), "a steering message is not queued");
    assert!(h.said(&session).contains(
        &"\n\n_Steering: “use the v2 API” reaches the running turn at its next step._\n\n".to_string()
    ));
    h.model.assert_done();
}

#[tokio::test]
async fn slash_steer_wakes_a_sleeping_turn_and_the_model_sees_why_and_what() {
    let h =
        Harness::start(vec![calls(&[("s", "sleep", r#"{"seconds": 300}"#)]), answer(&["hurrying"])]).await;
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "wait for the deploy");
    h.client.wait_for("the sleep", |u| running(u, "s")).await;
    let steered = h.client.prompt(&session, "/steer  skip the wait").await.unwrap();
    assert_eq!(steered.meta.unwrap()["tinycode"], json!({"steered": true}));
    assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("end_turn"));
    let messages = h.model.messages(1);
    let woke = tool_result(&messages, "s");
    assert!(
        woke.starts_with("Woke after ")
            && woke.ends_with(
                " s of 300 s: the user sent a message for this turn; it comes with your next step."
            ),
        "{woke}"
    );
    assert_eq!(messages.last().unwrap(), &json!({"role": "user", "content": "skip the wait"}));
    h.model.assert_done();
}

#[tokio::test]
async fn a_steering_message_with_no_turn_running_is_an_ordinary_prompt() {
    let h = Harness::start(vec![answer(&["hello"])]).await;
    let session = h.session().await;
    let response = h.client.prompt(&session, "/steer say hello").await.unwrap();
    assert_eq!(serde_json::to_value(&response).unwrap(), json!({"stopReason": "end_turn"}));
    assert_eq!(last_user(&h, 0), json!("say hello"));
    h.model.assert_done();
}

#[tokio::test]
async fn initialize_advertises_queueing_and_steering_in_agent_capabilities_meta() {
    let h = Harness::start(vec![]).await;
    let init = h.client.initialize(acp::ClientCapabilities::new()).await;
    assert_eq!(
        serde_json::to_value(&init.agent_capabilities).unwrap()["_meta"],
        json!({"tinycode": {"promptQueueing": true, "steering": {"supported": true, "promptMeta": "steer", "command": "/steer"}}})
    );
}
