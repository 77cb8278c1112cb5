//! LSP diagnostics after edits, through ACP, with the fake language server of `support/fake_lsp.py` started as
//! the project's (trusted) `[lsp.rust]` server: a server that publishes, one that crashes, one that never answers.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};
use tinycode::acp::trust::{NOT_NOW, TRUST};

use super::turn::{finished, stop, tool_result};
use crate::support::client::{Answer, Harness, PATIENCE, Setup};
use crate::support::fake_model::{Reply, answer, calls};

fn fake_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake_lsp.py")
}

/// A harness whose project runs the fake server in `mode` for Rust files, logging to `<root>/lsp.log`.
async fn start(mode: &str, timeout_ms: u64, script: Vec<Reply>) -> (Harness, PathBuf, tempfile::TempDir) {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("lsp.log");
    let config = format!(
        "[lsp]\ntimeout_ms = {timeout_ms}\n[lsp.rust]\ncommand = [\"python3\", {:?}, {mode:?}, {:?}]\n",
        fake_server().display().to_string(),
        log.display().to_string()
    );
    let h = Setup::new(script).config(&config).trusted().start().await;
    (h, log, logs)
}

/// The fake server's log, one JSON value per line.
fn entries(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Wait (bounded) until the log satisfies `done`.
async fn wait_log(log: &Path, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let wait = async {
        loop {
            let all = entries(log);
            if done(&all) {
                return all;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("log never got there: {:#?}", entries(log)))
}

fn write(id: &str, path: &Path, content: &str) -> (String, String, String) {
    (id.into(), "write".into(), json!({"file_path": path, "content": content}).to_string())
}

fn turns(steps: Vec<(String, String, String)>) -> Vec<Reply> {
    let mut replies: Vec<Reply> =
        steps.iter().map(|(a, b, c)| calls(&[(a.as_str(), b.as_str(), c.as_str())])).collect();
    replies.push(answer(&["done"]));
    replies
}

fn tools_offered(h: &Harness) -> Vec<String> {
    h.model.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_edit_result_carries_the_new_errors_of_the_file_and_of_other_files() {
    let (h, log, _logs) = start("publish", 5_000, vec![]).await;
    let lib = h.cwd.join("src/lib.rs");
    let first = "fn a() {}\nlet x = 1; // ERROR: mismatched types\n// WARN: unused\n";
    let edit = json!({"file_path": lib, "old_string": "mismatched types", "new_string": "cannot find value"})
        .to_string();
    h.model.script(vec![
        calls(&[("w", "write", &json!({"file_path": lib, "content": first}).to_string())]),
        calls(&[("e", "edit", &edit)]),
        answer(&["done"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "write it").await.unwrap()), json!("end_turn"));

    let other = "LSP errors detected in other files:\n<diagnostics file=\"src/other.rs\">\nERROR [1:1] unresolved import\n</diagnostics>";
    assert_eq!(
        tool_result(&h.model.messages(1), "w"),
        format!(
            "Created {} (3 lines).\n\nLSP errors detected in this file, please fix:\n<diagnostics file=\"src/lib.rs\">\nERROR [2:15] [E1] mismatched types\n</diagnostics>\n{other}",
            lib.display()
        )
    );
    let edited = tool_result(&h.model.messages(2), "e");
    assert!(
        edited.ends_with(&format!(
            "<diagnostics file=\"src/lib.rs\">\nERROR [2:15] [E1] cannot find value\n</diagnostics>\n{other}"
        )),
        "{edited}"
    );
    let card = finished(&h.client.updates(&session), "e");
    assert_eq!(card["content"][0]["type"], "diff");
    assert_eq!(
        card["content"][1]["content"]["text"].as_str().unwrap(),
        edited.split_once("\n\nLSP errors").map(|(_, b)| format!("LSP errors{b}")).unwrap()
    );
    assert!(tools_offered(&h).contains(&"diagnostics".to_string()));

    let methods: Vec<Value> = entries(&log).into_iter().filter(|e| e.get("start").is_none()).collect();
    assert_eq!(
        methods[..9].to_vec(),
        vec![
            json!({"got": "initialize"}),
            json!({"response": "s1", "result": [null, null], "error": null}),
            json!({"response": "s2", "result": null, "error": null}),
            json!({"response": "s3", "result": null, "error": null}),
            json!({"response": "s4", "result": null, "error": {"code": -32601, "message": "method not supported: custom/unknown"}}),
            json!({"got": "initialized"}),
            json!({"got": "textDocument/didOpen"}),
            json!({"got": "textDocument/didSave"}),
            json!({"got": "textDocument/didChange"}),
        ]
    );
    assert_eq!(methods[9], json!({"got": "textDocument/didSave"}));

    // Closing the session shuts the server down politely.
    h.client.call(acp::CloseSessionRequest::new(session)).await.unwrap();
    let all = wait_log(&log, |all| all.iter().any(|e| e.get("got") == Some(&json!("exit")))).await;
    let tail: Vec<&Value> = all.iter().rev().take(2).collect();
    assert_eq!(tail, vec![&json!({"got": "exit"}), &json!({"got": "shutdown"})]);
}

#[tokio::test]
async fn a_crashing_server_is_reported_once_and_not_started_again() {
    let (h, log, _logs) = start("crash", 5_000, vec![]).await;
    let (a, b) = (h.cwd.join("a.rs"), h.cwd.join("b.rs"));
    h.model.script(turns(vec![write("w1", &a, "fn a() {}\n"), write("w2", &b, "fn b() {}\n")]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "write").await.unwrap();
    let first = tool_result(&h.model.messages(1), "w1");
    let stopped = regex::Regex::new(r"stopped \(exited with status 3: fake crash: boom\)").unwrap();
    assert_eq!(
        stopped.replace(&first, "stopped (…)"),
        format!(
            "Created {} (1 lines).\n\nLSP: The rust language server `python3` stopped (…). LSP diagnostics for rust are off for the rest of this session.",
            a.display()
        )
    );
    assert_eq!(tool_result(&h.model.messages(2), "w2"), format!("Created {} (1 lines).", b.display()));
    let starts = entries(&log).iter().filter(|e| e.get("start").is_some()).count();
    assert_eq!(starts, 1, "a broken server is not started again");
}

#[tokio::test]
async fn a_server_that_never_answers_costs_an_edit_at_most_the_wait_budget() {
    let (h, log, _logs) = start("silent", 300, vec![]).await;
    let file = h.cwd.join("main.rs");
    h.model.script(turns(vec![write("w", &file, "fn main() {}\n")]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "write").await.unwrap()), json!("end_turn"));
    assert_eq!(
        tool_result(&h.model.messages(1), "w"),
        format!(
            "Created {} (1 lines).\n\nLSP: The rust language server is still starting: diagnostics are pending (ask with the diagnostics tool later).",
            file.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn main() {}\n");
    // The server got the initialize request (it never answered), and is stopped with the session.
    wait_log(&log, |all| all.iter().any(|e| e.get("got") == Some(&json!("initialize")))).await;
    let pid = entries(&log)[0]["start"].as_i64().unwrap() as i32;
    h.client.call(acp::CloseSessionRequest::new(session)).await.unwrap();
    let gone = async {
        while tinycode::shell::process::running(pid) {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(PATIENCE, gone).await.expect("the silent server is killed with the session");
}

#[tokio::test]
async fn the_diagnostics_tool_lists_a_files_current_diagnostics_of_every_severity() {
    let (h, _log, _logs) = start("publish", 5_000, vec![]).await;
    let file = h.write("src/lib.rs", "// ERROR: broken\n// WARN: <careful>\n");
    let ask = json!({"file_paths": [file]}).to_string();
    h.model.script(turns(vec![("d".into(), "diagnostics".into(), ask)]));
    let session = h.session().await;
    h.client.prompt(&session, "check").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "d"),
        "src/lib.rs:\n  L1:4 error E1: broken\n  L2:4 warning E1: &lt;careful&gt;"
    );
}

#[tokio::test]
async fn without_lsp_settings_no_server_starts_and_the_diagnostics_tool_is_not_offered() {
    let h = Harness::start(vec![]).await;
    let file = h.cwd.join("a.rs");
    h.model.script(turns(vec![write("w", &file, "fn a() {}\n")]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "write").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "w"), format!("Created {} (1 lines).", file.display()));
    assert!(!tools_offered(&h).contains(&"diagnostics".to_string()));
    assert!(tools_offered(&h).contains(&"discover".to_string()));
}

#[tokio::test]
async fn an_untrusted_project_cannot_start_a_language_server() {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("lsp.log");
    let config = format!(
        "[lsp.rust]\ncommand = [\"python3\", {:?}, \"publish\", {:?}]\n",
        fake_server().display().to_string(),
        log.display().to_string()
    );
    let h = Setup::new(vec![]).config(&config).start().await;
    let file = h.cwd.join("a.rs");
    h.model.script(turns(vec![write("w", &file, "// ERROR: x\n")]));
    h.client.answer_permissions(&[Answer::Option(NOT_NOW), Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client
        .wait_log("the trust question", |log| {
            log.permission_requests.lock().unwrap().iter().any(|r| r.options[0].option_id.0.as_ref() == TRUST)
        })
        .await;
    h.client.prompt(&session, "write").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "w"), format!("Created {} (1 lines).", file.display()));
    assert!(!log.exists(), "the server never ran");
}
