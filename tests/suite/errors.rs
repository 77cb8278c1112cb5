//! Provider failures and bad requests: each gets a clear error, nothing is lost, the session stays usable.

use agent_client_protocol::v1::schema as acp;
use serde_json::json;

use super::turn::stop;
use crate::support::client::Harness;
use crate::support::fake_model::{self as fm, Reply, answer, status};

#[tokio::test]
async fn a_server_error_is_retried_and_the_turn_then_succeeds() {
    let h = Harness::start(vec![
        status(
            500,
            json!({"error": {"message": "upstream exploded", "type": "server_error"}}),
            &[("retry-after", "0")],
        ),
        answer(&["recovered"]),
    ])
    .await;
    let session = h.session().await;
    let response = h.client.prompt(&session, "hi").await.unwrap();
    assert_eq!(stop(&response), json!("end_turn"));
    assert_eq!(h.model.requests().len(), 2);
    assert_eq!(h.model.requests()[0].body, h.model.requests()[1].body, "the retry resends the same request");
    let texts: Vec<String> = h
        .transcript(&session)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, vec!["recovered"]);
    h.model.assert_done();
}

#[tokio::test]
async fn a_rejected_key_names_the_cause_and_the_session_stays_usable() {
    let h = Harness::start(vec![
        status(401, json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}), &[]),
        answer(&["fine now"]),
    ])
    .await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(
        error.code,
        agent_client_protocol::ErrorCode::AUTH_REQUIRED,
        "editors show their sign-in flow"
    );
    assert_eq!(
        error.message,
        "Model request failed: the model provider rejected the credentials (HTTP 401): Incorrect API key provided; fix the key: set TINYCODE_API_KEY."
    );
    assert_eq!(h.model.requests().len(), 1, "a 401 is never retried");
    let response = h.client.prompt(&session, "again").await.unwrap();
    assert_eq!(stop(&response), json!("end_turn"));
    let messages = h.model.messages(1);
    let users: Vec<&str> =
        messages.iter().filter(|m| m["role"] == "user").map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(users, vec!["hi", "again"], "the failed prompt is kept in the history");
}

#[tokio::test]
async fn an_exhausted_retry_budget_reports_the_attempts_and_the_last_error() {
    let limited = || {
        status(
            429,
            json!({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}),
            &[("retry-after-ms", "1")],
        )
    };
    let h = Harness::start(vec![limited(), limited(), limited()]).await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the model provider kept failing after 3 attempts; last error: HTTP 429: Rate limit reached."
    );
    h.model.assert_done();
}

#[tokio::test]
async fn quota_errors_are_not_retried() {
    let h = Harness::start(vec![status(
        429,
        json!({"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}),
        &[],
    )])
    .await;
    let session = h.session().await;
    let quota = h.client.prompt(&session, "a").await.unwrap_err();
    assert_eq!(
        quota.message,
        "Model request failed: the model provider reports the quota or billing limit is exhausted: You exceeded your current quota."
    );
    h.model.assert_done();
}

#[tokio::test]
async fn a_context_overflow_is_compacted_once_and_otherwise_reported_with_the_providers_words() {
    let overflow = || {
        status(
            400,
            json!({"error": {"message": "This model's maximum context length is 4097 tokens. However, your messages resulted in 9000 tokens."}}),
            &[],
        )
    };
    let h = Harness::start(vec![answer(&["first answer"]), overflow(), overflow()]).await;
    let session = h.session().await;
    h.client.prompt(&session, "first").await.unwrap();
    let error = h.client.prompt(&session, "second").await.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the conversation is too long for the model's context window: This model's maximum context length is 4097 tokens. However, your messages resulted in 9000 tokens. Start a new session or shorten the conversation."
    );
    let summary_request = &h.model.requests()[2];
    assert!(
        summary_request.body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You are summarising a coding session")
    );
    assert!(summary_request.body.get("tools").is_none(), "the summary request offers no tools");
    h.model.assert_done();
}

#[tokio::test]
async fn a_stream_cut_before_any_output_is_retried_transparently() {
    let h = Harness::start(vec![Reply::Cut(vec![]), answer(&["whole answer"])]).await;
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "hi").await.unwrap()), json!("end_turn"));
    h.model.assert_done();
}

#[tokio::test]
async fn a_stream_cut_after_output_is_reported_and_the_partial_text_is_kept() {
    let h = Harness::start(vec![Reply::Cut(vec![fm::text("Half an ans")]), answer(&["ok"])]).await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the model's response stream was interrupted: the stream ended before the response was complete."
    );
    h.client.prompt(&session, "continue").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(messages[2], json!({"role": "assistant", "content": "Half an ans"}));
}

#[tokio::test]
async fn an_error_object_inside_a_successful_stream_is_classified() {
    let h = Harness::start(vec![Reply::Sse(vec![
        json!({"error": {"message": "model not loaded", "code": 404}}),
    ])])
    .await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the model provider rejected the request (HTTP 404): model not loaded."
    );
}

#[tokio::test]
async fn an_unknown_session_gets_resource_not_found() {
    let h = Harness::start(vec![]).await;
    let error = h.client.prompt(&acp::SessionId::from("sess_nope"), "hi").await.unwrap_err();
    assert_eq!(error.code, agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND);
    assert_eq!(error.message, "Session not found: sess_nope");
    // A cancel for an unknown session is a notification: ignored, and the agent keeps serving.
    h.client.cancel(&acp::SessionId::from("sess_nope"));
    h.session().await;
}

#[tokio::test]
async fn a_relative_or_missing_cwd_is_invalid_params() {
    let h = Harness::start(vec![]).await;
    let relative =
        h.client.cx.send_request(acp::NewSessionRequest::new("relative/dir")).block_task().await.unwrap_err();
    assert_eq!(relative.code, agent_client_protocol::ErrorCode::INVALID_PARAMS);
    assert_eq!(relative.message, "cwd must be an absolute path, got \"relative/dir\"");
    let missing = h
        .client
        .cx
        .send_request(acp::NewSessionRequest::new("/nonexistent/tinycode"))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(missing.code, agent_client_protocol::ErrorCode::INVALID_PARAMS);
    assert_eq!(missing.message, "cwd is not an existing directory: /nonexistent/tinycode");
}

#[tokio::test]
async fn a_broken_project_config_is_reported_when_the_session_is_created() {
    let h = Harness::start(vec![]).await;
    h.write(".tinycode/config.toml", "model = [oops\n");
    let error =
        h.client.cx.send_request(acp::NewSessionRequest::new(h.cwd.clone())).block_task().await.unwrap_err();
    assert_eq!(error.code, agent_client_protocol::ErrorCode::INVALID_PARAMS);
    assert!(
        error
            .message
            .starts_with(&format!("invalid config file {}", h.cwd.join(".tinycode/config.toml").display())),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn bad_tool_arguments_missing_files_and_binary_files_are_errors_the_model_can_act_on() {
    let h = Harness::start(vec![]).await;
    h.write("config.toml", "a = 1\n");
    let binary = h.cwd.join("blob.bin");
    std::fs::write(&binary, [0u8, 1, 2, 0, 0, 0, 9, 0]).unwrap();
    let missing = h.cwd.join("conf.toml");
    h.model.script(vec![
        crate::support::fake_model::calls(&[
            ("a", "read", &json!({"file_path": missing}).to_string()),
            ("b", "read", &json!({"file_path": binary}).to_string()),
            ("c", "read", r#"{"offset": 3}"#),
            ("d", "grep", r#"{"pattern": "(unclosed"}"#),
            ("e", "glob", &json!({"pattern": "*", "path": h.cwd.join("nonexistent/x")}).to_string()),
        ]),
        answer(&["ok"]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "go").await.unwrap();
    let messages = h.model.messages(1);
    use super::turn::tool_result;
    assert_eq!(
        tool_result(&messages, "a"),
        format!(
            "File not found: {}\n\nDid you mean one of these?\n{}",
            missing.display(),
            h.cwd.join("config.toml").display()
        )
    );
    assert_eq!(
        tool_result(&messages, "b"),
        format!("Cannot read binary file: {} (8 bytes)", binary.display())
    );
    assert_eq!(
        tool_result(&messages, "c"),
        "Tool read needs file_path: string (the file to read) or paths: array of string (several files or glob patterns); you sent keys [offset]. Resend the call with one of them."
    );
    assert!(tool_result(&messages, "d").starts_with("invalid regex `(unclosed`: regex parse error"));
    assert_eq!(
        tool_result(&messages, "e"),
        format!("Search path not found: {}", h.cwd.join("nonexistent/x").display())
    );
}
