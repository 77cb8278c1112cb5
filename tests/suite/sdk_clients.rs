//! The binary driven by the official ACP SDK clients (TypeScript `@agentclientprotocol/sdk`, Python
//! `agent-client-protocol`) through the scripts in `tests/clients/`: a full session with read and edit tool calls,
//! a permission ask, a cancel while a command runs and a `session/load` in a second process, against the fake
//! model. Enabled by `TINYCODE_SDK_CLIENTS=1` (set by `.ci/run`, which installs the pinned SDKs and points
//! `TINYCODE_SDK_TS_DIR` at the npm install and `TINYCODE_SDK_PYTHON` at the venv's python); skipped otherwise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

use crate::support::fake_model::{FakeModel, answer, calls};

/// What both clients print for the session, in the order the Python client prints it.
const TRANSCRIPT: &str = include_str!("../clients/transcript.txt");

/// The transcript's lines, sorted. The TypeScript SDK runs notification handlers concurrently with the resolution
/// of request promises (so a prompt's answer may print before its last updates); the comparison is therefore of
/// every line and its count, not of the order, which `protocol/scenarios` checks frame by frame.
fn lines(transcript: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = transcript.lines().collect();
    lines.sort_unstable();
    lines
}

fn enabled(name: &str) -> bool {
    let on = std::env::var("TINYCODE_SDK_CLIENTS").is_ok_and(|v| v == "1");
    if !on {
        eprintln!("skipped: the {name} SDK client runs only with TINYCODE_SDK_CLIENTS=1 (as .ci/run sets)");
    }
    on
}

fn binary() -> PathBuf {
    std::env::var_os("TINYCODE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_tinycode").into()).into()
}

/// Run `program args` as a client in a fresh session directory against the scripted model; its stdout.
async fn run_client(program: &Path, args: &[&Path]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let cwd = root.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("notes.txt"), "alpha\n").unwrap();
    let notes = cwd.join("notes.txt").display().to_string();
    let model = FakeModel::start(vec![
        calls(&[("call_read", "read", &format!(r#"{{"file_path": "{notes}"}}"#))]),
        calls(&[(
            "call_edit",
            "edit",
            &format!(r#"{{"file_path": "{notes}", "old_string": "alpha", "new_string": "beta"}}"#),
        )]),
        answer(&["Edited the notes."]),
        calls(&[("call_sleep", "bash", r#"{"command": "sleep 30", "description": "Wait"}"#)]),
        answer(&["Still here."]),
    ])
    .await;
    model.set_models(None);
    let output = Command::new(program)
        .args(args)
        .arg(binary())
        .arg(&cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &root)
        .env("XDG_CONFIG_HOME", root.join("config"))
        .env("TINYCODE_DATA_DIR", root.join("data"))
        .env("TINYCODE_BASE_URL", &model.base_url)
        .env("TINYCODE_MODEL", "fake-model")
        .current_dir(&cwd)
        .kill_on_drop(true)
        .output();
    let output =
        tokio::time::timeout(Duration::from_secs(120), output).await.expect("client timed out").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "client failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    model.assert_done();
    stdout
}

fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

#[tokio::test]
async fn the_typescript_sdk_client_runs_a_full_session_with_asks_cancel_and_load() {
    if !enabled("TypeScript") {
        return;
    }
    let dir =
        PathBuf::from(std::env::var("TINYCODE_SDK_TS_DIR").expect("TINYCODE_SDK_TS_DIR: the npm install"));
    // The script is copied next to the install so `import` finds the pinned SDK in its node_modules.
    let script = dir.join("session.mjs");
    std::fs::copy(scripts().join("ts/session.mjs"), &script).unwrap();
    let transcript = run_client(Path::new("node"), &[&script]).await;
    assert_eq!(lines(&transcript), lines(TRANSCRIPT), "transcript:\n{transcript}");
}

#[tokio::test]
async fn the_python_sdk_client_runs_a_full_session_with_asks_cancel_and_load() {
    if !enabled("Python") {
        return;
    }
    let python =
        PathBuf::from(std::env::var("TINYCODE_SDK_PYTHON").expect("TINYCODE_SDK_PYTHON: the venv's python"));
    let transcript = run_client(&python, &[&scripts().join("python/session.py")]).await;
    assert_eq!(lines(&transcript), lines(TRANSCRIPT), "transcript:\n{transcript}");
}
