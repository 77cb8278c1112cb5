//! Providers through ACP: the same session against every dialect and server (recorded streams replayed by the
//! fake server), reasoning shown as thoughts and sent back, sign-in (`authMethods`, `authenticate`,
//! `auth_required`), local servers found by probing loopback, and each misconfiguration answered with a message
//! that names the cause and the fix.

use agent_client_protocol::ErrorCode;
use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};
use tinycode::llm::detect::{Server, Target};

use super::turn::stop;
use crate::support::client::{Harness, Setup, zed};
use crate::support::fake_model::{FakeModel, Persona, answer, fixture, page, status, whole};

/// A provider table for the fake server, made the default, with `model` (a window large enough that a local
/// server's small default never compacts the test's short conversation).
fn provider(name: &str, kind: &str, model: &str) -> Setup {
    Setup::new(vec![])
        .unconfigured()
        .env("TINYCODE_MODEL", Some(model))
        .user_config(&format!(
            "provider = \"{name}\"\n[providers.{name}]\nkind = \"{kind}\"\nbase_url = \"{{base_url}}\"\napi_key = \"k-{name}\"\n\
             [catalogue.\"{name}/{model}\"]\ncontext = 131072\n"
        ))
}

/// The texts of `session`'s updates of one kind, in order.
fn texts(h: &Harness, session: &acp::SessionId, kind: &str) -> Vec<String> {
    h.client
        .updates(session)
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The statuses the session's tool calls ended with.
fn finished_calls(h: &Harness, session: &acp::SessionId) -> Vec<Value> {
    h.client
        .updates(session)
        .iter()
        .filter(|u| {
            u["sessionUpdate"] == "tool_call_update"
                && (u["status"] == "completed" || u["status"] == "failed")
        })
        .map(|u| json!([u["toolCallId"], u["status"]]))
        .collect()
}

const NOTES: &str = "1\thello\n\n(End of file: 1 lines)";

/// One dialect's turn: the model reads NOTES.md (thinking first), then answers from it.
struct Case {
    name: &'static str,
    kind: &'static str,
    model: &'static str,
    first: &'static str,
    second: &'static str,
    thought: &'static str,
    /// The whole answer shown (text from both responses).
    said: &'static str,
    /// What the follow-up request must carry (the tool result, and the reasoning sent back).
    check: fn(&Value),
}

fn chat_result(body: &Value, call: &str) -> Value {
    body["messages"].as_array().unwrap().iter().find(|m| m["tool_call_id"] == call).cloned().unwrap()
}

fn assistant(body: &Value) -> Value {
    body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").cloned().unwrap()
}

const CASES: &[Case] = &[
    Case {
        name: "openai",
        kind: "openai",
        model: "gpt-5",
        first: "responses_reasoning_call.sse",
        second: "responses_answer.sse",
        thought: "**Reading the notes** to answer.",
        said: "The notes say hello.",
        check: |body| {
            let input = body["input"].as_array().unwrap();
            assert_eq!(body["store"], json!(false));
            assert_eq!(
                input[1],
                json!({"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "**Reading the notes** to answer."}], "encrypted_content": "gAAAAABoEncryptedReasoning=="})
            );
            assert_eq!(
                input[2],
                json!({"type": "function_call", "call_id": "call_abc", "name": "read", "arguments": "{\"file_path\":\"NOTES.md\"}"})
            );
            assert_eq!(
                input[3],
                json!({"type": "function_call_output", "call_id": "call_abc", "output": NOTES})
            );
        },
    },
    Case {
        name: "anthropic",
        kind: "anthropic",
        model: "claude-sonnet-4-5",
        first: "anthropic_thinking_tool.sse",
        second: "anthropic_answer.sse",
        thought: "I should read the file first.",
        said: "Reading it.The notes say hello.",
        check: |body| {
            let messages = body["messages"].as_array().unwrap();
            assert_eq!(
                messages[1]["content"][0],
                json!({"type": "thinking", "thinking": "I should read the file first.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"})
            );
            assert_eq!(
                messages[2]["content"][0],
                json!({"type": "tool_result", "tool_use_id": "toolu_01K", "content": NOTES, "cache_control": {"type": "ephemeral"}})
            );
        },
    },
    Case {
        name: "openrouter",
        kind: "openai-compatible",
        model: "anthropic/claude-sonnet-4.5",
        first: "chat_openrouter_reasoning_details.sse",
        second: "chat_answer.sse",
        thought: "Check the notes first.",
        said: "The notes say hello.",
        check: |body| {
            assert_eq!(
                assistant(body)["reasoning_details"],
                json!([{"type": "reasoning.text", "text": "Check the notes first.", "signature": "ErUBCkYIBxgCIkBsig", "format": "anthropic-claude-v1", "index": 0}])
            );
            assert_eq!(chat_result(body, "toolu_vrtx_01")["content"], json!(NOTES));
        },
    },
    Case {
        name: "deepseek",
        kind: "openai-compatible",
        model: "deepseek-reasoner",
        first: "chat_deepseek_reasoning_content.sse",
        second: "chat_answer.sse",
        thought: "I need NOTES.md.",
        said: "The notes say hello.",
        check: |body| {
            assert_eq!(
                assistant(body)["reasoning_content"],
                json!("I need NOTES.md."),
                "DeepSeek refuses tool use without it"
            );
            assert_eq!(chat_result(body, "call_00_ds")["content"], json!(NOTES));
        },
    },
    Case {
        name: "ollama",
        kind: "openai-compatible",
        model: "qwen3:8b",
        first: "chat_ollama_index_reuse.sse",
        second: "chat_answer.sse",
        thought: "Two files to read.",
        said: "The notes say hello.",
        check: |body| {
            assert_eq!(chat_result(body, "call_wteop8bt")["content"], json!(NOTES));
            let found = chat_result(body, "call_x2kq9z1m")["content"].as_str().unwrap().to_string();
            assert!(found.ends_with("/work/NOTES.md") && !found.contains('\n'), "{found}");
        },
    },
    Case {
        name: "vllm",
        kind: "openai-compatible",
        model: "Qwen/Qwen3-8B",
        first: "chat_vllm_reasoning.sse",
        second: "chat_answer.sse",
        thought: "The user wants the notes.",
        said: "The notes say hello.",
        check: |body| {
            assert_eq!(assistant(body)["reasoning"], json!("The user wants the notes."));
            assert_eq!(chat_result(body, "chatcmpl-tool-1")["content"], json!(NOTES));
        },
    },
    Case {
        name: "lmstudio",
        kind: "openai-compatible",
        model: "qwen/qwen3-8b",
        first: "chat_lmstudio_reasoning_content.sse",
        second: "chat_answer.sse",
        thought: "Reading notes.",
        said: "The notes say hello.",
        check: |body| assert_eq!(chat_result(body, "461482735")["content"], json!(NOTES)),
    },
    Case {
        name: "llamacpp",
        kind: "openai-compatible",
        model: "gpt-oss-20b",
        first: "chat_llamacpp_reasoning_content.sse",
        second: "chat_answer.sse",
        thought: "Look at NOTES.md.",
        said: "The notes say hello.",
        check: |body| assert_eq!(chat_result(body, "Qx7nLmP2aVbC")["content"], json!(NOTES)),
    },
];

#[tokio::test]
async fn the_same_session_works_unchanged_against_every_dialect_and_server() {
    for case in CASES {
        let h = provider(case.name, case.kind, case.model).start().await;
        h.write("NOTES.md", "hello\n");
        h.model.script(vec![fixture(case.first), fixture(case.second)]);
        let session = h.session().await;
        let response = h.client.prompt(&session, "what do the notes say?").await.unwrap();
        assert_eq!(stop(&response), json!("end_turn"), "{}", case.name);
        assert_eq!(
            texts(&h, &session, "agent_thought_chunk").concat(),
            case.thought,
            "{}: reasoning shows as thoughts",
            case.name
        );
        assert_eq!(texts(&h, &session, "agent_message_chunk").concat(), case.said, "{}", case.name);
        assert!(
            finished_calls(&h, &session).iter().all(|c| c[1] == "completed"),
            "{}: {:?}",
            case.name,
            finished_calls(&h, &session)
        );
        let requests = h.model.requests();
        assert_eq!(requests.len(), 2, "{}", case.name);
        let expected_path = match case.kind {
            "anthropic" => "/v1/messages",
            "openai" => "/v1/responses",
            _ => "/v1/chat/completions",
        };
        assert_eq!(requests[0].path, expected_path, "{}", case.name);
        assert_eq!(requests[0].body["model"], json!(case.model), "{}", case.name);
        match case.kind {
            "anthropic" => {
                assert_eq!(requests[0].header("x-api-key"), Some("k-anthropic"));
                assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
            }
            _ => assert_eq!(
                requests[0].header("authorization"),
                Some(format!("Bearer k-{}", case.name).as_str()),
                "{}",
                case.name
            ),
        }
        (case.check)(&requests[1].body);
        h.model.assert_done();
    }
}

#[tokio::test]
async fn a_missing_key_answers_auth_required_naming_the_variables_before_anything_is_sent() {
    let h = Setup::new(vec![]).unconfigured().env("TINYCODE_PROVIDER", Some("anthropic")).start().await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::AUTH_REQUIRED);
    assert_eq!(
        error.message,
        "Model request failed: no API key is set for anthropic: set ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or TINYCODE_API_KEY."
    );
}

#[tokio::test]
async fn with_nothing_configured_or_running_the_editor_is_offered_sign_in_and_told_what_to_set() {
    let closed = closed_port().await;
    let h = Setup::new(vec![])
        .unconfigured()
        .capabilities(zed())
        .probes(vec![Target { server: Server::Ollama, port: closed }])
        .start()
        .await;
    let init = h.client.initialize(zed()).await;
    let methods = serde_json::to_value(&init.auth_methods).unwrap();
    let ids: Vec<&str> = methods.as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "tinycode-setup",
            "anthropic-api-key",
            "openai-api-key",
            "openrouter-api-key",
            "deepseek-api-key",
            "gemini-api-key"
        ]
    );
    assert_eq!(methods[0]["type"], json!("terminal"));
    assert_eq!(methods[0]["args"], json!(["--setup"]));
    assert_eq!(methods[0]["_meta"]["terminal-auth"]["args"], json!(["setup"]));
    assert_eq!(methods[0]["_meta"]["terminal-auth"]["label"], json!("tinycode setup"));
    assert_eq!(
        methods[1],
        json!({"id": "anthropic-api-key", "name": "Anthropic API key", "description": "Set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN in the environment tinycode starts with, or run `tinycode setup`"})
    );
    assert!(!init.agent_capabilities.prompt_capabilities.image, "no model, no images");
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::AUTH_REQUIRED);
    assert_eq!(
        error.message,
        "Model request failed: no API key is set: set OPENAI_API_KEY, ANTHROPIC_API_KEY or TINYCODE_API_KEY, or point \
         TINYCODE_BASE_URL at a local server such as Ollama (`tinycode setup` walks you through it)."
    );
}

#[tokio::test]
async fn authenticate_saves_a_key_given_by_the_editor_and_the_open_session_uses_it_next() {
    let h = Setup::new(vec![answer(&["signed in"])])
        .unconfigured()
        .env("TINYCODE_MODEL", Some("fake-model"))
        .user_config("[providers.local]\nkind = \"openai-compatible\"\nbase_url = \"{base_url}\"\nmodels = [\"fake-model\"]")
        .start()
        .await;
    let session = h.session().await;
    let mut meta = acp::Meta::new();
    meta.insert("api-key".into(), json!("sk-new"));
    h.client.call(acp::AuthenticateRequest::new("local-api-key").meta(meta)).await.unwrap();
    let file = h.root.path().join("config/tinycode/config.toml");
    let saved: toml::Table = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        saved["providers"]["local"],
        toml::Value::Table(toml::from_str(&format!("kind = \"openai-compatible\"\nbase_url = \"{}\"\napi_key = \"sk-new\"\nmodels = [\"fake-model\"]", h.model.base_url)).unwrap())
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    h.client.prompt(&session, "hi").await.unwrap();
    assert_eq!(h.model.requests()[0].header("authorization"), Some("Bearer sk-new"));

    let error = h.client.call(acp::AuthenticateRequest::new("anthropic-api-key")).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::AUTH_REQUIRED);
    assert_eq!(
        error.message,
        "no API key is set: set OPENAI_API_KEY, ANTHROPIC_API_KEY or TINYCODE_API_KEY, or point TINYCODE_BASE_URL at a \
         local server such as Ollama (`tinycode setup` walks you through it)"
    );
    let error = h.client.call(acp::AuthenticateRequest::new("password")).await.unwrap_err();
    assert_eq!(
        (error.code, error.message.as_str()),
        (ErrorCode::INVALID_PARAMS, "unknown auth method \"password\"")
    );
}

/// A loopback port with nothing listening.
async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn local_servers_are_found_by_their_fingerprints_on_loopback_and_every_model_is_offered() {
    let ollama = FakeModel::start(vec![answer(&["from ollama"])]).await;
    ollama.impersonate(Persona::Ollama);
    ollama.set_models(Some(vec!["qwen3:8b".into(), "llama3.2".into()]));
    let studio = FakeModel::start(vec![]).await;
    studio.impersonate(Persona::LmStudio);
    studio.set_models(Some(vec!["qwen/qwen3-8b".into()]));
    let llama = FakeModel::start(vec![]).await;
    llama.impersonate(Persona::LlamaCpp);
    llama.set_models(Some(vec!["gpt-oss-20b".into()]));
    let vllm = FakeModel::start(vec![]).await;
    vllm.impersonate(Persona::Vllm);
    vllm.set_models(Some(vec!["Qwen/Qwen3-8B".into()]));
    let impostor = FakeModel::start(vec![]).await;
    let targets = vec![
        Target { server: Server::Ollama, port: ollama.port() },
        Target { server: Server::LmStudio, port: studio.port() },
        Target { server: Server::LlamaCpp, port: llama.port() },
        Target { server: Server::Vllm, port: vllm.port() },
        Target { server: Server::Ollama, port: impostor.port() },
        Target { server: Server::Vllm, port: closed_port().await },
    ];
    let h = Setup::new(vec![]).unconfigured().probes(targets).start().await;
    let created = h.client.call(acp::NewSessionRequest::new(h.cwd.clone())).await.unwrap();
    let options = serde_json::to_value(created.config_options.unwrap()).unwrap();
    let model = &options[1];
    assert_eq!(model["currentValue"], json!("ollama/qwen3:8b"));
    let choices: Vec<&str> =
        model["options"].as_array().unwrap().iter().map(|c| c["value"].as_str().unwrap()).collect();
    assert_eq!(
        choices,
        [
            "ollama/qwen3:8b",
            "ollama/llama3.2",
            "lmstudio/qwen/qwen3-8b",
            "llamacpp/gpt-oss-20b",
            "vllm/Qwen/Qwen3-8B"
        ]
    );
    h.client.prompt(&created.session_id, "hi").await.unwrap();
    assert_eq!(ollama.requests()[0].body["model"], json!("qwen3:8b"));
    let usage = h
        .client
        .updates(&created.session_id)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "usage_update")
        .unwrap();
    assert_eq!(usage["size"], json!(32768), "the loaded context Ollama reports");
    assert_eq!(impostor.probes(), vec!["GET /"], "no fingerprint, not taken for Ollama");
    assert_eq!(impostor.requests().len(), 0);
}

#[tokio::test]
async fn misconfigurations_are_told_at_once_with_the_cause_and_the_fix() {
    let closed = closed_port().await;
    let cases: Vec<(Setup, &str, usize)> = vec![
        (
            Setup::new(vec![]).env("TINYCODE_BASE_URL", Some("127.0.0.1:11434/v1")),
            "Model request failed: the base URL `127.0.0.1:11434/v1` cannot be used: it has no scheme; write \
             http://127.0.0.1:11434/v1 (or https://…).",
            0,
        ),
        (
            Setup::new(vec![]).env("TINYCODE_BASE_URL", Some(&format!("http://127.0.0.1:{closed}/v1"))),
            &*Box::leak(format!("Model request failed: nothing is listening at http://127.0.0.1:{closed}: is the server running?").into_boxed_str()),
            0,
        ),
        (
            Setup::new(vec![page(404, "<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>")]),
            "Model request failed: this is not an OpenAI-compatible endpoint: POST {base_url}/chat/completions answered 404 \
             text/html; check the base URL (it usually ends in /v1).",
            1,
        ),
        (
            Setup::new(vec![status(404, json!({"error": {"message": "The model `gpt-9` does not exist", "type": "invalid_request_error", "code": "model_not_found"}}), &[])])
                .env("TINYCODE_MODEL", Some("gpt-9")),
            "Model request failed: model `gpt-9` not found; this provider offers: fake-model, fake-model-large.",
            1,
        ),
        (
            Setup::new(vec![status(429, json!({"error": {"message": "Too many requests"}}), &[("retry-after", "3600")])]),
            "Model request failed: the provider asks to wait 3600 s before the next request (HTTP 429: Too many \
             requests); try again then.",
            1,
        ),
        (
            Setup::new(vec![status(429, json!({"error": {"message": "You exceeded your current quota.", "code": "insufficient_quota"}}), &[])]),
            "Model request failed: the model provider reports the quota or billing limit is exhausted: You exceeded your \
             current quota.",
            1,
        ),
    ];
    for (setup, expected, requests) in cases {
        let h = setup.start().await;
        let session = h.session().await;
        let started = std::time::Instant::now();
        let error = h.client.prompt(&session, "hi").await.unwrap_err();
        assert_eq!(error.message, expected.replace("{base_url}", &h.model.base_url));
        assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
        assert_eq!(h.model.requests().len(), requests, "{expected}: never retried");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{expected}: told within a second");
    }
}

#[tokio::test]
async fn overloaded_and_failing_answers_are_retried_and_the_wait_is_shown_as_a_thought() {
    let overloaded = status(
        529,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        &[("retry-after-ms", "5")],
    );
    let h = provider("anthropic", "anthropic", "claude-sonnet-4-5").start().await;
    h.model.script(vec![overloaded, fixture("anthropic_overloaded.sse"), fixture("anthropic_answer.sse")]);
    let session = h.session().await;
    h.client.prompt(&session, "hi").await.unwrap();
    // Streamed thoughts may be coalesced: the notices are compared line by line.
    let thoughts = texts(&h, &session, "agent_thought_chunk").concat();
    let lines: Vec<&str> = thoughts.lines().collect();
    assert_eq!(lines.len(), 2, "{thoughts:?}");
    assert_eq!(lines[0], "Retrying in 5 ms (HTTP 529)…");
    assert!(lines[1].starts_with("Retrying in ") && lines[1].ends_with(" (HTTP 529)…"), "{thoughts:?}");
    assert_eq!(texts(&h, &session, "agent_message_chunk").concat(), "The notes say hello.");
    h.model.assert_done();

    let h = Harness::start(vec![fixture("chat_error_after_200.sse"), answer(&["recovered"])]).await;
    let session = h.session().await;
    h.client.prompt(&session, "hi").await.unwrap();
    assert_eq!(texts(&h, &session, "agent_message_chunk"), vec!["recovered"]);
    h.model.assert_done();
}

#[tokio::test]
async fn a_prompt_too_long_for_anthropic_is_reported_as_an_overflow_in_its_words() {
    let too_long = || {
        status(
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 215000 tokens > 200000 maximum"}}),
            &[],
        )
    };
    let h = provider("anthropic", "anthropic", "claude-sonnet-4-5").start().await;
    h.model.script(vec![too_long()]);
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the conversation is too long for the model's context window: prompt is too long: 215000 \
         tokens > 200000 maximum. Start a new session or shorten the conversation."
    );
}

#[tokio::test]
async fn a_server_that_ignores_stream_is_read_as_one_whole_answer() {
    let body = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "whole answer"}}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}});
    let h = Harness::start(vec![whole(body)]).await;
    let session = h.session().await;
    let response = h.client.prompt(&session, "hi").await.unwrap();
    assert_eq!(stop(&response), json!("end_turn"));
    assert_eq!(texts(&h, &session, "agent_message_chunk"), vec!["whole answer"]);
    h.model.assert_done();
}

#[tokio::test]
async fn an_image_for_a_model_that_cannot_see_is_left_out_and_the_user_is_told() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    let init = h.client.initialize(acp::ClientCapabilities::new()).await;
    assert!(!init.agent_capabilities.prompt_capabilities.image, "fake-model is not known to see");
    let session = h.session().await;
    let blocks = vec![
        acp::ContentBlock::Text(acp::TextContent::new("what is this?")),
        acp::ContentBlock::Image(acp::ImageContent::new("QUJD", "image/png")),
    ];
    h.client.prompt_blocks(&session, blocks).await.unwrap();
    assert_eq!(
        texts(&h, &session, "agent_message_chunk"),
        vec![
            "The model `fake-model` does not take images, so the image was left out. To send images, pick a model that can see them.\n\n",
            "ok"
        ]
    );
    let user = h.model.messages(0).into_iter().find(|m| m["role"] == "user").unwrap();
    assert_eq!(
        user["content"],
        json!([{"type": "text", "text": "what is this?"}, {"type": "text", "text": "[an image was left out here: this model cannot see images]"}])
    );

    let seeing = Setup::new(vec![]).env("TINYCODE_MODEL", Some("gpt-4.1")).start().await;
    let init = seeing.client.initialize(acp::ClientCapabilities::new()).await;
    assert!(init.agent_capabilities.prompt_capabilities.image, "gpt-4.1 takes images");
}
