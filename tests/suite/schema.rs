//! The ACP schema the frame checker uses: it is the one the pinned schema crate generates, and the checker
//! catches what it must (wrong types, unknown fields outside `_meta`, unknown methods, undocumented extensions).

use serde_json::{Value, json};

use crate::support::schema::{From, SCHEMA, Tap, generate, schema_file};

#[test]
fn the_kept_acp_schema_is_the_one_the_pinned_schema_crate_generates() {
    let generated = serde_json::to_string_pretty(&generate()).unwrap() + "\n";
    let path = schema_file();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e}; UPDATE_SNAPSHOTS=1 writes it after a schema crate upgrade", path.display())
    });
    assert!(kept == generated, "{} is stale; UPDATE_SNAPSHOTS=1 rewrites it", path.display());
    let stale: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && *p != path)
        .collect();
    assert!(stale.is_empty(), "schemas of other versions are kept: {stale:?}");
}

fn problems(frames: &[(From, Value)]) -> Vec<String> {
    let tap = Tap::default();
    for (from, frame) in frames {
        tap.line(*from, &frame.to_string());
    }
    tap.violations()
}

fn initialize() -> (From, Value) {
    (
        From::Client,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}, "_meta": {"anything": [1, 2]}}}}),
    )
}

#[test]
fn valid_frames_in_both_directions_pass_with_anything_under_meta() {
    let frames = [
        initialize(),
        (
            From::Agent,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}, "authMethods": [], "_meta": {"x": {"y": 1}}}}),
        ),
        (
            From::Agent,
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "messageId": "m"}}}),
        ),
        (
            From::Agent,
            json!({"jsonrpc": "2.0", "id": "r1", "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/a"}}),
        ),
        (From::Client, json!({"jsonrpc": "2.0", "id": "r1", "result": {"content": "x"}})),
        (From::Client, json!({"jsonrpc": "2.0", "id": 5, "method": "session/cancel_nope", "params": {}})),
        (
            From::Agent,
            json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "Method not found"}}),
        ),
    ];
    assert_eq!(
        problems(&frames),
        vec![format!(
            "Client sent {}\n  session/cancel_nope is not a agent method of the schema",
            frames[5].1
        )]
    );
}

#[test]
fn an_unknown_field_outside_meta_is_a_violation_at_any_depth() {
    let extra_top = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "colour": "red"}});
    let extra_deep = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi", "bold": true}}}});
    let extra_envelope = json!({"jsonrpc": "2.0", "method": "session/update", "trace": 1, "params": {"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": 1, "size": 2}}});
    let found = problems(&[
        initialize(),
        (From::Agent, extra_top),
        (From::Agent, extra_deep),
        (From::Agent, extra_envelope),
    ]);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].ends_with("result/colour: a field the schema does not know"), "{}", found[0]);
    assert!(
        found[1].ends_with("params/update/content/bold: a field the schema does not know"),
        "{}",
        found[1]
    );
    assert!(found[2].ends_with("/trace: a field the schema does not know"), "{}", found[2]);
}

#[test]
fn a_wrong_type_or_a_missing_field_is_a_violation() {
    let wrong = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": "many", "size": 2}}});
    let missing = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"mcpServers": []}});
    let found = problems(&[(From::Agent, wrong), (From::Client, missing)]);
    assert_eq!(found.len(), 2, "{found:#?}");
}

#[test]
fn extension_methods_must_be_documented_in_the_protocol_readme() {
    let found = problems(&[(
        From::Client,
        json!({"jsonrpc": "2.0", "id": 1, "method": "_nobody/documents_this", "params": {}}),
    )]);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].ends_with("extension method _nobody/documents_this is not documented in protocol/README.md")
    );
}

#[test]
fn the_schema_knows_every_method_tinycode_answers() {
    for method in [
        "initialize",
        "session/new",
        "session/load",
        "session/resume",
        "session/list",
        "session/close",
        "session/delete",
        "session/set_config_option",
        "session/set_mode",
        "session/prompt",
        "session/cancel",
    ] {
        let frame = json!({"jsonrpc": "2.0", "method": method});
        let found = problems(&[(From::Client, frame)]);
        assert!(found.iter().all(|p| !p.contains("is not a agent method")), "{method}: {found:?}");
    }
    assert!(
        SCHEMA
            .check(
                "#/$defs/Error",
                &json!({"code": -32002, "message": "Session not found", "data": {"sessionId": "s"}})
            )
            .is_empty()
    );
}

#[tokio::test]
async fn the_test_client_checks_the_frames_of_a_whole_turn_in_both_directions() {
    use crate::support::client::Harness;
    use crate::support::fake_model::answer;
    let h = Harness::start(vec![answer(&["hi"])]).await;
    let session = h.session().await;
    h.client.prompt(&session, "hello").await.unwrap();
    // initialize and session/new (request and answer each), the prompt and its answer, and the updates between.
    let count = h.client.frames.count.load(std::sync::atomic::Ordering::Relaxed);
    assert!(count >= 7, "only {count} frames were checked");
    assert_eq!(h.client.frames.violations(), Vec::<String>::new());
}
