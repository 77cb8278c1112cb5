//! The real `tinycode` binary over stdio: a whole session through the SDK client, raw JSON-RPC robustness,
//! stdout hygiene, exit on stdin EOF, and the headless `tinycode run`.

use std::path::Path;
use std::process::Stdio;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{ByteStreams, Client};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::support::client::PATIENCE;
use crate::support::fake_model::{FakeModel, answer, calls, status};

pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("config/tinycode")).unwrap();
        std::fs::write(
            dir.path().join("config/tinycode/config.toml"),
            "[retry]\nmax_retries = 1\ninitial_backoff_ms = 1\n",
        )
        .unwrap();
        Env { dir }
    }

    pub fn cwd(&self) -> std::path::PathBuf {
        self.dir.path().join("work")
    }

    pub fn command(&self, model: &FakeModel, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tinycode"));
        command
            .args(args)
            .env_clear()
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("TINYCODE_DATA_DIR", self.dir.path().join("data"))
            .env("TINYCODE_BASE_URL", &model.base_url)
            .env("TINYCODE_API_KEY", "test-key")
            .env("TINYCODE_MODEL", "fake-model")
            .current_dir(self.cwd())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }
}

async fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    tokio::time::timeout(PATIENCE, child.wait()).await.expect("the agent did not exit").unwrap()
}

#[tokio::test]
async fn the_binary_completes_a_session_over_stdio_and_exits_cleanly_on_stdin_eof() {
    let env = Env::new();
    let model = FakeModel::start(vec![answer(&["Hi from ", "the binary"])]).await;
    let mut child = env.command(&model, &["acp"]).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let updates = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = updates.clone();
    let cwd = env.cwd();
    let stop = Client
        .v1()
        .on_receive_notification(
            async move |n: acp::SessionNotification, _cx| {
                seen.lock().unwrap().push(serde_json::to_value(&n.update).unwrap());
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(ByteStreams::new(stdin.compat_write(), stdout.compat()), async move |cx| {
            let init = cx.send_request(acp::InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            assert_eq!(init.agent_info.unwrap().name, "tinycode");
            let session = cx.send_request(acp::NewSessionRequest::new(cwd)).block_task().await?;
            let prompt = acp::PromptRequest::new(
                session.session_id,
                vec![acp::ContentBlock::Text(acp::TextContent::new("hi"))],
            );
            Ok(cx.send_request(prompt).block_task().await?.stop_reason)
        })
        .await
        .unwrap();
    assert_eq!(stop, acp::StopReason::EndTurn);
    let texts: Vec<String> = updates
        .lock()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, vec!["Hi from ", "the binary"]);
    let status = wait_exit(&mut child).await;
    let mut logs = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut logs).await.unwrap();
    assert!(status.success(), "{status:?}; stderr:\n{logs}");
    model.assert_done();
}

thread_local! {
    /// The stderr of the last binary spawned through [`Raw`] on this thread.
    static LOGS: std::cell::RefCell<Option<std::sync::Arc<std::sync::Mutex<Vec<u8>>>>> = const { std::cell::RefCell::new(None) };
}

/// Raw JSON-RPC lines to and from the binary.
struct Raw {
    child: Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Raw {
    fn spawn(mut command: Command) -> Raw {
        let mut child = command.spawn().unwrap();
        // Keep stderr flowing so verbose logging can never block the agent.
        if let Some(mut stderr) = child.stderr.take() {
            let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            LOGS.with(|l| *l.borrow_mut() = Some(logs.clone()));
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt;
                let mut buffer = [0u8; 8192];
                while let Ok(n) = stderr.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    logs.lock().unwrap().extend_from_slice(&buffer[..n]);
                }
            });
        }
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Raw { child, stdin, stdout }
    }

    /// What the last binary spawned on this thread wrote to stderr so far.
    fn logs() -> String {
        let logs = LOGS.with(|l| l.borrow().clone()).unwrap();
        String::from_utf8_lossy(&logs.lock().unwrap()).into_owned()
    }

    async fn send(&mut self, line: &str) {
        self.stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"))
    }
}

#[tokio::test]
async fn a_garbage_line_gets_a_parse_error_and_the_agent_keeps_serving() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let mut raw = Raw::spawn(env.command(&model, &["acp"]));
    raw.send("this is not json").await;
    assert_eq!(
        raw.recv().await,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error", "data": {"line": "this is not json"}}})
    );
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#).await;
    let init = raw.recv().await;
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"],
        json!({"image": true, "audio": false, "embeddedContext": true})
    );
    assert_eq!(init["result"]["authMethods"], json!([]));
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"no/such_method","params":{}}"#).await;
    assert_eq!(
        raw.recv().await,
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "Method not found", "data": "no/such_method"}})
    );
    raw.send(r#"{"jsonrpc":"2.0","method":"_unknown/notification","params":{}}"#).await;
    raw.send(
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_x","prompt":[]}}"#,
    )
    .await;
    let unknown = raw.recv().await;
    assert_eq!(unknown["error"]["code"], -32002);
    let cwd = env.cwd();
    raw.send(
        &json!({"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd": cwd,"mcpServers":[]}})
            .to_string(),
    )
    .await;
    assert!(raw.recv().await["result"]["sessionId"].as_str().unwrap().starts_with("sess_"));
    drop(raw.stdin);
    assert!(wait_exit(&mut raw.child).await.success());
}

#[tokio::test]
async fn the_agent_exits_cleanly_when_the_editor_closes_stdout_before_stdin() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let mut raw = Raw::spawn(env.command(&model, &["acp"]));
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#).await;
    assert_eq!(raw.recv().await["id"], 1);
    let Raw { mut child, mut stdin, stdout } = raw;
    drop(stdout);
    let cwd = env.cwd();
    for id in 2..5 {
        let frame =
            json!({"jsonrpc":"2.0","id":id,"method":"session/new","params":{"cwd": cwd,"mcpServers":[]}});
        stdin.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
    }
    drop(stdin);
    let status = wait_exit(&mut child).await;
    assert!(status.success(), "{status:?}; stderr:\n{}", Raw::logs());
}

#[tokio::test]
async fn stdout_carries_only_json_rpc_even_with_verbose_logging() {
    let env = Env::new();
    let model = FakeModel::start(vec![answer(&["ok"])]).await;
    let mut command = env.command(&model, &["acp"]);
    command.env("RUST_LOG", "trace");
    let mut raw = Raw::spawn(command);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#).await;
    raw.recv().await;
    let cwd = env.cwd();
    raw.send(
        &json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd": cwd,"mcpServers":[]}})
            .to_string(),
    )
    .await;
    let session = raw.recv().await["result"]["sessionId"].clone();
    raw.send(&json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId": session,"prompt":[{"type":"text","text":"hi"}]}}).to_string()).await;
    let mut frames = Vec::new();
    loop {
        let frame = raw.recv().await;
        let done = frame["id"] == 3;
        frames.push(frame);
        if done {
            break;
        }
    }
    assert!(frames.iter().all(|f| f["jsonrpc"] == "2.0"));
    assert_eq!(frames.last().unwrap()["result"], json!({"stopReason": "end_turn"}));
    drop(raw.stdin);
    assert!(wait_exit(&mut raw.child).await.success());
    let logs = LOGS.with(|l| l.borrow().clone()).unwrap();
    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(logs.contains("session/new"), "logs go to stderr: {logs}");
}

pub async fn run_headless(
    env: &Env,
    model: &FakeModel,
    args: &[&str],
) -> (std::process::ExitStatus, String, String) {
    let mut command = env.command(model, args);
    command.stdin(Stdio::null());
    let output = tokio::time::timeout(PATIENCE, command.output()).await.unwrap().unwrap();
    (
        output.status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn tinycode_run_prints_the_answer_to_stdout_and_tool_calls_to_stderr() {
    let env = Env::new();
    std::fs::write(env.cwd().join("notes.txt"), "remember the milk\n").unwrap();
    let path = std::fs::canonicalize(env.cwd()).unwrap().join("notes.txt");
    let model = FakeModel::start(vec![
        calls(&[("r", "read", &json!({"file_path": path}).to_string())]),
        answer(&["It says: remember the milk."]),
    ])
    .await;
    let (status, stdout, stderr) =
        run_headless(&env, &model, &["run", "what", "do", "my", "notes", "say?"]).await;
    assert!(status.success(), "{status:?} {stderr}");
    assert_eq!(stdout, "It says: remember the milk.\n");
    assert_eq!(stderr, "• Read notes.txt\n✓ Read notes.txt\n");
    assert_eq!(model.messages(0)[1]["content"], "what do my notes say?");
}

#[tokio::test]
async fn tinycode_run_exits_non_zero_with_the_cause_when_the_provider_fails() {
    let env = Env::new();
    let model = FakeModel::start(vec![status(401, json!({"error": {"message": "bad key"}}), &[])]).await;
    let (status, stdout, stderr) = run_headless(&env, &model, &["run", "hi"]).await;
    assert_eq!(status.code(), Some(1));
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "error: Model request failed: the model provider rejected the credentials (HTTP 401): bad key. Check TINYCODE_API_KEY (or OPENAI_API_KEY) and TINYCODE_BASE_URL.\n"
    );
}

#[tokio::test]
async fn the_command_line_explains_itself_and_rejects_unknown_usage() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let (status, _, stderr) = run_headless(&env, &model, &["frobnicate"]).await;
    assert_eq!(status.code(), Some(2));
    assert!(stderr.starts_with("tinycode: a coding agent"), "{stderr}");
    let (status, _, stderr) = run_headless(&env, &model, &["run"]).await;
    assert_eq!(status.code(), Some(2));
    assert!(stderr.starts_with("error: run needs a prompt"), "{stderr}");
    let (status, _, stderr) = run_headless(&env, &model, &["--version"]).await;
    assert!(status.success());
    assert_eq!(stderr, format!("tinycode {}\n", env!("CARGO_PKG_VERSION")));
    let _ = Path::new("");
}

/// Start the binary, have the model start a background command that records its pid, and return both.
async fn binary_with_background_task(
    env: &Env,
    model: &FakeModel,
) -> (Child, i32, tokio::task::JoinHandle<()>) {
    let mut child = env.command(model, &["acp"]).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let cwd = env.cwd();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let driver = tokio::spawn(async move {
        let _ = Client
            .v1()
            .on_receive_request(
                async move |request: acp::RequestPermissionRequest, responder, _cx| {
                    let allow = request
                        .options
                        .iter()
                        .find(|o| o.kind == acp::PermissionOptionKind::AllowOnce)
                        .unwrap()
                        .option_id
                        .clone();
                    responder.respond(acp::RequestPermissionResponse::new(
                        acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(allow)),
                    ))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(ByteStreams::new(stdin.compat_write(), stdout.compat()), async move |cx| {
                cx.send_request(acp::InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
                let session = cx.send_request(acp::NewSessionRequest::new(cwd)).block_task().await?;
                let prompt = acp::PromptRequest::new(
                    session.session_id,
                    vec![acp::ContentBlock::Text(acp::TextContent::new("serve"))],
                );
                cx.send_request(prompt).block_task().await?;
                let _ = started_tx.send(());
                let _ = done_rx.await;
                Ok(())
            })
            .await;
    });
    started_rx.await.unwrap();
    let pidfile = env.cwd().join("server.pid");
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    drop(done_tx);
    (child, pid, driver)
}

fn background_script(env: &Env) -> Vec<crate::support::fake_model::Reply> {
    let pidfile = env.cwd().join("server.pid");
    let command = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
    vec![
        calls(&[("bg", "bash", &json!({"command": command, "background": true}).to_string())]),
        calls(&[(
            "w",
            "shell_output",
            &json!({"task_id": "task_1", "wait": "pattern", "pattern": "never", "timeout": 300}).to_string(),
        )]),
        answer(&["started"]),
    ]
}

async fn assert_gone(pid: i32) {
    let gone = async {
        while tinycode::shell::process::running(pid) {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(3), gone)
        .await
        .unwrap_or_else(|_| panic!("process {pid} outlived the agent"));
}

#[tokio::test]
async fn no_process_outlives_the_binary_after_stdin_eof() {
    let env = Env::new();
    let model = FakeModel::start(background_script(&env)).await;
    let (mut child, pid, driver) = binary_with_background_task(&env, &model).await;
    assert!(tinycode::shell::process::running(pid));
    driver.await.unwrap();
    assert!(wait_exit(&mut child).await.success());
    assert_gone(pid).await;
}

#[tokio::test]
async fn no_process_outlives_the_binary_after_sigterm() {
    let env = Env::new();
    let model = FakeModel::start(background_script(&env)).await;
    let (mut child, pid, _driver) = binary_with_background_task(&env, &model).await;
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGTERM) };
    assert!(wait_exit(&mut child).await.success());
    assert_gone(pid).await;
}

#[tokio::test]
async fn the_binary_runs_the_editors_mcp_server_and_leaves_nothing_behind_on_exit() {
    use crate::support::client::{Answer, TestClient};
    let env = Env::new();
    let model = FakeModel::start(vec![calls(&[("p", "mcp__fx__pid", "{}")]), answer(&["ok"])]).await;
    let mut child = env.command(&model, &["acp"]).spawn().unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let client = TestClient::over(stdin, stdout, None).await;
    client.initialize(acp::ClientCapabilities::new()).await;
    client.answer_permissions(&[Answer::Pick(acp::PermissionOptionKind::AllowOnce)]);
    let server = crate::support::mcp::stdio("fx", &["--ignore-eof"], &[]);
    let session = client.new_session_with(&env.cwd(), vec![server]).await;
    client.prompt(&session, "which pid?").await.unwrap();
    let result = super::turn::tool_result(&model.messages(1), "p");
    let pids: Vec<i32> = result.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert_eq!(pids.len(), 2, "{result}");
    assert!(pids.iter().all(|pid| tinycode::shell::process::running(*pid)));
    client.close().await.unwrap();
    assert!(wait_exit(&mut child).await.success());
    for pid in pids {
        assert_gone(pid).await;
    }
}
