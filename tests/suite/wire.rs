//! What the editor sends cannot take the agent down: unreadable lines (invalid UTF-8, broken JSON, over-long)
//! are answered with bounded errors and serving goes on; mistyped params are `-32602` naming the field; an
//! unreadable answer fails only the request it answers.

use serde_json::{Value, json};

use super::turn::{stop, tool_result};
use crate::support::client::Harness;
use crate::support::fake_model::{answer, calls};
use crate::support::raw::RawAgent;

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
}

#[tokio::test]
async fn every_invalid_utf8_frame_gets_a_parse_error_for_its_id_and_the_agent_keeps_serving() {
    let mut agent = RawAgent::start(vec![]).await;
    for id in 0..230u64 {
        let mut frame = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x"#).into_bytes();
        let at = frame.len();
        frame.extend_from_slice(b"\xff\"}");
        agent.send(&frame).await;
        let answer = agent.recv().await;
        assert_eq!(answer["id"], id);
        assert_eq!(answer["error"]["code"], -32700);
        assert_eq!(answer["error"]["data"]["reason"], format!("invalid UTF-8 at byte {at}"));
    }
    agent.send(b"\xff\xfe garbage without an id").await;
    let answer = agent.recv().await;
    assert_eq!((&answer["id"], &answer["error"]["code"]), (&Value::Null, &json!(-32700)));
    agent.send_json(initialize(1000)).await;
    assert_eq!(agent.recv().await["result"]["agentInfo"]["name"], "tinycode");
    agent.close().await.unwrap();
}

#[tokio::test]
async fn a_line_over_64_mib_is_refused_for_its_id_and_the_next_line_is_served() {
    let mut agent = RawAgent::start(vec![]).await;
    let text = "a".repeat(tinycode::acp::lines::MAX_LINE_BYTES);
    let frame = json!({"jsonrpc": "2.0", "id": 9, "method": "session/prompt", "params": {"sessionId": "s", "prompt": [{"type": "text", "text": text}]}}).to_string();
    agent.send(frame.as_bytes()).await;
    agent.send_json(initialize(10)).await;
    let refused = agent.recv().await;
    assert_eq!(refused["id"], 9);
    assert_eq!(refused["error"]["code"], -32600);
    assert_eq!(
        refused["error"]["data"]["reason"],
        format!("the line is {} bytes long; the limit is 67108864 bytes", frame.len())
    );
    assert!(refused.to_string().len() < 2048, "the answer stays small");
    assert_eq!(agent.recv().await["id"], 10);
    agent.close().await.unwrap();
}

#[tokio::test]
async fn mistyped_params_are_invalid_params_naming_the_field_and_change_nothing() {
    let mut agent = RawAgent::start(vec![]).await;
    let answer =
        agent.call(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {"fs": 5}})).await;
    assert_eq!(
        answer["error"],
        json!({"code": -32602, "message": "Invalid params: `clientCapabilities.fs` must be an object, got 5", "data": {"field": "clientCapabilities.fs"}})
    );
    let answer = agent
        .call(2, "initialize", json!({"protocolVersion": 1, "clientInfo": {"name": "zed", "version": 2}}))
        .await;
    assert_eq!(answer["error"]["data"], json!({"field": "clientInfo.version"}));
    let answer = agent
        .call(
            3,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}),
        )
        .await;
    assert_eq!(answer["result"]["protocolVersion"], 1);
    let answer = agent.call(4, "session/list", json!([])).await;
    assert_eq!(answer["error"]["message"], "Invalid params: `params` must be an object, got []");
    let cwd = agent.cwd.clone();
    let answer = agent.call(5, "session/new", json!({"cwd": cwd, "mcpServers": null})).await;
    assert!(answer["result"]["sessionId"].as_str().unwrap().starts_with("sess_"), "{answer}");
    assert_eq!(agent.call(6, "session/list", json!({})).await["result"]["sessions"], json!([]));
    agent.close().await.unwrap();
}

#[tokio::test]
async fn an_unreadable_answer_to_a_file_read_fails_that_read_and_the_turn_goes_on() {
    let mut agent = RawAgent::start(vec![
        calls(&[("r1", "read", r#"{"file_path": "notes.txt"}"#)]),
        answer(&["read it"]),
    ])
    .await;
    std::fs::write(agent.cwd.join("notes.txt"), "on disk\n").unwrap();
    agent
        .call(
            1,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}),
        )
        .await;
    let cwd = agent.cwd.clone();
    let session =
        agent.call(2, "session/new", json!({"cwd": cwd, "mcpServers": []})).await["result"]["sessionId"]
            .clone();
    agent.send_json(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}})).await;
    let mut reads = 0;
    let done = loop {
        let frame = agent.recv_answer().await;
        if frame["method"] == "fs/read_text_file" {
            reads += 1;
            let mut reply =
                format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":"on disk"#, frame["id"])
                    .into_bytes();
            reply.extend_from_slice(b" \xff\"}}");
            agent.send(&reply).await;
            continue;
        }
        break frame;
    };
    assert_eq!(done["id"], 3);
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert_eq!(reads, 1);
    // Only "method not found" may fall back to disk: an answer that cannot be read fails the read.
    assert_eq!(
        tool_result(&agent.model.messages(1), "r1"),
        format!("Error: the editor could not read {}: Parse error", cwd.join("notes.txt").display())
    );
    agent.close().await.unwrap();
}

#[tokio::test]
async fn a_huge_glob_pattern_or_grep_include_is_refused_and_the_turn_goes_on() {
    let stars = "*".repeat(100_000);
    // Past the limits, yet small enough to stay in the fake model's context window.
    let include = "a".repeat(100_000);
    let h = Harness::start(vec![
        // One call per response: together they would pass the default output cap of about 32,000 tokens.
        calls(&[("g1", "glob", &json!({"pattern": stars}).to_string())]),
        calls(&[("g2", "grep", &json!({"pattern": "x", "include": include}).to_string())]),
        calls(&[("g3", "grep", &json!({"pattern": "y".repeat(20_000)}).to_string())]),
        answer(&["ok"]),
    ])
    .await;
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "search").await.unwrap()), json!("end_turn"));
    let messages = h.model.messages(3);
    assert_eq!(
        tool_result(&messages, "g1"),
        "the glob pattern is 100000 bytes long; the limit is 4096 bytes"
    );
    assert_eq!(
        tool_result(&messages, "g2"),
        "the glob pattern is 100000 bytes long; the limit is 4096 bytes"
    );
    assert_eq!(tool_result(&messages, "g3"), "the pattern is 20000 bytes long; the limit is 16384 bytes");
    h.model.assert_done();
}

#[tokio::test]
async fn the_answer_to_an_unreadable_line_never_falls_behind_the_answers_to_later_lines() {
    // A small pipe keeps the agent's writer behind, so answers queue up and the order between them shows.
    let mut agent = RawAgent::with_pipe(vec![], 64).await;
    for round in 0..100u64 {
        for id in [3 * round, 3 * round + 1] {
            let mut broken = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x"#).into_bytes();
            broken.push(0xff);
            agent.send(&broken).await;
        }
        agent.send_json(json!({"jsonrpc": "2.0", "id": 3 * round + 2, "method": "no/such_method"})).await;
    }
    let mut order = Vec::new();
    for _ in 0..300 {
        order.push(agent.recv().await["id"].as_u64().unwrap());
    }
    // Requests are answered when they finish, so a broken line's answer may overtake an earlier request's; it
    // must never fall behind the answer to a line read after it.
    let at = |id: u64| order.iter().position(|&o| o == id).unwrap();
    for round in 0..100u64 {
        assert!(at(3 * round + 1) < at(3 * round + 2), "{order:?}");
    }
    agent.close().await.unwrap();
}
