//! Request building, error classification and stream state of the Chat Completions client.

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::json;

use super::*;
use crate::llm::ToolCall;

fn classify_body(status: u16, body: serde_json::Value) -> Attempt {
    classify(status, &HeaderMap::new(), &body.to_string())
}

#[test]
fn the_body_omits_tools_when_there_are_none_and_carries_max_tokens_when_set() {
    let request = Request {
        model: "m".into(),
        system: "sys".into(),
        messages: vec![Message::User(vec![UserPart::Text("hi".into())])],
        tools: vec![],
        max_output_tokens: Some(512),
        reasoning_effort: Some("high".into()),
    };
    assert_eq!(
        body(&request),
        json!({
            "model": "m",
            "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 512,
            "reasoning_effort": "high"
        })
    );
}

#[test]
fn history_maps_to_chat_messages_with_images_moved_after_the_tool_results() {
    let messages = vec![
        Message::User(vec![
            UserPart::Text("look".into()),
            UserPart::Image { mime: "image/png".into(), data: "AAA".into() },
        ]),
        Message::Assistant {
            text: String::new(),
            reasoning: Some(Reasoning { field: ReasoningField::Reasoning, text: "hmm".into() }),
            tool_calls: vec![
                ToolCall { id: "a".into(), name: "read".into(), arguments: "{}".into() },
                ToolCall { id: "b".into(), name: "read".into(), arguments: "{}".into() },
            ],
        },
        Message::Tool { call_id: "a".into(), content: "data:image/png;base64,QUJD".into() },
        Message::Tool { call_id: "b".into(), content: "text".into() },
        Message::Assistant { text: "done".into(), reasoning: None, tool_calls: vec![] },
    ];
    assert_eq!(
        messages_json("sys", &messages),
        vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}}]}),
            json!({"role": "assistant", "content": null, "reasoning": "hmm", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "The image is attached in the next message."}),
            json!({"role": "tool", "tool_call_id": "b", "content": "text"}),
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}]}),
            json!({"role": "assistant", "content": "done"}),
        ]
    );
}

#[test]
fn errors_are_classified_by_status_code_and_message() {
    assert!(matches!(
        classify_body(401, json!({"error": {"message": "bad key"}})),
        Attempt::Fatal(LlmError::Auth { status: 401, .. })
    ));
    assert!(matches!(
        classify_body(403, json!({"error": "forbidden"})),
        Attempt::Fatal(LlmError::Auth { status: 403, .. })
    ));
    assert!(matches!(
        classify_body(400, json!({"error": {"message": "x", "code": "context_length_exceeded"}})),
        Attempt::Fatal(LlmError::ContextOverflow { .. })
    ));
    assert!(matches!(
        classify_body(
            400,
            json!({"error": {"message": "request (9000 tokens) exceeds the available context size (4096 tokens)", "type": "exceed_context_size_error"}})
        ),
        Attempt::Fatal(LlmError::ContextOverflow { .. })
    ));
    assert!(matches!(classify(413, &HeaderMap::new(), ""), Attempt::Fatal(LlmError::ContextOverflow { .. })));
    assert!(matches!(
        classify_body(429, json!({"error": {"message": "quota", "code": "insufficient_quota"}})),
        Attempt::Fatal(LlmError::Quota { .. })
    ));
    assert!(matches!(
        classify_body(404, json!({"error": {"message": "no such model"}})),
        Attempt::Fatal(LlmError::Rejected { status: 404, .. })
    ));
    let mut headers = HeaderMap::new();
    headers.insert("retry-after", HeaderValue::from_static("3"));
    match classify(503, &headers, "upstream down") {
        Attempt::Retry { message, wait } => {
            assert_eq!(message, "HTTP 503: upstream down");
            assert_eq!(wait, Some(Duration::from_secs(3)));
        }
        Attempt::Fatal(e) => panic!("{e:?}"),
    }
}

#[test]
fn the_stream_state_assembles_text_usage_refusals_and_finish_reasons() {
    let mut state = StreamState::default();
    let deltas = std::sync::Mutex::new(Vec::new());
    let on_delta = |d: Delta| deltas.lock().unwrap().push(d);
    for chunk in [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        json!({"choices": [{"index": 0, "delta": {"reasoning": "think"}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "read", "arguments": "{}"}}]}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}}}),
    ] {
        assert!(state.data(&chunk.to_string(), &on_delta).is_ok());
    }
    assert!(state.data("[DONE]", &on_delta).is_ok());
    assert!(state.done);
    let response = state.finish();
    assert_eq!(*deltas.lock().unwrap(), vec![Delta::Reasoning("think".into()), Delta::Text("Hi".into())]);
    assert_eq!(response.finish, FinishReason::ToolCalls, "assembled calls win over a `stop` finish reason");
    assert_eq!(
        response.usage,
        Some(Usage { input_tokens: 10, output_tokens: 2, cached_tokens: 4, reasoning_tokens: 0 })
    );
    assert_eq!(
        response.reasoning,
        Some(Reasoning { field: ReasoningField::Reasoning, text: "think".into() })
    );

    let mut refused = StreamState::default();
    assert!(refused.data(&json!({"choices": [{"index": 0, "delta": {"refusal": "I can't"}, "finish_reason": "content_filter"}]}).to_string(), &on_delta).is_ok());
    let response = refused.finish();
    assert_eq!(
        (response.refusal.as_deref(), response.finish),
        (Some("I can't"), FinishReason::ContentFilter)
    );

    let mut unknown = StreamState::default();
    assert!(
        unknown
            .data(
                &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "eos_token"}]}).to_string(),
                &on_delta
            )
            .is_ok()
    );
    assert_eq!(unknown.finish().finish, FinishReason::Other("eos_token".into()));
}

#[test]
fn an_undecodable_chunk_is_a_protocol_error_naming_it() {
    let mut state = StreamState::default();
    match state.data("{oops", &|_| {}) {
        Err(Attempt::Fatal(LlmError::Protocol(message))) => {
            assert!(message.ends_with(": {oops"), "{message}")
        }
        _ => panic!("expected a protocol error"),
    }
}

/// A stream that yields `chunk` every `every` (tokio time) forever.
fn every(
    every: std::time::Duration,
    chunk: &'static str,
) -> impl futures::Stream<Item = Result<&'static [u8], String>> {
    futures::stream::unfold((), move |()| async move {
        tokio::time::sleep(every).await;
        Some((Ok(chunk.as_bytes()), ()))
    })
    .boxed()
}

fn limits(output_tokens: u64) -> Limits {
    Limits {
        idle: std::time::Duration::from_secs(300),
        deadline: std::time::Duration::from_secs(600),
        output_tokens,
    }
}

fn stalled_with(result: Result<Response, Attempt>) -> String {
    match result {
        Err(Attempt::Retry { message, wait: None }) => message,
        Err(Attempt::Fatal(e)) => panic!("expected a stall, got {e}"),
        _ => panic!("expected a stall"),
    }
}

#[tokio::test(start_paused = true)]
async fn keep_alive_comments_every_half_second_hold_a_stream_for_twice_the_idle_timeout_only() {
    let start = tokio::time::Instant::now();
    let result =
        read_stream(every(std::time::Duration::from_millis(500), ": keep-alive\n\n"), limits(100), &|_| {})
            .await;
    assert_eq!(stalled_with(result), "the model sent only keep-alive comments and no data for 600 s");
    assert_eq!(start.elapsed(), std::time::Duration::from_secs(600));
}

#[tokio::test(start_paused = true)]
async fn a_silent_stream_is_cut_after_the_idle_timeout() {
    let start = tokio::time::Instant::now();
    let silent = futures::stream::pending::<Result<&'static [u8], String>>();
    assert_eq!(
        stalled_with(read_stream(silent, limits(100), &|_| {}).await),
        "the model sent no data for 300 s"
    );
    assert_eq!(start.elapsed(), std::time::Duration::from_secs(300));
}

#[tokio::test(start_paused = true)]
async fn endless_text_stops_at_the_output_cap_after_relaying_what_came_before_it() {
    let chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"0123456789\"}}]}\n\n";
    let shown = std::sync::Mutex::new(String::new());
    let on_delta = |delta: Delta| {
        if let Delta::Text(text) = delta {
            shown.lock().unwrap().push_str(&text);
        }
    };
    let result =
        read_stream(every(std::time::Duration::from_millis(10), chunk), limits(100), &on_delta).await;
    match result {
        Err(Attempt::Fatal(error)) => assert_eq!(error, LlmError::OutputCap { tokens: 100 }),
        _ => panic!("expected the output cap"),
    }
    assert_eq!(shown.lock().unwrap().len(), 410, "41 chunks of 10 bytes: the first past 400 bytes stops it");
}

#[test]
fn the_stop_messages_name_the_limit_and_what_to_change() {
    let deadline =
        LlmError::Deadline { limit: "600 s".into(), last: Some("the model sent no data for 300 s".into()) };
    assert_eq!(
        deadline.user_message(),
        "Model request failed: the response exceeded the 600 s deadline (last attempt: the model sent no data for 300 s). Raise response_timeout_ms in the config if the model needs longer."
    );
    assert_eq!(
        LlmError::OutputCap { tokens: 32_000 }.user_message(),
        "Model request failed: the response exceeded the output cap of 32000 tokens. Set max_output_tokens in the config to allow longer responses."
    );
}
