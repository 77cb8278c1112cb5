//! Plays the executable transcripts in `protocol/scenarios/` against the real binary, frame by frame.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::support::client::PATIENCE;
use crate::support::fake_model::{FakeModel, Reply};
use crate::support::schema::{From, Tap};

fn substitute(text: &str, vars: &BTreeMap<String, String>) -> String {
    vars.iter().fold(text.to_string(), |text, (name, value)| text.replace(&format!("{{{name}}}"), value))
}

/// Whole-value comparison with `<any>` and `<capture:name>` wildcards.
fn matches(
    expected: &Value,
    actual: &Value,
    vars: &mut BTreeMap<String, String>,
    at: &str,
) -> Result<(), String> {
    match (expected, actual) {
        (Value::String(e), _) if e == "<any>" => Ok(()),
        (Value::String(e), _) if e.starts_with("<capture:") => {
            let name = e.trim_start_matches("<capture:").trim_end_matches('>');
            let value = actual.as_str().map(String::from).unwrap_or_else(|| actual.to_string());
            vars.insert(name.to_string(), value);
            Ok(())
        }
        (Value::Object(e), Value::Object(a)) => {
            let (ek, ak): (Vec<_>, Vec<_>) = (e.keys().collect(), a.keys().collect());
            if ek.iter().collect::<std::collections::BTreeSet<_>>() != ak.iter().collect() {
                return Err(format!("{at}: keys differ: expected {ek:?}, got {ak:?}"));
            }
            e.iter().try_for_each(|(k, v)| matches(v, &a[k], vars, &format!("{at}.{k}")))
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            e.iter().zip(a).enumerate().try_for_each(|(i, (e, a))| matches(e, a, vars, &format!("{at}[{i}]")))
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!("{at}: expected {expected}, got {actual}")),
    }
}

fn reply(value: &Value) -> Reply {
    if let Some(events) = value.get("sse") {
        return Reply::Sse(events.as_array().unwrap().clone());
    }
    Reply::Status {
        code: value["status"].as_u64().unwrap() as u16,
        headers: vec![],
        body: value["body"].to_string(),
    }
}

async fn play(scenario: &Path) {
    let name = scenario.display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut vars = BTreeMap::from([("cwd".to_string(), cwd.display().to_string())]);
    let text = std::fs::read_to_string(scenario).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut replies = Vec::new();
    for line in &lines {
        let value: Value = serde_json::from_str(&substitute(line, &vars)).unwrap();
        if let Some(files) = value.get("files").and_then(Value::as_object) {
            for (rel, content) in files {
                let path = cwd.join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, content.as_str().unwrap()).unwrap();
            }
        }
        if let Some(model) = value.get("model").and_then(Value::as_array) {
            replies.extend(model.iter().map(reply));
        }
    }
    let model = FakeModel::start(replies).await;
    // The model list would arrive at a racy moment as a `config_option_update`; scenarios run without one.
    model.set_models(None);
    let mut child = Command::new(env!("CARGO_BIN_EXE_tinycode"))
        .arg("acp")
        .env_clear()
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("TINYCODE_DATA_DIR", dir.path().join("data"))
        .env("TINYCODE_BASE_URL", &model.base_url)
        .env("TINYCODE_MODEL", "fake-model")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    // Every frame is checked against the ACP schema, except `send_raw` lines (broken on purpose).
    let tap = Tap::default();
    for (n, line) in lines.iter().enumerate() {
        let value: Value = serde_json::from_str(&substitute(line, &vars)).unwrap();
        let at = format!("{name}:{}", n + 1);
        if let Some(frame) = value.get("send") {
            tap.line(From::Client, &frame.to_string());
            stdin.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
        } else if let Some(raw) = value.get("send_raw").and_then(Value::as_str) {
            stdin.write_all(format!("{raw}\n").as_bytes()).await.unwrap();
        } else if let Some(expected) = value.get("recv") {
            let got = tokio::time::timeout(PATIENCE, stdout.next_line())
                .await
                .unwrap_or_else(|_| panic!("{at}: no frame"));
            let got = got.unwrap().unwrap();
            tap.line(From::Agent, &got);
            let got: Value = serde_json::from_str(&got).unwrap();
            if let Err(e) = matches(expected, &got, &mut vars, &at) {
                panic!("{e}\nframe: {got}");
            }
        }
        stdin.flush().await.unwrap();
    }
    drop(stdin);
    let status = tokio::time::timeout(PATIENCE, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{name}: agent exited with {status:?}");
    tap.assert_valid();
    model.assert_done();
}

fn scenarios() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protocol/scenarios");
    let mut found = Vec::new();
    for profile in std::fs::read_dir(root).unwrap() {
        for file in std::fs::read_dir(profile.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[tokio::test]
async fn every_protocol_scenario_plays_frame_by_frame_against_the_binary() {
    let all = scenarios();
    assert!(all.len() >= 3, "{all:?}");
    for scenario in all {
        play(&scenario).await;
    }
}

#[test]
fn the_scenario_matcher_is_strict_about_keys_and_values() {
    let mut vars = BTreeMap::new();
    let expected = serde_json::json!({"a": "<capture:x>", "b": [1, "<any>"]});
    assert!(matches(&expected, &serde_json::json!({"a": "id1", "b": [1, {"z": 0}]}), &mut vars, "t").is_ok());
    assert_eq!(vars["x"], "id1");
    assert!(matches(&expected, &serde_json::json!({"a": 1, "b": [1, 2], "c": 3}), &mut vars, "t").is_err());
    assert!(matches(&expected, &serde_json::json!({"a": 1, "b": [2, 2]}), &mut vars, "t").is_err());
    assert!(matches(&expected, &serde_json::json!({"a": 1, "b": [1]}), &mut vars, "t").is_err());
}
