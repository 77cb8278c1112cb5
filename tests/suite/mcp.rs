//! MCP servers through ACP: the editor's `mcpServers` (stdio and streamable HTTP) and the configuration's
//! `[mcp.NAME]`, against the test server `tinycode-mcp-fixture`. Listing, calling, asks remembered per server and
//! tool, images, cancellation reaching the server, a crash reported once with its tools withdrawn, a slow start
//! that never holds up `session/new`, a server that ignores EOF gone after `session/close`, name clashes and
//! 64-byte names, `tools/list_changed`, elicitation and sampling, prompts as slash commands, resources.

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::turn::{finished, stop, tool_result};
use crate::support::client::{Answer, Elicit, Harness, Setup};
use crate::support::fake_model::{Reply, answer, calls};
use crate::support::mcp::{FIXTURE, HttpFixture, last_user, offered, offered_tool, stdio};

fn said(h: &Harness, session: &acp::SessionId) -> String {
    h.said(session).concat()
}

fn call(id: &str, tool: &str, args: Value) -> Reply {
    calls(&[(id, tool, &args.to_string())])
}

#[tokio::test]
async fn an_editor_stdio_server_offers_its_tools_and_a_call_runs_through_the_ask_and_the_card() {
    let h = Harness::start(vec![call("c1", "mcp__fx__echo", json!({"text": "hi"})), answer(&["done"])]).await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    assert_eq!(stop(&h.client.prompt(&session, "echo hi").await.unwrap()), json!("end_turn"));
    let names = offered(&h.model, 0);
    let mcp: Vec<&String> = names.iter().filter(|n| n.starts_with("mcp")).collect();
    assert_eq!(
        mcp,
        [
            "mcp__fx__echo",
            "mcp__fx__sleep",
            "mcp__fx__fail",
            "mcp__fx__image",
            "mcp__fx__change_list",
            "mcp__fx__ask",
            "mcp__fx__crash",
            "mcp__fx__cancelled",
            "mcp__fx__env",
            "mcp__fx__pid",
            "mcp__fx__sample",
            "mcp_resource"
        ]
    );
    assert_eq!(
        offered_tool(&h.model, 0, "mcp__fx__echo")["function"],
        json!({"name": "mcp__fx__echo", "description": "Echo the text back",
               "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}})
    );
    let ask = serde_json::to_value(&h.client.log.permission_requests.lock().unwrap()[0]).unwrap();
    assert_eq!(
        ask["toolCall"],
        json!({"toolCallId": "c1", "title": "fx: echo", "kind": "read", "status": "pending",
               "content": [{"type": "content", "content": {"type": "text", "text": "```json\n{\n  \"text\": \"hi\"\n}\n```"}}],
               "rawInput": {"text": "hi"}})
    );
    assert_eq!(tool_result(&h.model.messages(1), "c1"), "echo: hi");
    let done = finished(&h.client.updates(&session), "c1");
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["content"],
        json!([{"type": "content", "content": {"type": "text", "text": "echo: hi"}}])
    );
    h.model.assert_done();
}

#[tokio::test]
async fn always_allowing_an_mcp_tool_covers_that_server_and_tool_only() {
    let h = Harness::start(vec![
        call("c1", "mcp__fx__echo", json!({"text": "a"})),
        call("c2", "mcp__fx__echo", json!({"text": "b"})),
        call("c3", "mcp__fx__fail", json!({"message": "boom"})),
        answer(&["ok"]),
    ])
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways), Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client.prompt(&session, "go").await.unwrap();
    let asked: Vec<String> = h
        .client
        .log
        .permission_requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.tool_call.fields.title.clone().unwrap_or_default())
        .collect();
    assert_eq!(asked, ["fx: echo", "fx: fail"]);
    assert_eq!(tool_result(&h.model.messages(2), "c2"), "echo: b");
    assert_eq!(tool_result(&h.model.messages(3), "c3"), "The MCP tool reported an error:\nboom");
    assert_eq!(finished(&h.client.updates(&session), "c3")["status"], "failed");
    h.client.prompt(&session, "/permissions").await.unwrap();
    assert!(said(&h, &session).contains("1. allow `mcp` for `fx/echo`"), "{}", said(&h, &session));
}

/// The fixture's image tool's picture.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[tokio::test]
async fn an_image_reaches_a_seeing_model_as_an_image_after_the_tool_result() {
    let h = Setup::new(vec![call("c1", "mcp__fx__image", json!({})), answer(&["seen"])])
        .env("TINYCODE_MODEL", Some("gpt-4.1"))
        .start()
        .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client.prompt(&session, "draw").await.unwrap();
    let messages = h.model.messages(1);
    let tail: Vec<Value> = messages[messages.len() - 2..].to_vec();
    assert_eq!(
        tail,
        vec![
            json!({"role": "tool", "tool_call_id": "c1", "content": "a red dot\n\nThe image is attached in the next message."}),
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}]}),
        ]
    );
}

#[tokio::test]
async fn an_image_reaches_the_card_as_an_image_and_a_blind_model_as_a_note() {
    let h = Harness::start(vec![call("c1", "mcp__fx__image", json!({})), answer(&["seen"])]).await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client.prompt(&session, "draw").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "c1"),
        "a red dot\n\n[an image was left out here: this model cannot see images]"
    );
    let content = finished(&h.client.updates(&session), "c1")["content"].clone();
    assert_eq!(content[1]["content"]["type"], "image");
    assert_eq!(content[1]["content"]["mimeType"], "image/png");
}

#[tokio::test]
async fn cancelling_a_running_call_tells_the_server_and_ends_the_turn() {
    let h = Harness::start(vec![
        call("c1", "mcp__fx__sleep", json!({"ms": 60000})),
        call("c2", "mcp__fx__cancelled", json!({})),
        answer(&["ok"]),
    ])
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    let running = h.client.prompt_later(&session, "sleep");
    h.client
        .wait_for("the server's progress", |all| {
            all.iter().any(|u| u["update"]["content"][0]["content"]["text"] == "sleeping (50%)")
        })
        .await;
    h.client.cancel(&session);
    let response = running.await.unwrap().unwrap();
    assert_eq!(stop(&response), json!("cancelled"));
    h.client.prompt(&session, "what was cancelled?").await.unwrap();
    let seen = tool_result(&h.model.messages(2), "c2");
    assert!(seen.starts_with("cancelled: [\"") && seen.contains("(cancelled by the user)"), "{seen}");
}

#[tokio::test]
async fn a_crashed_server_is_reported_once_and_its_tools_are_withdrawn() {
    let h = Harness::start(vec![
        call("c1", "mcp__fx__crash", json!({})),
        answer(&["it crashed"]),
        answer(&["still here"]),
    ])
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client.prompt(&session, "crash it").await.unwrap();
    let result = tool_result(&h.model.messages(1), "c1");
    assert!(
        result
            .starts_with("Error: the MCP server `fx` is not available: it stopped: it exited with status 3"),
        "{result}"
    );
    h.client.prompt(&session, "go on").await.unwrap();
    assert!(!offered(&h.model, 1).iter().any(|n| n.starts_with("mcp__fx__")));
    assert!(!offered(&h.model, 2).iter().any(|n| n.starts_with("mcp__")));
    let text = said(&h, &session);
    assert_eq!(text.matches("MCP server `fx` is unavailable").count(), 1, "{text}");
    assert!(text.contains("crashing on purpose"), "the server's last output is shown: {text}");
    h.client.prompt(&session, "/mcp").await.unwrap();
    assert!(said(&h, &session).contains("- `fx` (editor): failed: it stopped: it exited with status 3"));
}

#[tokio::test]
async fn session_new_answers_while_a_server_starts_and_the_first_request_waits_for_it() {
    let h = Harness::start(vec![answer(&["hello"])]).await;
    let gate = h.root.path().join("go");
    let gate_arg = gate.display().to_string();
    let session = h.session_with(vec![stdio("slow", &["--hold-start", &gate_arg], &[])]).await;
    h.client.prompt(&session, "/mcp").await.unwrap();
    assert_eq!(said(&h, &session), "**MCP servers**\n- `slow` (editor): starting\n");
    std::fs::write(&gate, "").unwrap();
    h.client.prompt(&session, "hi").await.unwrap();
    assert!(offered(&h.model, 0).contains(&"mcp__slow__echo".to_string()));
}

#[tokio::test]
async fn a_server_that_ignores_eof_and_sigterm_is_gone_once_the_session_is_closed() {
    let h = Harness::start(vec![call("c1", "mcp__stubborn__pid", json!({})), answer(&["ok"])]).await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("stubborn", &["--ignore-eof"], &[])]).await;
    h.client.prompt(&session, "pid?").await.unwrap();
    let pids = tool_result(&h.model.messages(1), "c1");
    let numbers: Vec<i32> = pids.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert_eq!(numbers.len(), 2, "{pids}");
    assert!(numbers.iter().all(|pid| tinycode::shell::process::running(*pid)));
    h.client.call(acp::CloseSessionRequest::new(session.clone())).await.unwrap();
    for pid in numbers {
        assert!(!tinycode::shell::process::running(pid), "process {pid} outlived the session");
    }
}

#[tokio::test]
async fn clashing_and_long_names_get_stable_suffixes_and_calls_reach_the_right_server() {
    let h = Harness::start(vec![answer(&["listed"])]).await;
    let session = h
        .session_with(vec![
            stdio("my server", &["--long-names"], &[("WHO", "first")]),
            stdio("my_server", &[], &[("WHO", "second")]),
        ])
        .await;
    h.client.prompt(&session, "list").await.unwrap();
    let names = offered(&h.model, 0);
    let clash: Vec<&String> = names.iter().filter(|n| n.starts_with("mcp__my_server__env")).collect();
    assert_eq!(clash.len(), 2);
    assert_eq!(clash[0], "mcp__my_server__env");
    assert!(clash[1].len() == "mcp__my_server__env_".len() + 8, "{clash:?}");
    let long: Vec<&String> = names.iter().filter(|n| n.contains("__ttttt")).collect();
    assert_eq!(long.len(), 1);
    assert_eq!(long[0].len(), 64);
    assert!(
        names
            .iter()
            .all(|n| n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    );
    let second = clash[1].clone();
    h.model.script(vec![
        call("c1", &second, json!({"name": "WHO"})),
        call("c2", "mcp__my_server__env", json!({"name": "WHO"})),
        answer(&["ok"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    h.client.prompt(&session, "who?").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(2), "c1"), "second");
    assert_eq!(tool_result(&h.model.messages(3), "c2"), "first");
}

#[tokio::test]
async fn a_changed_tool_list_is_read_again_before_the_next_request() {
    let h = Harness::start(vec![
        call("c1", "mcp__fx__change_list", json!({})),
        call("c2", "mcp__fx__added", json!({})),
        answer(&["ok"]),
    ])
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client.prompt(&session, "change").await.unwrap();
    assert!(!offered(&h.model, 0).contains(&"mcp__fx__added".to_string()));
    assert!(offered(&h.model, 1).contains(&"mcp__fx__added".to_string()));
    assert_eq!(tool_result(&h.model.messages(2), "c2"), "the added tool works");
}

#[tokio::test]
async fn a_server_question_goes_to_the_editor_form_and_sampling_is_refused() {
    let form = acp::ClientCapabilities::new()
        .elicitation(acp::ElicitationCapabilities::new().form(acp::ElicitationFormCapabilities::new()));
    let h = Setup::new(vec![
        call("c1", "mcp__fx__ask", json!({"question": "Colour?"})),
        call("c2", "mcp__fx__sample", json!({})),
        answer(&["ok"]),
    ])
    .capabilities(form)
    .start()
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    h.client.log.elicit_answers.lock().unwrap().push_back(Elicit::Accept("blue"));
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client.prompt(&session, "ask").await.unwrap();
    let asked = serde_json::to_value(&h.client.log.elicitations.lock().unwrap()[0]).unwrap();
    assert_eq!(asked["message"], "The MCP server `fx` asks: Colour?");
    assert_eq!(
        tool_result(&h.model.messages(1), "c1"),
        r#"elicitation: {"action":"accept","content":{"answer":"blue"}}"#
    );
    let sampled = tool_result(&h.model.messages(2), "c2");
    assert!(sampled.contains("tinycode does not offer sampling"), "{sampled}");
}

#[tokio::test]
async fn without_an_editor_form_a_server_question_is_declined() {
    let h = Harness::start(vec![call("c1", "mcp__fx__ask", json!({"question": "Colour?"})), answer(&["ok"])])
        .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client.prompt(&session, "ask").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "c1"), r#"elicitation: {"action":"decline"}"#);
    assert!(h.client.log.elicitations.lock().unwrap().is_empty());
}

#[tokio::test]
async fn server_prompts_are_slash_commands_and_resources_are_read_through_mcp_resource() {
    let h = Harness::start(vec![
        call("c1", "mcp_resource", json!({"server": "fx"})),
        call("c2", "mcp_resource", json!({"server": "fx", "uri": "mem://notes/today"})),
        answer(&["reviewed"]),
    ])
    .await;
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client
        .wait_for("the server's prompt in the commands", |all| {
            all.iter().any(|u| {
                u["update"]["availableCommands"]
                    .as_array()
                    .is_some_and(|list| list.iter().any(|c| c["name"] == "mcp__fx__review"))
            })
        })
        .await;
    let commands = h
        .client
        .updates(&session)
        .into_iter()
        .rev()
        .find(|u| u["sessionUpdate"] == "available_commands_update")
        .unwrap();
    let review = commands["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "mcp__fx__review")
        .cloned();
    assert_eq!(
        review,
        Some(
            json!({"name": "mcp__fx__review", "description": "Review code", "input": {"hint": "<focus> <style>"}})
        )
    );
    h.client.prompt(&session, "/mcp__fx__review errors terse and short").await.unwrap();
    assert_eq!(last_user(&h.model, 0), "Review focusing on errors in terse and short style");
    assert_eq!(
        tool_result(&h.model.messages(1), "c1"),
        "Resources of `fx`:\n- mem://notes/today (today, text/plain): Today's notes\n"
    );
    assert_eq!(tool_result(&h.model.messages(2), "c2"), "[resource mem://notes/today]\nBuy milk");
}

#[tokio::test]
async fn a_streamable_http_server_is_listed_and_called() {
    let server = HttpFixture::start().await;
    let h = Harness::start(vec![call("c1", "mcp__web__echo", json!({"text": "over http"})), answer(&["ok"])])
        .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![server.server("web")]).await;
    h.client.prompt(&session, "echo").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "c1"), "echo: over http");
}

#[tokio::test]
async fn servers_that_cannot_start_never_fail_the_session_and_mcp_says_why() {
    let h = Harness::start(vec![answer(&["fine"])]).await;
    let sse = acp::McpServer::Sse(acp::McpServerSse::new("old", "http://127.0.0.1:9/sse"));
    let missing = acp::McpServer::Stdio(acp::McpServerStdio::new("missing", "/nonexistent/mcp-server"));
    let session = h.session_with(vec![sse, missing, stdio("broken", &["--crash-on-start"], &[])]).await;
    assert_eq!(stop(&h.client.prompt(&session, "hi").await.unwrap()), json!("end_turn"));
    h.client.prompt(&session, "/mcp").await.unwrap();
    let text = said(&h, &session);
    assert!(
        text.contains("- `old` (editor): failed: it cannot be used: it uses the SSE transport"),
        "{text}"
    );
    assert!(text.contains("- `missing` (editor): failed: `/nonexistent/mcp-server` could not be started: No such file or directory"), "{text}");
    assert!(text.contains("- `broken` (editor): failed: it exited with status 7 before completing the MCP handshake. Its last output:\ncannot start: the fixture was told to fail"), "{text}");
    assert_eq!(text.matches("is unavailable").count(), 3, "each failure is reported once: {text}");
}

#[tokio::test]
async fn project_servers_start_only_once_the_project_is_trusted_and_can_be_disabled_by_name() {
    let config = format!("[mcp.proj]\ncommand = \"{FIXTURE}\"\n");
    let untrusted = Setup::new(vec![]).config(&config).start().await;
    let session = untrusted.session().await;
    untrusted.client.prompt(&session, "/mcp").await.unwrap();
    assert!(said(&untrusted, &session).starts_with("No MCP servers."), "{}", said(&untrusted, &session));

    let trusted = Setup::new(vec![answer(&["ok"])]).config(&config).trusted().start().await;
    let session = trusted.session_with(vec![stdio("off", &[], &[])]).await;
    std::fs::write(trusted.config_home().join("tinycode/config.toml"), "[mcp.off]\nenabled = false\n")
        .unwrap();
    trusted.client.prompt(&session, "hi").await.unwrap();
    assert!(offered(&trusted.model, 0).contains(&"mcp__proj__echo".to_string()));
    let fresh = trusted.session_with(vec![stdio("off", &[], &[])]).await;
    trusted.client.prompt(&fresh, "/mcp").await.unwrap();
    let text = said(&trusted, &fresh);
    assert!(text.contains("- `off` (editor): disabled in the configuration"), "{text}");
    assert!(text.contains("- `proj` (config): "), "{text}");
}

#[tokio::test]
async fn a_call_over_its_timeout_fails_and_the_server_is_told_to_stop() {
    let h = Harness::start(vec![
        call("c1", "mcp__fx__sleep", json!({"ms": 60000})),
        call("c2", "mcp__fx__cancelled", json!({})),
        answer(&["ok"]),
    ])
    .await;
    std::fs::write(
        h.config_home().join("tinycode/config.toml"),
        format!("[mcp.fx]\ncommand = \"{FIXTURE}\"\ncall_timeout_ms = 300\n"),
    )
    .unwrap();
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "sleep").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "c1"),
        "Error: the MCP server `fx` did not answer within 0.3 s; the request was cancelled"
    );
    let seen = tool_result(&h.model.messages(2), "c2");
    assert!(seen.contains("(request timeout)"), "{seen}");
}

#[tokio::test]
async fn a_loaded_session_starts_the_servers_the_editor_declares_with_the_load() {
    let mut h = Harness::start(vec![answer(&["first"]), answer(&["second"])]).await;
    let session = h.session().await;
    h.client.prompt(&session, "hello").await.unwrap();
    assert!(!offered(&h.model, 0).iter().any(|n| n.starts_with("mcp__")));
    h.restart().await;
    let load =
        acp::LoadSessionRequest::new(session.clone(), h.cwd.clone()).mcp_servers(vec![stdio("fx", &[], &[])]);
    h.client.call(load).await.unwrap();
    h.client.prompt(&session, "again").await.unwrap();
    assert!(offered(&h.model, 1).contains(&"mcp__fx__echo".to_string()));
}

#[tokio::test]
async fn a_long_mcp_result_is_previewed_and_saved_in_full() {
    let text: String = (0..3_000).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
    let h = Harness::start(vec![call("c1", "mcp__fx__echo", json!({"text": text})), answer(&["ok"])]).await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session_with(vec![stdio("fx", &[], &[])]).await;
    h.client.prompt(&session, "echo a lot").await.unwrap();
    let result = tool_result(&h.model.messages(1), "c1");
    assert!(result.starts_with("echo: line 0\nline 1\n"), "{}", &result[..40]);
    assert!(result.contains("... [truncated "), "no truncation marker");
    let saved = result
        .lines()
        .find_map(|l| l.strip_prefix("The output was truncated. Full output saved to: "))
        .unwrap_or_else(|| panic!("no saved path in the result"));
    assert!(std::path::Path::new(saved).starts_with(h.data.join("tool-output")), "{saved}");
    assert_eq!(std::fs::read_to_string(saved).unwrap(), format!("echo: {text}"));
}

/// The fixture's tools as offered (in its order), then `mcp_resource` (it has resources).
const FIXTURE_TOOLS: [&str; 12] = [
    "mcp__late__echo",
    "mcp__late__sleep",
    "mcp__late__fail",
    "mcp__late__image",
    "mcp__late__change_list",
    "mcp__late__ask",
    "mcp__late__crash",
    "mcp__late__cancelled",
    "mcp__late__env",
    "mcp__late__pid",
    "mcp__late__sample",
    "mcp_resource",
];

#[tokio::test]
async fn a_server_past_its_start_up_timeout_is_not_waited_for_again_and_joins_the_next_request_once_ready() {
    let h = Harness::start(vec![answer(&["baseline"]), answer(&["without it"]), answer(&["with it"])]).await;
    std::fs::write(h.config_home().join("tinycode/config.toml"), "mcp_startup_timeout_ms = 200\n").unwrap();
    let plain = h.session().await;
    h.client.prompt(&plain, "hi").await.unwrap();
    let builtins = offered(&h.model, 0);
    let gate = h.root.path().join("late-go");
    let session =
        h.session_with(vec![stdio("late", &["--hold-start", &gate.display().to_string()], &[])]).await;
    assert_eq!(stop(&h.client.prompt(&session, "hi").await.unwrap()), json!("end_turn"));
    assert_eq!(offered(&h.model, 1), builtins, "the first request went without the late server");
    h.client.prompt(&session, "/mcp").await.unwrap();
    assert!(said(&h, &session).ends_with("- `late` (editor): starting\n"), "{}", said(&h, &session));
    std::fs::write(&gate, "").unwrap();
    h.client
        .wait_for("the late server's prompt as a slash command", |all| {
            all.iter().any(|u| {
                u["update"]["sessionUpdate"] == "available_commands_update"
                    && u["update"]["availableCommands"]
                        .as_array()
                        .is_some_and(|commands| commands.iter().any(|c| c["name"] == "mcp__late__review"))
            })
        })
        .await;
    h.client.prompt(&session, "again").await.unwrap();
    let mut expected = builtins.clone();
    expected.extend(FIXTURE_TOOLS.iter().map(|t| t.to_string()));
    assert_eq!(offered(&h.model, 2), expected);
    assert!(
        !said(&h, &session).contains("unavailable"),
        "a late server is not a failed one: {}",
        said(&h, &session)
    );
}

/// A stdio server (the fixture behind `sh`) that first starts a grandchild in a session of its own (`setsid`),
/// which writes its pid to `pidfile`.
fn escaping(name: &str, pidfile: &std::path::Path) -> acp::McpServer {
    let script = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 300' </dev/null >/dev/null 2>&1 & exec '{FIXTURE}'",
        pidfile.display()
    );
    acp::McpServer::Stdio(acp::McpServerStdio::new(name, "/bin/sh").args(vec!["-c".to_string(), script]))
}

/// The pid the escaping grandchild wrote, once it is running.
async fn escaped_pid(pidfile: &std::path::Path) -> i32 {
    let read = async {
        loop {
            if let Some(pid) = std::fs::read_to_string(pidfile).ok().and_then(|t| t.trim().parse().ok()) {
                return pid;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(crate::support::client::PATIENCE, read).await.expect("the grandchild started")
}

#[tokio::test]
async fn a_servers_setsid_grandchild_is_gone_once_the_session_is_closed_or_deleted() {
    let h = Harness::start(vec![answer(&["one"]), answer(&["two"])]).await;
    let (closed_pids, deleted_pids) = (h.cwd.join("closed.pid"), h.cwd.join("deleted.pid"));
    let closed = h.session_with(vec![escaping("fx", &closed_pids)]).await;
    let deleted = h.session_with(vec![escaping("fx", &deleted_pids)]).await;
    h.client.prompt(&closed, "hi").await.unwrap();
    h.client.prompt(&deleted, "hi").await.unwrap();
    let pids = [escaped_pid(&closed_pids).await, escaped_pid(&deleted_pids).await];
    assert!(pids.iter().all(|pid| tinycode::shell::process::running(*pid)), "both grandchildren run");
    assert_ne!(
        tinycode::shell::tree::group(pids[0]),
        tinycode::shell::tree::group(std::process::id() as i32)
    );
    h.client.call(acp::CloseSessionRequest::new(closed.clone())).await.unwrap();
    let death = std::time::Duration::from_secs(3);
    assert_eq!(crate::support::trees::survivors(&pids[..1], death).await, Vec::<i32>::new(), "after close");
    h.client.call(acp::DeleteSessionRequest::new(deleted.clone())).await.unwrap();
    assert_eq!(crate::support::trees::survivors(&pids[1..], death).await, Vec::<i32>::new(), "after delete");
}
