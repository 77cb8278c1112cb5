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
async fn a_cancelled_ask_ends_the_turn_as_cancelled_without_running_the_tool() {
    let h = harness(vec![calls(&[("m1", "mark", r#"{"path": "a.rs"}"#)]), answer(&["next"])]).await;
    h.client.answer_permissions(&[Answer::Cancelled]);
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "mark").await.unwrap()), json!("cancelled"));
    assert_eq!(finished(&h.transcript(&session), "m1")["status"], "failed");
    h.client.prompt(&session, "again").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "m1"), "Cancelled by the user before the tool finished.");
}

#[tokio::test]
async fn a_failed_ask_rejects_that_call_and_the_turn_goes_on() {
    let h = harness(vec![calls(&[("m1", "mark", r#"{"path": "a.rs"}"#)]), answer(&["understood"])]).await;
    h.client.answer_permissions(&[Answer::Fail]);
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "mark").await.unwrap()), json!("end_turn"));
    assert_eq!(finished(&h.transcript(&session), "m1")["status"], "failed");
    assert_eq!(
        tool_result(&h.model.messages(1), "m1"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
    assert_eq!(h.said(&session), vec!["understood"]);
    h.model.assert_done();
}

#[tokio::test]
async fn a_session_cancel_while_an_ask_is_pending_ends_the_turn_and_the_tool_never_runs() {
    let h = harness(vec![calls(&[("m1", "mark", r#"{"path": "a.rs"}"#)])]).await;
    // The user has not decided yet: the ask stays open until the test cancels (and then answers `cancelled`).
    h.client.answer_permissions(&[Answer::Hold]);
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "mark");
    h.client.wait_log("the open ask", |log| !log.held.lock().unwrap().is_empty()).await;
    h.client.cancel(&session);
    assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("cancelled"));
    let updates = h.transcript(&session);
    assert!(!updates.iter().any(|u| u["toolCallId"] == "m1" && u["status"] == "in_progress"));
    assert_eq!(finished(&updates, "m1")["status"], "failed");
    h.model.assert_done();
}

#[tokio::test]
async fn always_allow_survives_a_restart_and_the_permissions_command_lists_and_revokes_it() {
    let mut h = harness(vec![]).await;
    let path = |p: &str| h.cwd.join(p).display().to_string();
    let (a, b, c) = (path("a.rs"), path("b.rs"), path("c.rs"));
    h.model.script(vec![calls(&[("m1", "mark", &json!({"path": a}).to_string())]), answer(&["ok"])]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let first = h.session().await;
    h.client.prompt(&first, "mark a").await.unwrap();

    h.restart().await;
    h.model.script(vec![calls(&[("m2", "mark", &json!({"path": b}).to_string())]), answer(&["ok"])]);
    let session = h.session().await;
    h.client.prompt(&session, "mark b").await.unwrap();
    assert_eq!(h.client.log.permission_requests.lock().unwrap().len(), 0, "remembered across the restart");
    assert_eq!(tool_result(&h.model.messages(3), "m2"), format!("marked {b}"));

    h.client.prompt(&session, "/permissions").await.unwrap();
    h.client.prompt(&session, "/permissions revoke 1").await.unwrap();
    h.client.prompt(&session, "/permissions").await.unwrap();
    let project = h.cwd.display().to_string();
    assert_eq!(
        h.said(&session)[1..],
        [
            format!(
                "Permissions remembered for `{project}`:\n1. allow `edit` for `{project}/**`\n\n`/permissions revoke N` forgets one; `/permissions clear` forgets them all."
            ),
            format!("Forgot rule 1 (allow `edit` for `{project}/**`); such calls ask again."),
            format!(
                "No permissions are remembered for `{project}`. Answering an ask with \"Always allow\" or \"Always reject\" adds one."
            ),
        ]
    );

    h.model.script(vec![calls(&[("m3", "mark", &json!({"path": c}).to_string())]), answer(&["ok"])]);
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    h.client.prompt(&session, "mark c").await.unwrap();
    assert_eq!(h.client.log.permission_requests.lock().unwrap().len(), 1, "asks again after the revoke");
    h.restart().await;
    h.client.prompt(&h.session().await, "/permissions").await.unwrap_or_else(|e| panic!("{e:?}"));
    let db = rusqlite::Connection::open(h.data.join("tinycode.db")).unwrap();
    let rules: i64 = db.query_row("SELECT COUNT(*) FROM permission_rules", [], |r| r.get(0)).unwrap();
    assert_eq!(rules, 0, "the revoke reached the database");
    h.model.assert_done();
}

#[tokio::test]
async fn destructive_commands_never_offer_always_allow() {
    let h = Harness::start(vec![
        calls(&[("b1", "bash", &json!({"command": "rm -rf build"}).to_string())]),
        answer(&["kept"]),
    ])
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "clean").await.unwrap();
    let asks = h.client.log.permission_requests.lock().unwrap().clone();
    let options: Vec<String> = asks[0].options.iter().map(|o| o.option_id.0.to_string()).collect();
    assert_eq!(options, vec!["allow_once", "reject_once", "reject_always"]);
}
