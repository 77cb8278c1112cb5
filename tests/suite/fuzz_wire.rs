//! Fuzzing the JSON-RPC line reader and everything behind it: random bytes, mutated real frames (cut, bytes
//! flipped, invalid UTF-8) and well-formed frames with random ids and params, each followed by a probe request.
//! Every frame gets at most one answer, well-formed, for its own id or `null`, with unreadable-line `data` of
//! at most 1 KB; the probe is always answered, so the agent is still serving; the binary ends cleanly at EOF.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::binary::Env;
use crate::support::fake_model::FakeModel;
use crate::support::fuzz::{corpus, fuzz, json_value, sample};
use crate::support::raw::{Raw, RawAgent};

/// Generated frames run in process (the corpus comes on top).
const FRAMES: u32 = 5_000;
/// Frames sent to the real binary.
const BINARY_FRAMES: usize = 500;

const METHODS: &[&str] = &[
    "initialize",
    "session/new",
    "session/load",
    "session/resume",
    "session/list",
    "session/close",
    "session/delete",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "session/set_config_option",
    "authenticate",
    "fs/read_text_file",
    "$/cancel_request",
    "",
    "x\u{0}y",
];

/// Real frames to mutate.
fn templates() -> Vec<Vec<u8>> {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}, "clientInfo": {"name": "zed", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/nonexistent/dir", "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": "s", "method": "session/list", "params": {"cursor": "abc"}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": "sess_none", "prompt": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}}),
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "sess_none"}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "session/set_config_option", "params": {"sessionId": "sess_none", "configId": "mode", "value": "plan"}}),
        json!({"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}),
        json!({"jsonrpc": "2.0", "id": 8, "error": {"code": -32603, "message": "boom"}}),
    ]
    .iter()
    .map(|frame| frame.to_string().into_bytes())
    .collect()
}

fn id() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        "[a-z0-9-]{0,8}".prop_map(Value::from),
        Just(Value::Null),
        json_value(1),
    ]
}

/// One frame (never containing a newline).
fn frame() -> impl Strategy<Value = Vec<u8>> {
    let templates = templates();
    let mutated = (proptest::sample::select(templates), any::<prop::sample::Index>(), any::<u8>(), 0..4u8)
        .prop_map(|(mut bytes, at, byte, how)| {
            let at = at.index(bytes.len());
            match how {
                0 => bytes.truncate(at),
                1 => bytes[at] = byte,
                2 => bytes.insert(at, 0x80 | byte),
                _ => bytes.splice(at..at, [0xf0, 0x9f]).for_each(drop),
            }
            bytes
        });
    let structured = (proptest::sample::select(METHODS), id(), json_value(3), any::<bool>()).prop_map(
        |(method, id, params, notification)| {
            let mut frame = json!({"jsonrpc": "2.0", "method": method, "params": params});
            if !notification {
                frame["id"] = id;
            }
            frame.to_string().into_bytes()
        },
    );
    let answers = (id(), json_value(2), any::<bool>()).prop_map(|(id, value, ok)| {
        let outcome = if ok { "result" } else { "error" };
        json!({"jsonrpc": "2.0", "id": id, outcome: value}).to_string().into_bytes()
    });
    prop_oneof![
        2 => proptest::collection::vec(any::<u8>(), 0..160),
        3 => mutated,
        3 => structured,
        1 => answers,
        1 => json_value(3).prop_map(|v| v.to_string().into_bytes()),
    ]
    .prop_map(|mut bytes| {
        bytes.iter_mut().filter(|b| **b == b'\n').for_each(|b| *b = b' ');
        bytes
    })
}

/// The id a frame's sender expects an answer for, when it reads as JSON with one.
fn sent_id(frame: &[u8]) -> Option<Value> {
    let value: Value = serde_json::from_slice(frame).ok()?;
    value.get("id").filter(|id| id.is_i64() || id.is_u64() || id.is_string()).cloned()
}

/// Send one frame and a probe; check what came back before the probe's answer.
async fn exchange(raw: &mut Raw, frame: &[u8], probe: u64) -> Result<(), String> {
    raw.send(frame).await;
    let probe_id = json!(format!("probe-{probe}"));
    raw.send_json(json!({"jsonrpc": "2.0", "id": probe_id, "method": "fuzz/probe"})).await;
    let mut answers = Vec::new();
    loop {
        let reply = raw.recv().await;
        if reply["id"] == probe_id {
            break;
        }
        if reply.get("method").is_none() {
            answers.push(reply);
        }
    }
    if answers.len() > 1 {
        return Err(format!("{} answers to one frame: {answers:?}", answers.len()));
    }
    let Some(answer) = answers.pop() else { return Ok(()) };
    let object = answer.as_object().ok_or("an answer that is not an object")?;
    if object.contains_key("result") == object.contains_key("error") {
        return Err(format!("an answer needs exactly one of result and error: {answer}"));
    }
    let code = answer["error"]["code"].as_i64();
    if matches!(code, Some(-32700 | -32600)) {
        let data = answer["error"]["data"].to_string();
        if data.len() > tinycode::acp::frames::MAX_DATA_BYTES {
            return Err(format!("error data of {} bytes", data.len()));
        }
    }
    match sent_id(frame) {
        Some(id) if answer["id"] != id && !answer["id"].is_null() => {
            Err(format!("answered {} for id {id}", answer["id"]))
        }
        _ => Ok(()),
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = corpus("frames")
        .into_iter()
        .flat_map(|(_, bytes)| bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect::<Vec<_>>())
        .collect();
    seeds.extend(templates());
    seeds
}

#[test]
fn fuzzed_frames_each_get_at_most_one_well_formed_answer_and_the_agent_keeps_serving() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let agent = std::cell::RefCell::new(runtime.block_on(RawAgent::start(vec![])));
    let probes = std::cell::Cell::new(0u64);
    let initialized =
        runtime.block_on(agent.borrow_mut().call(0, "initialize", json!({"protocolVersion": 1})));
    assert_eq!(initialized["result"]["protocolVersion"], 1);
    let ran = fuzz("frames", seeds(), FRAMES, frame(), |bytes| {
        probes.set(probes.get() + 1);
        runtime.block_on(exchange(&mut agent.borrow_mut(), &bytes, probes.get()))
    });
    assert!(ran >= u64::from(FRAMES));
    let answer = runtime.block_on(agent.borrow_mut().call(1, "initialize", json!({"protocolVersion": 1})));
    assert_eq!(answer["result"]["agentInfo"]["name"], "tinycode");
    runtime.block_on(agent.into_inner().close()).unwrap();
}

#[tokio::test]
async fn the_binary_answers_hundreds_of_malformed_frames_then_a_valid_initialize_and_exits_cleanly() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let mut child = env.command(&model, &["acp"]).spawn().unwrap();
    // Keep stderr flowing: a full pipe would block the agent's logging.
    let mut stderr = child.stderr.take().unwrap();
    tokio::spawn(async move { tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await });
    let mut raw = Raw::over(child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let frames = sample(&frame(), BINARY_FRAMES);
    for (probe, bytes) in frames.iter().enumerate() {
        if let Err(e) = exchange(&mut raw, bytes, probe as u64).await {
            panic!("{e}\nframe: {}", String::from_utf8_lossy(bytes));
        }
    }
    let answer = raw.call(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    assert_eq!(answer["result"]["agentInfo"]["name"], "tinycode");
    eprintln!("fuzz binary frames: {} frames, 0 failures", frames.len());
    drop(raw);
    let status = tokio::time::timeout(crate::support::client::PATIENCE, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}");
}
