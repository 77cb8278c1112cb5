//! The permission seam over ACP: `session/request_permission` with all four option kinds, and what each answer
//! means for the tool and the turn.

use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::turn::{finished, stop, tool_result};
use crate::support::client::{Answer, Harness, Setup};
use crate::support::fake_model::{answer, calls};
use crate::support::tools::with_edit_tool;

async fn harness(script: Vec<crate::support::fake_model::Reply>) -> Harness {
    Setup::new(script).registry(with_edit_tool()).start().await
}

#[tokio::test]
async fn an_ask_offers_all_four_options_and_shows_the_real_title_kind_and_content() {
    let h = harness(vec![calls(&[("m1", "mark", r#"{"path": "a.rs"}"#)]), answer(&["ok"])]).await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "mark a").await.unwrap()), json!("end_turn"));
    let asks = h.client.log.permission_requests.lock().unwrap().clone();
    assert_eq!(asks.len(), 1);
    let ask = serde_json::to_value(&asks[0]).unwrap();
    assert_eq!(
        ask,
        json!({
            "sessionId": session.0.as_ref(),
            "toolCall": {
                "toolCallId": "m1",
                "title": "Mark a.rs",
                "kind": "edit",
                "status": "pending",
                "content": [{"type": "content", "content": {"type": "text", "text": "will mark a.rs"}}],
                "rawInput": {"path": "a.rs"}
            },
            "options": [
                {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
                {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"}
            ]
        })
    );
    assert_eq!(tool_result(&h.model.messages(1), "m1"), "marked a.rs");
    // The call stays pending (the wire default, so no status) while asked and turns in_progress once allowed.
    let statuses: Vec<Value> = h
        .client
        .updates(&session)
        .iter()
        .filter(|u| u["toolCallId"] == "m1")
        .map(|u| u["status"].clone())
        .collect();
    assert_eq!(statuses, vec![json!(null), json!("in_progress"), json!("completed")]);
}

#[tokio::test]
async fn a_rejection_tells_the_model_the_user_declined_and_the_turn_goes_on() {
    let h = harness(vec![calls(&[("m1", "mark", r#"{"path": "a.rs"}"#)]), answer(&["understood"])]).await;
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "mark a").await.unwrap()), json!("end_turn"));
    assert_eq!(
        tool_result(&h.model.messages(1), "m1"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
    assert_eq!(finished(&h.transcript(&session), "m1")["status"], "failed");
}

#[tokio::test]
async fn always_answers_cover_the_project_for_edits_and_the_exact_path_outside_it() {
    let h = harness(vec![]).await;
    let inside = |p: &str| h.cwd.join(p).display().to_string();
    let mark = |id: &str, path: &str| (id.to_string(), "mark".to_string(), json!({"path": path}).to_string());
    let steps = [
        mark("m1", &inside("a.rs")),
        mark("m2", &inside("sub/b.rs")),
        mark("m3", "/elsewhere/c.rs"),
        mark("m4", "/elsewhere/c.rs"),
    ];
    let borrowed: Vec<(&str, &str, &str)> =
        steps.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
    h.model.script(vec![calls(&borrowed), answer(&["ok"])]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways), Answer::Pick(K::RejectAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "mark").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(tool_result(&messages, "m1"), format!("marked {}", inside("a.rs")));
    assert_eq!(
        tool_result(&messages, "m2"),
        format!("marked {}", inside("sub/b.rs")),
        "no second ask inside the project"
    );
    assert_eq!(
        tool_result(&messages, "m3"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
    assert_eq!(
        tool_result(&messages, "m4"),
        "Permission denied by rule {permission: \"edit\", pattern: \"/elsewhere/c.rs\", action: deny}. Do not retry this call."
    );
    assert_eq!(h.client.log.permission_requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_cancelled_or_failed_ask_ends_the_turn_as_cancelled_without_running_the_tool() {
    for answer_kind in [Answer::Cancelled, Answer::Fail] {
        let h = harness(vec![calls(&[("m1", "mark", r#"{"path": "a.rs"}"#)]), answer(&["next"])]).await;
        h.client.answer_permissions(&[answer_kind]);
        let session = h.session().await;
        assert_eq!(
            stop(&h.client.prompt(&session, "mark").await.unwrap()),
            json!("cancelled"),
            "{answer_kind:?}"
        );
        assert_eq!(finished(&h.transcript(&session), "m1")["status"], "failed");
        h.client.prompt(&session, "again").await.unwrap();
        assert_eq!(
            tool_result(&h.model.messages(1), "m1"),
            "Cancelled by the user before the tool finished."
        );
    }
}

#[tokio::test]
async fn a_session_cancel_while_an_ask_is_pending_ends_the_turn_and_the_tool_never_runs() {
    let h = harness(vec![calls(&[("m1", "mark", r#"{"path": "a.rs"}"#)])]).await;
    // No scripted answer: the ask stays open until the test cancels.
    h.client.log.answers.lock().unwrap().clear();
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "mark");
    h.client.wait_for("the ask", |u| u.iter().any(|n| n["update"]["toolCallId"] == "m1")).await;
    let asked = async {
        loop {
            if !h.client.log.permission_requests.lock().unwrap().is_empty() {
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(crate::support::client::PATIENCE, asked).await.unwrap();
    h.client.cancel(&session);
    assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("cancelled"));
    let updates = h.transcript(&session);
    assert!(!updates.iter().any(|u| u["toolCallId"] == "m1" && u["status"] == "in_progress"));
}
