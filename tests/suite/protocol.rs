//! Plays the executable transcripts in `protocol/scenarios/` against the real binary (or the agent named by
//! `ACP_AGENT_CMD`), frame by frame; `PROTOCOL_RECORD=1` rewrites them from their sends instead.

use std::path::PathBuf;

use serde_json::json;

use crate::support::scenario::{self, Transport, Vars, matches, matches_any_order};

fn scenarios() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protocol/scenarios");
    let filter = std::env::var("ACP_SCENARIOS").unwrap_or_default();
    let mut found = Vec::new();
    for profile in std::fs::read_dir(root).unwrap() {
        for file in std::fs::read_dir(profile.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonl") && path.display().to_string().contains(&filter)
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Record every scenario (`PROTOCOL_RECORD=1`), write it back, and replay what was written.
async fn record_all(all: &[PathBuf]) {
    for path in all {
        let text = scenario::record(path).await.unwrap_or_else(|e| panic!("recording failed: {e}"));
        std::fs::write(path, text).unwrap();
        eprintln!("recorded {}", path.display());
    }
}

#[tokio::test]
async fn every_protocol_scenario_plays_frame_by_frame_against_the_binary() {
    let all = scenarios();
    if std::env::var("ACP_SCENARIOS").is_err() {
        assert!(all.len() >= 30, "{all:?}");
    }
    if std::env::var("PROTOCOL_RECORD").is_ok_and(|v| !v.is_empty()) {
        assert!(scenario::external_agent().is_none(), "record against tinycode only");
        record_all(&all).await;
    }
    let mut failures = Vec::new();
    for path in &all {
        if let Err(e) = scenario::replay(path, Transport::Stdio).await {
            failures.push(format!("FAIL {}\n{e}", path.display()));
        }
    }
    if let Some(agent) = scenario::external_agent() {
        eprintln!("conformance of `{agent}`: {} of {} scenarios pass", all.len() - failures.len(), all.len());
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
}

#[tokio::test]
async fn every_protocol_scenario_plays_the_same_over_websocket_through_serve() {
    if scenario::external_agent().is_some() {
        return;
    }
    let all = scenarios();
    let mut failures = Vec::new();
    for path in &all {
        if let Err(e) = scenario::replay(path, Transport::WebSocket).await {
            failures.push(format!("FAIL {}\n{e}", path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed over WebSocket:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_scenario_matcher_is_strict_about_keys_and_values() {
    let mut vars = Vars::new();
    let expected = json!({"a": "<capture:x>", "b": [1, "<any>"]});
    assert!(matches(&expected, &json!({"a": "id1", "b": [1, {"z": 0}]}), &mut vars, "t").is_ok());
    assert_eq!(vars["x"], "id1");
    assert!(matches(&expected, &json!({"a": 1, "b": [1, 2], "c": 3}), &mut vars, "t").is_err());
    assert!(matches(&expected, &json!({"a": 1, "b": [2, 2]}), &mut vars, "t").is_err());
    assert!(matches(&expected, &json!({"a": 1, "b": [1]}), &mut vars, "t").is_err());
    let mut vars = Vars::from([("x".to_string(), json!("id1"))]);
    assert!(matches(&json!({"a": "{x}/p"}), &json!({"a": "id1/p"}), &mut vars, "t").is_ok());
    assert!(matches(&json!({"a": "{x}/p"}), &json!({"a": "id2/p"}), &mut vars, "t").is_err());
}

#[test]
fn a_set_of_frames_matches_in_any_order_but_each_frame_only_once() {
    let expected = [json!({"id": 1, "s": "<capture:s>"}), json!({"method": "m", "n": "{s}"})];
    let mut vars = Vars::new();
    let got = [json!({"method": "m", "n": "{s}"}), json!({"id": 1, "s": "abc"})];
    // The notification arrived first: it names `{s}` literally here, so it cannot take the capture's place.
    assert!(matches_any_order(&expected, &got, &mut vars, "t").is_ok());
    let mut vars = Vars::new();
    let twice = [json!({"id": 1, "s": "abc"}), json!({"id": 1, "s": "abd"})];
    assert!(matches_any_order(&expected, &twice, &mut vars, "t").is_err());
    let mut vars = Vars::new();
    let ordered = [json!({"id": 1, "s": "abc"}), json!({"method": "m", "n": "abc"})];
    assert!(matches_any_order(&expected, &ordered, &mut vars, "t").is_ok());
    assert_eq!(vars["s"], "abc");
}
