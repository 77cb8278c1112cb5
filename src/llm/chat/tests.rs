//! Request building and stream state of the Chat Completions client.

use serde_json::json;

use super::*;

fn target() -> Target {
    Target::new("local", "http://127.0.0.1:11434/v1", "m")
}

fn request(messages: Vec<Message>) -> Request {
    Request {
        model: "m".into(),
        system: "sys".into(),
        messages,
        tools: vec![],
        max_output_tokens: Some(512),
        reasoning_effort: Some("high".into()),
    }
}

fn call(id: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "read".into(), arguments: "{}".into() }
}

#[test]
fn the_body_omits_tools_when_there_are_none_and_carries_max_tokens_when_set() {
    let request = request(vec![Message::User(vec![UserPart::Text("hi".into())])]);
    assert_eq!(
        body(&request, &target()),
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
fn openai_and_its_reasoning_models_get_max_completion_tokens() {
    let request = request(vec![]);
    let at_openai = body(&request, &Target::new("openai", "https://api.openai.com/v1", "gpt-4.1"));
    assert_eq!((at_openai.get("max_tokens"), at_openai["max_completion_tokens"].clone()), (None, json!(512)));
    let o3 = body(&request, &Target::new("proxy", "https://proxy.example/v1", "o3-mini"));
    assert_eq!(o3["max_completion_tokens"], json!(512));
    let routed = body(&request, &Target::new("openrouter", "https://openrouter.ai/api/v1", "openai/o3"));
    assert_eq!(routed["max_tokens"], json!(512), "routers take max_tokens");
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
            reasoning: Some(Reasoning::text(ReasoningField::Reasoning, "hmm")),
            tool_calls: vec![call("a"), call("b")],
        },
        Message::Tool { call_id: "a".into(), content: "data:image/png;base64,QUJD".into() },
        Message::Tool { call_id: "b".into(), content: "text".into() },
        Message::Assistant { text: "done".into(), reasoning: None, tool_calls: vec![] },
    ];
    assert_eq!(
        messages_json("sys", &messages, &target()),
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
fn reasoning_goes_back_under_its_key_only_to_the_model_that_wrote_it() {
    let deepseek = Reasoning {
        field: ReasoningField::ReasoningContent,
        text: "think".into(),
        replay: None,
        origin: Some("deepseek/deepseek-reasoner".into()),
    };
    let routed = Reasoning {
        field: ReasoningField::Reasoning,
        text: "plan".into(),
        replay: Some(json!([{"type": "reasoning.encrypted", "data": "xyz", "index": 0}])),
        origin: Some("openrouter/anthropic/claude-sonnet-4.5".into()),
    };
    let turn = |reasoning: Reasoning| {
        vec![Message::Assistant {
            text: String::new(),
            reasoning: Some(reasoning),
            tool_calls: vec![call("c")],
        }]
    };
    let same = Target::new("deepseek", "https://api.deepseek.com", "deepseek-reasoner");
    assert_eq!(messages_json("s", &turn(deepseek.clone()), &same)[1]["reasoning_content"], json!("think"));
    let other = Target::new("deepseek", "https://api.deepseek.com", "deepseek-chat");
    assert_eq!(messages_json("s", &turn(deepseek), &other)[1].get("reasoning_content"), None);
    let openrouter = Target::new("openrouter", "https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4.5");
    let sent = &messages_json("s", &turn(routed), &openrouter)[1];
    assert_eq!(sent["reasoning"], json!("plan"));
    assert_eq!(
        sent["reasoning_details"],
        json!([{"type": "reasoning.encrypted", "data": "xyz", "index": 0}])
    );
}

#[test]
fn tool_ids_are_rewritten_for_mistral_the_same_way_in_calls_and_results() {
    let messages = vec![
        Message::Assistant { text: String::new(), reasoning: None, tool_calls: vec![call("toolu_01ABC")] },
        Message::Tool { call_id: "toolu_01ABC".into(), content: "ok".into() },
    ];
    let mistral = Target::new("mistral", "https://api.mistral.ai/v1", "mistral-medium-latest");
    let sent = messages_json("s", &messages, &mistral);
    let id = sent[1]["tool_calls"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 9);
    assert!(id.chars().all(|c| c.is_ascii_alphanumeric()), "{id}");
    assert_eq!(sent[2]["tool_call_id"], json!(id));
    let routed = Target::new("openrouter", "https://openrouter.ai/api/v1", "mistralai/devstral-medium");
    assert_eq!(messages_json("s", &messages, &routed)[1]["tool_calls"][0]["id"], json!(id));
    assert_eq!(messages_json("s", &messages, &target())[1]["tool_calls"][0]["id"], json!("toolu_01ABC"));
}

#[test]
fn the_stream_state_assembles_text_usage_refusals_and_finish_reasons() {
    let mut state = StreamState::new("local/m".into());
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
        Some(Reasoning {
            field: ReasoningField::Reasoning,
            text: "think".into(),
            replay: None,
            origin: Some("local/m".into())
        })
    );

    let mut refused = StreamState::default();
    assert!(refused.data(&json!({"choices": [{"index": 0, "delta": {"refusal": "I can't"}, "finish_reason": "content_filter"}]}).to_string(), &on_delta).is_ok());
    let response = refused.finish();
    assert_eq!(
        (response.refusal.as_deref(), response.finish),
        (Some("I can't"), FinishReason::ContentFilter)
    );

    let mut unknown = StreamState::default();
    let chunk = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "eos_token"}]});
    assert!(unknown.data(&chunk.to_string(), &on_delta).is_ok());
    assert_eq!(unknown.finish().finish, FinishReason::Other("eos_token".into()));
}

#[test]
fn reasoning_details_are_shown_once_and_merged_by_index_for_sending_back() {
    let mut state = StreamState::new("openrouter/x".into());
    let deltas = std::sync::Mutex::new(Vec::new());
    let on_delta = |d: Delta| deltas.lock().unwrap().push(d);
    for delta in [
        json!({"reasoning": "Let", "reasoning_details": [{"type": "reasoning.text", "text": "Let", "index": 0, "format": "anthropic-claude-v1"}]}),
        json!({"reasoning": " me", "reasoning_details": [{"type": "reasoning.text", "text": " me", "index": 0}]}),
        json!({"reasoning_details": [{"type": "reasoning.text", "signature": "sig", "index": 0}]}),
        json!({"reasoning_details": [{"type": "reasoning.encrypted", "data": "enc", "index": 1}]}),
        json!({"reasoning_details": [{"type": "reasoning.summary", "summary": " think", "index": 2}]}),
    ] {
        let chunk = json!({"choices": [{"index": 0, "delta": delta}]});
        state.data(&chunk.to_string(), &on_delta).unwrap();
    }
    let shown: Vec<Delta> = deltas.lock().unwrap().clone();
    assert_eq!(
        shown,
        vec![
            Delta::Reasoning("Let".into()),
            Delta::Reasoning(" me".into()),
            Delta::Reasoning(" think".into())
        ]
    );
    let reasoning = state.finish().reasoning.unwrap();
    assert_eq!(reasoning.text, "Let me think");
    assert_eq!(
        reasoning.replay,
        Some(json!([
            {"type": "reasoning.text", "text": "Let me", "index": 0, "format": "anthropic-claude-v1", "signature": "sig"},
            {"type": "reasoning.encrypted", "data": "enc", "index": 1},
            {"type": "reasoning.summary", "summary": " think", "index": 2}
        ]))
    );
}

#[test]
fn a_whole_json_body_from_a_server_ignoring_stream_is_read_as_the_response() {
    let deltas = std::sync::Mutex::new(Vec::new());
    let on_delta = |d: Delta| deltas.lock().unwrap().push(d);
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Reading.", "reasoning_content": "need the file",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"file_path\":\"a\"}"}}]
        }}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3}
    });
    let response = StreamState::new("local/m".into()).whole(body, &on_delta).unwrap();
    assert_eq!(
        *deltas.lock().unwrap(),
        vec![Delta::Reasoning("need the file".into()), Delta::Text("Reading.".into())]
    );
    assert_eq!(response.text, "Reading.");
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "call_1".into(),
            name: "read".into(),
            arguments: "{\"file_path\":\"a\"}".into()
        }]
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(response.usage.map(|u| (u.input_tokens, u.output_tokens)), Some((7, 3)));
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

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/providers/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn read(id: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "read".into(), arguments: "{\"file_path\":\"NOTES.md\"}".into() }
}

/// Replay a recorded stream: (reasoning shown, text shown, calls, finish, reasoning field and text).
fn replayed(name: &str) -> (String, String, Vec<ToolCall>, FinishReason, Option<(ReasoningField, String)>) {
    let (response, deltas) = crate::llm::transport::replay(StreamState::new("p/m".into()), &fixture(name));
    let response = response.unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let (mut thought, mut said) = (String::new(), String::new());
    for delta in deltas {
        match delta {
            Delta::Reasoning(t) => thought.push_str(&t),
            Delta::Text(t) => said.push_str(&t),
            Delta::Notice(_) => {}
        }
    }
    let reasoning = response.reasoning.map(|r| (r.field, r.text));
    (thought, said, response.tool_calls, response.finish, reasoning)
}

#[test]
fn parallel_calls_interleaved_by_index_are_assembled_in_order() {
    let (_, _, calls, finish, _) = replayed("chat_openai_parallel.sse");
    let glob =
        ToolCall { id: "call_b".into(), name: "glob".into(), arguments: "{\"pattern\":\"*.md\"}".into() };
    assert_eq!((calls, finish), (vec![read("call_a"), glob], FinishReason::ToolCalls));
}

#[test]
fn ollama_whole_calls_reusing_index_zero_are_told_apart_by_their_ids() {
    let (thought, _, calls, finish, reasoning) = replayed("chat_ollama_index_reuse.sse");
    let glob = ToolCall {
        id: "call_x2kq9z1m".into(),
        name: "glob".into(),
        arguments: "{\"pattern\":\"*.md\"}".into(),
    };
    assert_eq!((calls, finish), (vec![read("call_wteop8bt"), glob], FinishReason::ToolCalls));
    assert_eq!(
        (thought.as_str(), reasoning),
        ("Two files to read.", Some((ReasoningField::Reasoning, "Two files to read.".into())))
    );
}

#[test]
fn reasoning_arrives_in_each_servers_own_field() {
    for (fixture, field, text) in [
        ("chat_vllm_reasoning.sse", ReasoningField::Reasoning, "The user wants the notes."),
        ("chat_deepseek_reasoning_content.sse", ReasoningField::ReasoningContent, "I need NOTES.md."),
        ("chat_lmstudio_reasoning_content.sse", ReasoningField::ReasoningContent, "Reading notes."),
        ("chat_llamacpp_reasoning_content.sse", ReasoningField::ReasoningContent, "Look at NOTES.md."),
        ("chat_openrouter_reasoning_details.sse", ReasoningField::Reasoning, "Check the notes first."),
    ] {
        let (thought, _, calls, finish, reasoning) = replayed(fixture);
        assert_eq!(thought, text, "{fixture}");
        assert_eq!(reasoning, Some((field, text.to_string())), "{fixture}");
        assert_eq!(calls.len(), 1, "{fixture}");
        assert_eq!((calls[0].name.as_str(), finish), ("read", FinishReason::ToolCalls), "{fixture}");
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(args, json!({"file_path": "NOTES.md"}), "{fixture}");
    }
}

#[test]
fn lm_studios_fresh_id_on_every_fragment_does_not_split_the_call() {
    let (_, _, calls, _, _) = replayed("chat_lmstudio_reasoning_content.sse");
    assert_eq!(calls, vec![ToolCall { id: "461482735".into(), ..read("") }]);
}

#[test]
fn an_error_object_after_http_200_is_classified_like_an_http_error() {
    let (response, _) =
        crate::llm::transport::replay(StreamState::default(), &fixture("chat_error_after_200.sse"));
    match response {
        Err(Attempt::Retry { message, .. }) => assert_eq!(message, "HTTP 502: Provider returned error"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unknown_finish_reason_is_kept_and_arguments_cut_by_the_limit_finish_with_length() {
    let (_, said, calls, finish, _) = replayed("chat_unknown_finish.sse");
    assert_eq!(
        (said.as_str(), calls, finish),
        ("Partial answer", vec![], FinishReason::Other("abort".into()))
    );
    let (_, _, calls, finish, _) = replayed("chat_cut_arguments.sse");
    assert_eq!(finish, FinishReason::Length);
    assert_eq!(calls[0].arguments, "{\"file_path\":\"big.txt\",\"content\":\"line 1\\nline 2");
}

#[test]
fn a_tool_result_with_text_and_an_image_keeps_the_text_and_attaches_the_image_after_it() {
    let messages =
        vec![Message::Tool { call_id: "a".into(), content: "a dot\n\ndata:image/png;base64,QUJD".into() }];
    assert_eq!(
        messages_json("sys", &messages, &target())[1..],
        [
            json!({"role": "tool", "tool_call_id": "a", "content": "a dot\n\nThe image is attached in the next message."}),
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}]}),
        ]
    );
}

/// The general way of `data`: `[DONE]`, then every chunk as a JSON value.
fn general_way(
    state: &mut StreamState,
    data: &str,
    on_delta: &(dyn Fn(Delta) + Send + Sync),
) -> Result<(), Attempt> {
    if data.trim() == "[DONE]" {
        state.done = true;
        return Ok(());
    }
    state.general(data, on_delta)
}

#[test]
fn chunks_read_in_place_end_and_relay_exactly_as_the_general_way_reads_them() {
    let plain =
        r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "}}]}"#;
    let hand = crate::llm::transport::owned(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        plain,
        r#"{"choices":[{"delta":{"content":"a\"b\n\u00e9 \ud83d\ude00"}}]}"#,
        r#"{"choices":[{"delta":{"content":null,"reasoning_content":"think"}}]}"#,
        r#"{"choices":[{"delta":{"reasoning":"r"}}]}"#,
        r#"{"choices":[{"delta":{"content":5}}]}"#,
        r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
        r#"{"choices":[{"delta":"text"}]}"#,
        r#"{"choices":null}"#,
        r#"{"choices":[{"delta":{"refusal":"no"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"read","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"content":"x"}},{"delta":{"tool_calls":7}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
        "[DONE]",
    ]);
    let mut streams = vec![hand];
    for name in [
        "chat_answer.sse",
        "chat_openai_parallel.sse",
        "chat_deepseek_reasoning_content.sse",
        "chat_vllm_reasoning.sse",
        "chat_openrouter_reasoning_details.sse",
        "chat_error_after_200.sse",
        "chat_unknown_finish.sse",
        "chat_ollama_index_reuse.sse",
        "chat_cut_arguments.sse",
    ] {
        streams.push(crate::llm::transport::event_data(&fixture(name)));
    }
    for errors in
        [r#"{"choices":[{"delta":{"content":"x"}}],"error":null}"#, r#"{"error":{"code":429}}"#, "{"]
    {
        streams.push(crate::llm::transport::owned(&[plain, errors]));
    }
    crate::llm::transport::assert_ways_agree(
        || StreamState::new("p/m".into()),
        [StreamState::data, general_way],
        &streams,
    );
    let took = |data: &str| StreamState::new("p/m".into()).hot(data, &|_| {});
    assert_eq!(
        [plain, r#"{"choices":[{"delta":{"content":5}}]}"#, r#"{"choices":[],"error":null}"#].map(took),
        [true, false, false]
    );
}
