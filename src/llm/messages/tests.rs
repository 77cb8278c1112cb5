//! Request building and stream decoding of the Anthropic Messages client, over recorded streams.

use serde_json::json;

use super::*;
use crate::llm::ToolSpec;
use crate::llm::transport::replay;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/providers/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn call(id: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "read".into(), arguments: arguments.into() }
}

fn thinking(origin: &str) -> Reasoning {
    Reasoning {
        field: ReasoningField::Thinking,
        text: "hmm".into(),
        replay: Some(
            json!([{"type": "thinking", "thinking": "hmm", "signature": "sig"}, {"type": "redacted_thinking", "data": "abc"}]),
        ),
        origin: Some(origin.into()),
    }
}

fn request(messages: Vec<Message>) -> Request {
    Request {
        model: "claude-sonnet-4-5".into(),
        system: "You are tinycode.".into(),
        messages,
        tools: vec![
            ToolSpec {
                name: "read".into(),
                description: "Read".into(),
                parameters: json!({"type": "object"}),
            },
            ToolSpec {
                name: "glob".into(),
                description: "Glob".into(),
                parameters: json!({"type": "object"}),
            },
        ],
        max_output_tokens: None,
        reasoning_effort: None,
    }
}

#[test]
fn the_body_caches_tools_system_and_the_last_message_and_groups_tool_results_first_in_one_user_turn() {
    let history = vec![
        Message::User(vec![UserPart::Text("read it".into())]),
        Message::Assistant {
            text: "Reading.".into(),
            reasoning: Some(thinking("anthropic/claude-sonnet-4-5")),
            tool_calls: vec![call("toolu_1", "{\"file_path\":\"a\"}"), call("call.2:x", "not json")],
        },
        Message::Tool { call_id: "toolu_1".into(), content: "data:image/png;base64,QUJD".into() },
        Message::Tool { call_id: "call.2:x".into(), content: "text".into() },
        Message::User(vec![UserPart::Text("and?".into())]),
    ];
    let body = body(&request(history), "anthropic");
    assert_eq!(
        body,
        json!({
            "model": "claude-sonnet-4-5",
            "system": [{"type": "text", "text": "You are tinycode.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "read it"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "redacted_thinking", "data": "abc"},
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"file_path": "a"}},
                    {"type": "tool_use", "id": "call_2_x", "name": "read", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}]},
                    {"type": "tool_result", "tool_use_id": "call_2_x", "content": "text"},
                    {"type": "text", "text": "and?", "cache_control": {"type": "ephemeral"}}
                ]}
            ],
            "tools": [
                {"name": "read", "description": "Read", "input_schema": {"type": "object"}},
                {"name": "glob", "description": "Glob", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}
            ],
            "tool_choice": {"type": "auto"},
            "max_tokens": 32000,
            "stream": true
        })
    );
}

#[test]
fn thinking_goes_back_only_to_the_model_that_wrote_it() {
    let history = |origin: &str| {
        vec![Message::Assistant {
            text: String::new(),
            reasoning: Some(thinking(origin)),
            tool_calls: vec![call("t", "{}")],
        }]
    };
    let other = messages_json(&history("anthropic/claude-opus-4-5"), "anthropic/claude-sonnet-4-5");
    assert_eq!(
        other,
        vec![
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "read", "input": {}}]})
        ]
    );
}

#[test]
fn reasoning_levels_become_a_budget_or_adaptive_thinking_by_the_models_control() {
    let mut budgeted = request(vec![]);
    budgeted.reasoning_effort = Some("high".into());
    let body = body(&budgeted, "anthropic");
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 24576}));
    assert_eq!(body["max_tokens"], json!(32000));
    let mut adaptive = request(vec![]);
    adaptive.model = "claude-fable-5".into();
    adaptive.reasoning_effort = Some("low".into());
    adaptive.max_output_tokens = Some(4000);
    let body = super::body(&adaptive, "anthropic");
    assert_eq!(
        (body["thinking"].clone(), body["output_config"].clone()),
        (json!({"type": "adaptive"}), json!({"effort": "low"}))
    );
    assert_eq!(body["max_tokens"], json!(4000));
    let unknown = Request { model: "mystery".into(), ..request(vec![]) };
    assert_eq!(super::body(&unknown, "gateway")["max_tokens"], json!(8192));
}

#[test]
fn thinking_with_its_signature_text_and_a_tool_use_stream_into_one_response() {
    let (response, deltas) = replay(
        StreamState::new("anthropic/claude-sonnet-4-5".into()),
        &fixture("anthropic_thinking_tool.sse"),
    );
    let response = response.unwrap();
    assert_eq!(
        deltas,
        vec![
            Delta::Reasoning("I should read ".into()),
            Delta::Reasoning("the file first.".into()),
            Delta::Text("Reading it.".into())
        ]
    );
    assert_eq!(
        response,
        Response {
            text: "Reading it.".into(),
            reasoning: Some(Reasoning {
                field: ReasoningField::Thinking,
                text: "I should read the file first.".into(),
                replay: Some(
                    json!([{"type": "thinking", "thinking": "I should read the file first.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}])
                ),
                origin: Some("anthropic/claude-sonnet-4-5".into()),
            }),
            tool_calls: vec![call("toolu_01K", "{\"file_path\": \"NOTES.md\"}")],
            finish: FinishReason::ToolCalls,
            usage: Some(Usage {
                input_tokens: 849 + 1200 + 3000,
                output_tokens: 47,
                cached_tokens: 3000,
                reasoning_tokens: 0
            }),
            refusal: None,
        }
    );
}

#[test]
fn redacted_thinking_is_kept_verbatim_and_usage_from_message_delta_wins() {
    let (response, deltas) =
        replay(StreamState::new("anthropic/m".into()), &fixture("anthropic_redacted_answer.sse"));
    let response = response.unwrap();
    assert_eq!(deltas, vec![Delta::Text("The notes say ".into()), Delta::Text("hello.".into())]);
    assert_eq!(response.text, "The notes say hello.");
    assert_eq!(response.finish, FinishReason::Stop);
    let reasoning = response.reasoning.unwrap();
    assert_eq!(reasoning.text, "");
    assert_eq!(
        reasoning.replay,
        Some(
            json!([{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}])
        )
    );
    assert_eq!(
        response.usage.map(|u| (u.input_tokens, u.cached_tokens, u.output_tokens)),
        Some((5700, 4200, 12))
    );
}

#[test]
fn an_overloaded_error_mid_stream_is_a_retryable_attempt() {
    let (response, deltas) = replay(StreamState::default(), &fixture("anthropic_overloaded.sse"));
    assert_eq!(deltas, vec![]);
    match response {
        Err(Attempt::Retry { message, reason, .. }) => {
            assert_eq!((message.as_str(), reason.as_str()), ("HTTP 529: Overloaded", "HTTP 529"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn stop_reasons_map_to_finish_reasons_and_unknown_ones_are_kept() {
    assert_eq!(stop_reason("max_tokens"), FinishReason::Length);
    assert_eq!(stop_reason("model_context_window_exceeded"), FinishReason::Length);
    assert_eq!(stop_reason("refusal"), FinishReason::ContentFilter);
    assert_eq!(stop_reason("pause_turn"), FinishReason::Other("pause_turn".into()));
}

#[test]
fn a_whole_message_body_reads_like_the_stream() {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "s"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_9", "name": "read", "input": {"file_path": "a"}}
        ],
        "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 6}
    });
    let deltas = std::sync::Mutex::new(Vec::new());
    let response =
        StreamState::new("anthropic/m".into()).whole(body, &|d| deltas.lock().unwrap().push(d)).unwrap();
    assert_eq!(
        *deltas.lock().unwrap(),
        vec![Delta::Reasoning("plan".into()), Delta::Text("Reading.".into())]
    );
    assert_eq!(response.tool_calls, vec![call("toolu_9", "{\"file_path\":\"a\"}")]);
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.reasoning.unwrap().replay,
        Some(json!([{"type": "thinking", "thinking": "plan", "signature": "s"}]))
    );
}

#[test]
fn the_path_adds_v1_unless_the_base_url_has_it() {
    assert_eq!(path("https://api.anthropic.com", "messages"), "/v1/messages");
    assert_eq!(path("http://127.0.0.1:1234/v1/", "messages"), "/messages");
}

#[test]
fn a_tool_result_with_text_and_an_image_carries_both_blocks() {
    assert_eq!(
        tool_result("toolu_1", "a dot\n\ndata:image/png;base64,QUJD"),
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": "a dot"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}
        ]})
    );
}

#[test]
fn events_read_in_place_end_and_relay_exactly_as_the_general_way_reads_them() {
    let plain = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok "}}"#;
    let hand = crate::llm::transport::owned(&[
        r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        plain,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"b\u00e9"}}"#,
        r#"{"type":"content_block_delta","index":5,"delta":{"type":"text_delta","text":"nowhere"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"not a thinking block"}}"#,
        r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"negative"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}"#,
        r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"no index"}}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"sig"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let mut streams = vec![hand];
    for name in [
        "anthropic_answer.sse",
        "anthropic_thinking_tool.sse",
        "anthropic_redacted_answer.sse",
        "anthropic_overloaded.sse",
    ] {
        streams.push(crate::llm::transport::event_data(&fixture(name)));
    }
    // The general way alone.
    let general: crate::llm::transport::Way<StreamState> =
        |state, data, on_delta| state.general(data, on_delta);
    crate::llm::transport::assert_ways_agree(
        || StreamState::new("p/m".into()),
        [StreamState::data, general],
        &streams,
    );
    let started = r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
    let took = |data: &str| {
        let mut state = StreamState::new("p/m".into());
        state.general(started, &|_| {}).unwrap();
        state.hot(data, &|_| {})
    };
    assert_eq!(
        [plain, r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta"}}"#].map(took),
        [true, false]
    );
}
