//! Turns end to end through ACP: text, tools, repair, limits, prompt content.

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};

use crate::support::client::{Harness, Setup};
use crate::support::fake_model::{self as fm, Reply, answer, calls};
use crate::support::snapshot::assert_snapshot;

pub fn stop(response: &acp::PromptResponse) -> Value {
    serde_json::to_value(response.stop_reason).unwrap()
}

/// The tool message for `call_id` in a request's messages.
pub fn tool_result(messages: &[Value], call_id: &str) -> String {
    messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool result for {call_id} in {messages:#?}"))["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The final `tool_call_update` (completed or failed) for `call_id`.
pub fn finished(updates: &[Value], call_id: &str) -> Value {
    updates
        .iter()
        .rev()
        .find(|u| {
            u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == call_id
                && u.get("status").is_some_and(|s| s == "completed" || s == "failed")
        })
        .unwrap_or_else(|| panic!("no final update for {call_id} in {updates:#?}"))
        .clone()
}

/// The `messageId` of every agent message chunk of `session`.
fn message_ids(h: &Harness, session: &acp::SessionId) -> Vec<Value> {
    h.client
        .updates(session)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["messageId"].clone())
        .collect()
}

#[tokio::test]
async fn a_text_only_turn_streams_chunks_under_one_message_id_and_ends_the_turn() {
    let h = Harness::start(vec![answer(&["Hello", ", world", "!"])]).await;
    let session = h.session().await;
    let response = h.client.prompt(&session, "say hello").await.unwrap();
    assert_eq!(stop(&response), json!("end_turn"));
    assert_snapshot("text_only_turn", &Value::Array(h.transcript(&session)));
    // However the coalescing timer split the text on the wire, every piece carries the one message id.
    let raw: Vec<Value> = h
        .client
        .updates_json()
        .into_iter()
        .map(|n| n["update"].clone())
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .collect();
    let text: String = raw.iter().map(|u| u["content"]["text"].as_str().unwrap()).collect();
    assert_eq!(text, "Hello, world!");
    assert!(raw[0]["messageId"].as_str().unwrap().starts_with("msg_"));
    assert!(raw.iter().all(|u| u["messageId"] == raw[0]["messageId"]), "{raw:?}");

    let request = &h.model.requests()[0];
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(request.header("authorization"), Some("Bearer test-key"));
    assert_eq!(request.body["model"], "fake-model");
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["stream_options"], json!({"include_usage": true}));
    let tools: Vec<&str> = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        vec![
            "read",
            "write",
            "edit",
            "apply_patch",
            "bash",
            "glob",
            "grep",
            "list_dir",
            "discover",
            "monitor",
            "shell_output",
            "shell_tasks",
            "kill_shell",
            "todowrite",
            "question",
            "task",
            "webfetch",
            "plan_enter",
            "plan_exit",
            "enter_worktree",
            "exit_worktree",
            "sleep",
            "cron_create",
            "cron_list",
            "cron_delete",
        ]
    );
    let messages = h.model.messages(0);
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    assert!(
        messages[0]["content"].as_str().unwrap().contains(&format!("Working directory: {}", h.cwd.display()))
    );
    assert_eq!(messages[1], json!({"role": "user", "content": "say hello"}));
    h.model.assert_done();
}

#[tokio::test]
async fn read_then_answer_shows_the_tool_call_lifecycle_and_returns_the_result_to_the_model() {
    let h = Harness::start(vec![]).await;
    let file = h.write("src/a.txt", "hello\nworld\n");
    let args = json!({"file_path": file}).to_string();
    h.model.script(vec![calls(&[("call_r1", "read", &args)]), answer(&["It says hello."])]);
    let session = h.session().await;
    let response = h.client.prompt(&session, "what is in src/a.txt?").await.unwrap();
    assert_eq!(stop(&response), json!("end_turn"));
    assert_snapshot("read_then_answer", &Value::Array(h.transcript(&session)));

    let second = h.model.messages(1);
    assert_eq!(
        second[2],
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_r1", "type": "function", "function": {"name": "read", "arguments": args}}]})
    );
    assert_eq!(tool_result(&second, "call_r1"), "1\thello\n2\tworld\n\n(End of file: 2 lines)");
    h.model.assert_done();
}

#[tokio::test]
async fn glob_and_grep_search_the_workspace_newest_first_and_skip_ignored_paths() {
    let h = Harness::start(vec![]).await;
    h.write(".gitignore", "ignored.rs\n");
    h.write("old.rs", "fn needle() {}\n");
    h.write("ignored.rs", "fn needle() {}\n");
    h.write("node_modules/dep.rs", "fn needle() {}\n");
    let newest = h.write("src/new.rs", "// nothing\nfn needle() {}\n");
    let old = h.cwd.join("old.rs");
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(past).unwrap();
    h.model.script(vec![
        calls(&[
            ("g1", "glob", r#"{"pattern": "**/*.rs"}"#),
            ("g2", "grep", r#"{"pattern": "fn\\s+needle", "include": "*.rs"}"#),
        ]),
        answer(&["Found them."]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "find needle").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(tool_result(&messages, "g1"), format!("{}\n{}", newest.display(), old.display()));
    assert_eq!(tool_result(&messages, "g2"), "src/new.rs:2:fn needle() {}\nold.rs:1:fn needle() {}");
    let updates = h.transcript(&session);
    let titles: Vec<&str> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .map(|u| u["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, vec!["Find `**/*.rs`", "Search `fn\\s+needle` (*.rs)"]);
    let kinds: Vec<&str> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .map(|u| u["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["search", "search"]);
}

#[tokio::test]
async fn an_unknown_tool_error_lists_exactly_the_tools_offered_in_that_request() {
    let h = Harness::start(vec![calls(&[("u1", "fly", "{}")]), answer(&["ok"])]).await;
    let session = h.session().await;
    h.client.prompt(&session, "fly").await.unwrap();
    let offered = crate::support::mcp::offered(&h.model, 0);
    assert!(!offered.contains(&"diagnostics".to_string()), "language servers are off: {offered:?}");
    assert_eq!(
        tool_result(&h.model.messages(1), "u1"),
        format!("Unknown tool `fly`. Available tools: {}.", offered.join(", "))
    );
}

#[tokio::test]
async fn malformed_tool_calls_are_repaired_or_reported_back_to_the_model_through_invalid() {
    let h = Harness::start(vec![]).await;
    let file = h.write("a.txt", "x\n");
    let fenced = format!("```json\n{}\n```", json!({"file_path": file}));
    let trailing = format!("{{\"file_path\": \"{}\",}}", file.display());
    h.model.script(vec![
        calls(&[
            ("m1", "read", &fenced),
            ("m2", "read", &trailing),
            ("m3", "read", "{not json"),
            ("m4", "Read", &json!({"file_path": file}).to_string()),
            ("m5", "fly", "{}"),
            ("m6", "read", "[1, 2"),
        ]),
        answer(&["done"]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "read it").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(
        tool_result(&messages, "m1"),
        "<repair_note>stripped a Markdown code fence</repair_note>\n1\tx\n\n(End of file: 1 lines)"
    );
    assert_eq!(
        tool_result(&messages, "m2"),
        "<repair_note>repaired invalid JSON syntax</repair_note>\n1\tx\n\n(End of file: 1 lines)"
    );
    // The JSON-repair crate reads `{not json` as the key `not json`; read then names what it needs.
    assert_eq!(
        tool_result(&messages, "m3"),
        "<repair_note>repaired invalid JSON syntax</repair_note>\nTool read needs file_path: string (the file to read) or paths: array of string (several files or glob patterns); you sent keys [not json]. Resend the call with one of them."
    );
    assert_eq!(
        tool_result(&messages, "m6"),
        "The arguments provided to the tool `read` are invalid: invalid JSON: EOF while parsing a list at line 1 column 5\nPlease resend the call with a single valid JSON object as its arguments."
    );
    assert_eq!(
        tool_result(&messages, "m4"),
        "<repair_note>called tool read (sent as Read)</repair_note>\n1\tx\n\n(End of file: 1 lines)"
    );
    assert_eq!(
        tool_result(&messages, "m5"),
        "Unknown tool `fly`. Available tools: read, write, edit, apply_patch, bash, glob, grep, list_dir, discover, monitor, shell_output, shell_tasks, kill_shell, todowrite, question, task, webfetch, plan_enter, plan_exit, enter_worktree, exit_worktree, sleep, cron_create, cron_list, cron_delete."
    );
    let updates = h.transcript(&session);
    assert_eq!(finished(&updates, "m3")["status"], "failed");
    assert_eq!(finished(&updates, "m1")["status"], "completed");
    assert_eq!(finished(&updates, "m5")["status"], "failed");
    assert_eq!(finished(&updates, "m6")["status"], "failed");
    let call = |id: &str| {
        updates.iter().find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == id).unwrap()
    };
    assert_eq!(call("m6")["title"], "Invalid call to `read`");
    assert_eq!(call("m6")["name"], "invalid");
    assert_eq!(call("m3")["title"], "Read file", "read itself names what it needs");
    assert_eq!(call("m3")["name"], "read");
}

#[tokio::test]
async fn reasoning_deltas_become_thought_chunks_and_are_sent_back_under_the_same_key() {
    let h = Harness::start(vec![
        Reply::Sse(vec![
            fm::reasoning("reasoning_content", "Let me think."),
            fm::text("Answer."),
            fm::finish("stop"),
        ]),
        answer(&["Second."]),
    ])
    .await;
    let session = h.session().await;
    h.client.prompt(&session, "q1").await.unwrap();
    h.client.prompt(&session, "q2").await.unwrap();
    let updates: Vec<Value> = h
        .transcript(&session)
        .into_iter()
        .filter(|u| u["sessionUpdate"].as_str().is_some_and(|kind| kind.ends_with("_chunk")))
        .collect();
    assert_eq!(
        updates[0],
        json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Let me think."}, "messageId": "thought_<id>"})
    );
    assert_eq!(
        updates[1],
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Answer."}, "messageId": "msg_<id>"})
    );
    let messages = h.model.messages(1);
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Answer.", "reasoning_content": "Let me think."})
    );
    let ids = message_ids(&h, &session);
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "each model response is a new message");
}

#[tokio::test]
async fn the_request_cap_ends_a_turn_that_keeps_calling_tools_with_max_turn_requests() {
    let h = Setup::new(vec![]).config("max_turn_requests = 2").start().await;
    let file = h.write("a.txt", "x\n");
    let args = json!({"file_path": file}).to_string();
    h.model.script(vec![calls(&[("c1", "read", &args)]), calls(&[("c2", "read", &args)])]);
    let session = h.session().await;
    let response = h.client.prompt(&session, "loop").await.unwrap();
    assert_eq!(stop(&response), json!("max_turn_requests"));
    assert_eq!(h.model.requests().len(), 2);
    h.model.assert_done();
}

#[tokio::test]
async fn a_length_stop_without_tool_calls_ends_the_turn_with_max_tokens() {
    let h = Harness::start(vec![Reply::Sse(vec![fm::text("A long ans"), fm::finish("length")])]).await;
    let session = h.session().await;
    let response = h.client.prompt(&session, "write a lot").await.unwrap();
    assert_eq!(stop(&response), json!("max_tokens"));
}

#[tokio::test]
async fn a_tool_call_cut_off_by_the_output_limit_is_not_run_and_the_model_is_told_to_resend() {
    let h = Harness::start(vec![
        Reply::Sse(vec![
            fm::tool_call(0, "cut1", "read", "{\"file_path\": \"/some/fi"),
            fm::finish("length"),
        ]),
        answer(&["ok"]),
    ])
    .await;
    let session = h.session().await;
    let response = h.client.prompt(&session, "go").await.unwrap();
    assert_eq!(stop(&response), json!("end_turn"));
    let result = tool_result(&h.model.messages(1), "cut1");
    assert!(result.contains("was cut off at the output token limit (max_tokens)"), "{result}");
}

#[tokio::test]
async fn resource_links_with_line_ranges_and_embedded_resources_reach_the_model() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    let file = h.write("lib.rs", "one\ntwo\nthree\nfour\n");
    let session = h.session().await;
    let blocks = vec![
        acp::ContentBlock::Text(acp::TextContent::new("explain")),
        acp::ContentBlock::ResourceLink(acp::ResourceLink::new(
            "lib.rs",
            format!("file://{}#L2-L3", file.display()),
        )),
        acp::ContentBlock::Resource(acp::EmbeddedResource::new(
            acp::EmbeddedResourceResource::TextResourceContents(acp::TextResourceContents::new(
                "buffer text",
                "file:///virtual/unsaved.rs",
            )),
        )),
    ];
    h.client.prompt_blocks(&session, blocks).await.unwrap();
    assert_eq!(
        h.model.messages(0)[1]["content"],
        json!([
            {"type": "text", "text": "explain"},
            {"type": "text", "text": format!("<file path=\"{}\" lines=\"2-3\">\ntwo\nthree\n</file>", file.display())},
            {"type": "text", "text": "<file path=\"/virtual/unsaved.rs\">\nbuffer text\n</file>"}
        ])
    );
}

#[tokio::test]
async fn project_instructions_from_agents_md_are_part_of_the_system_prompt() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    h.write("AGENTS.md", "Always answer in French.\n");
    let session = h.session().await;
    h.client.prompt(&session, "hi").await.unwrap();
    let system = h.model.messages(0)[0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("Always answer in French."), "{system}");
    assert!(system.contains(&format!("(from {})", h.cwd.join("AGENTS.md").display())));
}

#[tokio::test]
async fn huge_tool_output_is_previewed_head_and_tail_and_saved_in_full() {
    let h = Harness::start(vec![]).await;
    for i in 0..1_100 {
        h.write(&format!("generated/a_rather_long_file_name_to_make_the_listing_large_{i:04}.txt"), "");
    }
    h.model.script(vec![calls(&[("g", "glob", r#"{"pattern": "generated/*.txt"}"#)]), answer(&["ok"])]);
    let session = h.session().await;
    h.client.prompt(&session, "list").await.unwrap();
    let result = tool_result(&h.model.messages(1), "g");
    assert!(result.len() < 51_200 + 400, "{}", result.len());
    let marker = regex::Regex::new(
        r"\n\.\.\. \[truncated (\d+) bytes, showing first (\d+) and last (\d+) lines\] \.\.\.\n",
    )
    .unwrap();
    let caps = marker.captures(&result).unwrap_or_else(|| panic!("no marker in {result}"));
    let saved_line =
        result.lines().find(|l| l.starts_with("The output was truncated. Full output saved to: ")).unwrap();
    let saved = std::path::PathBuf::from(
        saved_line.trim_start_matches("The output was truncated. Full output saved to: "),
    );
    assert!(saved.starts_with(h.data.join("tool-output")), "{}", saved.display());
    let mode = |p: &std::path::Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions()) & 0o777
    };
    assert_eq!((mode(&h.data.join("tool-output")), mode(&saved)), (0o700, 0o600), "the user's alone");
    let full = std::fs::read_to_string(&saved).unwrap();
    assert_eq!(full.lines().filter(|l| l.ends_with(".txt")).count(), 1_000);
    assert!(full.contains("(Results are truncated: showing the 1000 newest of 1100 files."));
    let head_lines: usize = caps[2].parse().unwrap();
    let tail_lines: usize = caps[3].parse().unwrap();
    let full_lines: Vec<&str> = full.lines().collect();
    assert!(result.starts_with(&full_lines[..head_lines].join("\n")));
    let before_note = result.split("\n\nThe output was truncated.").next().unwrap();
    assert!(before_note.ends_with(&full_lines[full_lines.len() - tail_lines..].join("\n")));
    let dropped: usize = caps[1].parse().unwrap();
    assert!(dropped > 0 && dropped < full.len());
    let updates = h.transcript(&session);
    assert_eq!(finished(&updates, "g")["status"], "completed");
}

#[tokio::test]
async fn keep_alive_comments_crlf_framing_and_split_tool_arguments_are_decoded() {
    let h = Harness::start(vec![]).await;
    let file = h.write("a.txt", "x\n");
    let path = file.display().to_string();
    let first = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "s1", "type": "function", "function": {"name": "read", "arguments": "{\"file_"}}]}}]});
    let second = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": format!("path\": \"{path}\"}}")}}]}}]});
    let raw = format!(
        ": OPENROUTER PROCESSING\r\n\r\ndata: {first}\r\n\r\n: keep-alive\r\n\r\ndata: {second}\r\n\r\ndata: {}\r\n\r\ndata: [DONE]\r\n\r\n",
        fm::finish("tool_calls")
    );
    h.model.script(vec![Reply::Raw(raw), answer(&["ok"])]);
    let session = h.session().await;
    h.client.prompt(&session, "read").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "s1"), "1\tx\n\n(End of file: 1 lines)");
}
