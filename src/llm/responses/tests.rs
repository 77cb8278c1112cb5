//! Request building and stream decoding of the OpenAI Responses client, over recorded streams.

use serde_json::json;

use super::*;
use crate::llm::ToolSpec;
use crate::llm::transport::replay;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/providers/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn call(id: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "read".into(), arguments: "{\"file_path\":\"a\"}".into() }
}

fn reasoning(origin: &str) -> Reasoning {
    Reasoning {
        field: ReasoningField::Summary,
        text: "plan".into(),
        replay: Some(json!([
            {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "gAAA"},
            {"id": "rs_2", "type": "reasoning", "summary": [], "encrypted_content": null}
        ])),
        origin: Some(origin.into()),
    }
}

#[test]
fn the_body_is_stateless_asks_for_encrypted_reasoning_and_sends_it_back_next_to_its_calls() {
    let request = Request {
        model: "gpt-5".into(),
        system: "sys".into(),
        messages: vec![
            Message::User(vec![
                UserPart::Text("look".into()),
                UserPart::Image { mime: "image/png".into(), data: "AAA".into() },
            ]),
            Message::Assistant {
                text: "Reading.".into(),
                reasoning: Some(reasoning("openai/gpt-5")),
                tool_calls: vec![call("call_1")],
            },
            Message::Tool { call_id: "call_1".into(), content: "data:image/png;base64,QUJD".into() },
            Message::Assistant {
                text: "done".into(),
                reasoning: Some(reasoning("openai/gpt-4.1")),
                tool_calls: vec![],
            },
        ],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read".into(),
            parameters: json!({"type": "object"}),
        }],
        max_output_tokens: Some(1000),
        reasoning_effort: Some("medium".into()),
    };
    assert_eq!(
        body(&request, "openai"),
        json!({
            "model": "gpt-5",
            "instructions": "sys",
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAA"}
                ]},
                {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "gAAA"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
                {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"file_path\":\"a\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": [{"type": "input_image", "image_url": "data:image/png;base64,QUJD"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
            ],
            "tools": [{"type": "function", "name": "read", "description": "Read", "parameters": {"type": "object"}}],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "max_output_tokens": 1000,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "stream": true
        })
    );
}

#[test]
fn a_reasoning_summary_and_a_function_call_whose_done_repeats_the_arguments_are_counted_once() {
    let (response, deltas) =
        replay(StreamState::new("openai/gpt-5".into()), &fixture("responses_reasoning_call.sse"));
    let response = response.unwrap();
    assert_eq!(
        deltas,
        vec![Delta::Reasoning("**Reading the notes**".into()), Delta::Reasoning(" to answer.".into())]
    );
    assert_eq!(
        response,
        Response {
            text: String::new(),
            reasoning: Some(Reasoning {
                field: ReasoningField::Summary,
                text: "**Reading the notes** to answer.".into(),
                replay: Some(
                    json!([{"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "**Reading the notes** to answer."}], "encrypted_content": "gAAAAABoEncryptedReasoning=="}])
                ),
                origin: Some("openai/gpt-5".into()),
            }),
            tool_calls: vec![ToolCall {
                id: "call_abc".into(),
                name: "read".into(),
                arguments: "{\"file_path\":\"NOTES.md\"}".into()
            }],
            finish: FinishReason::ToolCalls,
            usage: Some(Usage {
                input_tokens: 900,
                output_tokens: 40,
                cached_tokens: 512,
                reasoning_tokens: 24
            }),
            refusal: None,
        }
    );
}

#[test]
fn text_deltas_make_the_answer() {
    let (response, deltas) = replay(StreamState::default(), &fixture("responses_answer.sse"));
    assert_eq!(deltas, vec![Delta::Text("The notes say ".into()), Delta::Text("hello.".into())]);
    let response = response.unwrap();
    assert_eq!(
        (response.text.as_str(), response.finish, response.reasoning),
        ("The notes say hello.", FinishReason::Stop, None)
    );
}

#[test]
fn a_failed_response_is_an_overflow_or_a_rate_limit_with_the_wait_from_its_message() {
    let (response, _) = replay(StreamState::default(), &fixture("responses_failed_context.sse"));
    assert!(matches!(response, Err(Attempt::Fatal(LlmError::ContextOverflow { .. }))), "{response:?}");
    let (response, _) = replay(StreamState::default(), &fixture("responses_rate_limit.sse"));
    match response {
        Err(Attempt::Retry { reason, wait, .. }) => {
            assert_eq!(
                (reason.as_str(), wait),
                ("rate limit exceeded", Some(std::time::Duration::from_millis(1200)))
            )
        }
        other => panic!("{other:?}"),
    }
    let quota = failure(&json!({"code": "insufficient_quota", "message": "You exceeded your current quota"}));
    assert!(matches!(quota, Attempt::Fatal(LlmError::Quota { .. })));
    let invalid = failure(&json!({"code": "invalid_prompt", "message": "Invalid prompt"}));
    assert!(
        matches!(invalid, Attempt::Fatal(LlmError::Rejected { status: 400, ref message }) if message == "Invalid prompt (invalid_prompt)")
    );
}

#[test]
fn an_incomplete_response_stops_for_the_output_limit_and_a_cut_stream_is_retried() {
    let mut state = StreamState::default();
    let event = json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}});
    state.data(&event.to_string(), &|_| {}).unwrap();
    assert_eq!(state.finish().finish, FinishReason::Length);
    let cut = "event: response.created\ndata: {\"type\":\"response.created\"}\n\n";
    assert!(matches!(replay(StreamState::default(), cut).0, Err(Attempt::Retry { .. })));
}

#[test]
fn a_whole_response_body_reads_like_the_stream() {
    let body = json!({"id": "resp_1", "status": "completed", "output": [
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "e"},
        {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]},
        {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"file_path\":\"a\"}"}
    ], "usage": {"input_tokens": 3, "output_tokens": 4}});
    let deltas = std::sync::Mutex::new(Vec::new());
    let response =
        StreamState::new("openai/m".into()).whole(body, &|d| deltas.lock().unwrap().push(d)).unwrap();
    assert_eq!(*deltas.lock().unwrap(), vec![Delta::Reasoning("plan".into()), Delta::Text("Hi".into())]);
    assert_eq!(response.tool_calls, vec![call("call_1")]);
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(response.usage.map(|u| u.output_tokens), Some(4));
}

#[test]
fn a_tool_result_with_text_and_an_image_is_an_output_list() {
    let messages = vec![Message::Tool {
        call_id: "call_1".into(),
        content: "a dot\n\ndata:image/png;base64,QUJD".into(),
    }];
    assert_eq!(
        input_json(&messages, "openai/gpt-5"),
        vec![json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "a dot"},
            {"type": "input_image", "image_url": "data:image/png;base64,QUJD"}
        ]})]
    );
}

#[test]
fn events_read_in_place_end_and_relay_exactly_as_the_general_way_reads_them() {
    let plain = r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"tok "}"#;
    let hand = crate::llm::transport::owned(&[
        r#"{"type":"response.created","response":{"id":"r","status":"in_progress"}}"#,
        r#"{"type":"response.reasoning_summary_part.added","item_id":"rs","output_index":0,"summary_index":0}"#,
        r#"{"type":"response.reasoning_summary_text.delta","delta":"plan"}"#,
        r#"{"type":"response.reasoning_summary_part.added","item_id":"rs","output_index":0,"summary_index":1}"#,
        r#"{"type":"response.reasoning_text.delta","delta":"more"}"#,
        plain,
        r#"{"type":"response.output_text.delta","delta":"a\"b\u00e9"}"#,
        r#"{"type":"response.output_text.delta","delta":null}"#,
        r#"{"type":"response.output_text.delta","delta":{"x":1}}"#,
        r#"{"type":"response.output_text.delta","type":"response.refusal.delta","delta":"no"}"#,
        r#"{"delta":"typeless"}"#,
        r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":10,"output_tokens":3}}}"#,
    ]);
    let mut streams = vec![hand];
    for name in [
        "responses_answer.sse",
        "responses_reasoning_call.sse",
        "responses_failed_context.sse",
        "responses_rate_limit.sse",
    ] {
        streams.push(crate::llm::transport::event_data(&fixture(name)));
    }
    streams.push(crate::llm::transport::owned(&[plain, "{"]));
    // The general way alone.
    let general: crate::llm::transport::Way<StreamState> =
        |state, data, on_delta| state.general(data, on_delta);
    crate::llm::transport::assert_ways_agree(
        || StreamState::new("p/m".into()),
        [StreamState::data, general],
        &streams,
    );
    let took = |data: &str| StreamState::new("p/m".into()).hot(data, &|_| {});
    assert_eq!([plain, r#"{"type":"response.output_text.delta","delta":7}"#].map(took), [true, false]);
}
