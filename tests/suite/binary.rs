//! The real `tinycode` binary over stdio: a whole session through the SDK client, raw JSON-RPC robustness,
//! stdout hygiene, exit on stdin EOF, and the headless `tinycode run`.

use std::process::Stdio;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{ByteStreams, Client};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::support::client::PATIENCE;
use crate::support::fake_model::{FakeModel, answer, calls, status};
use crate::support::schema::{From, Tap, tap};
use crate::support::trees;

/// How long killed processes get to disappear from the process table.
const DEATH: Duration = Duration::from_secs(3);

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
        // CI points `TINYCODE_BIN` at the release build to run these against what users get.
        let binary =
            std::env::var_os("TINYCODE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_tinycode").into());
        let mut command = Command::new(binary);
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
    let frames = std::sync::Arc::new(Tap::default());
    let (stdin, stdout) = tap(child.stdin.take().unwrap(), child.stdout.take().unwrap(), frames.clone());
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
    // Streamed text is coalesced on a timer, so the chunks are compared joined.
    let text: String = updates
        .lock()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "Hi from the binary");
    let status = wait_exit(&mut child).await;
    let mut logs = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut logs).await.unwrap();
    assert!(status.success(), "{status:?}; stderr:\n{logs}");
    model.assert_done();
    frames.assert_valid();
    // The next start has no log to read back: it grew by every session, and every start read it all.
    let log = std::fs::metadata(env.dir.path().join("data/tinycode.db-wal")).map(|m| m.len());
    assert_eq!(log.unwrap_or(0), 0, "the database's log is folded in at exit");
}

thread_local! {
    /// The stderr of the last binary spawned through [`Raw`] on this thread.
    static LOGS: std::cell::RefCell<Option<std::sync::Arc<std::sync::Mutex<Vec<u8>>>>> = const { std::cell::RefCell::new(None) };
}

/// Raw JSON-RPC lines to and from the binary, each checked against the ACP schema as it passes.
struct Raw {
    child: Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    frames: Tap,
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
        Raw { child, stdin, stdout, frames: Tap::default() }
    }

    /// What the last binary spawned on this thread wrote to stderr so far.
    fn logs() -> String {
        let logs = LOGS.with(|l| l.borrow().clone()).unwrap();
        String::from_utf8_lossy(&logs.lock().unwrap()).into_owned()
    }

    async fn send(&mut self, line: &str) {
        self.frames.line(From::Client, line);
        self.frames.assert_valid();
        self.send_unchecked(line).await;
    }

    /// Send a line that breaks the protocol on purpose.
    async fn send_unchecked(&mut self, line: &str) {
        self.stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line()).await.unwrap().unwrap().unwrap();
        self.frames.line(From::Agent, &line);
        self.frames.assert_valid();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"))
    }
}

#[tokio::test]
async fn a_garbage_line_gets_a_parse_error_and_the_agent_keeps_serving() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let mut raw = Raw::spawn(env.command(&model, &["acp"]));
    raw.send_unchecked("this is not json").await;
    assert_eq!(
        raw.recv().await,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error", "data": {"reason": "expected ident at line 1 column 2", "line": "this is not json"}}})
    );
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#).await;
    let init = raw.recv().await;
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"],
        json!({"image": false, "audio": false, "embeddedContext": true}),
        "images only when the default model takes them (fake-model is not known to)"
    );
    assert_eq!(init["result"]["authMethods"], json!([]));
    raw.send_unchecked(r#"{"jsonrpc":"2.0","id":2,"method":"no/such_method","params":{}}"#).await;
    assert_eq!(
        raw.recv().await,
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "Method not found", "data": "no/such_method"}})
    );
    raw.send_unchecked(r#"{"jsonrpc":"2.0","method":"_unknown/notification","params":{}}"#).await;
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

/// Read lines until the answer to request `last`, returning the answers (not the notifications) in order.
async fn answers_until(raw: &mut Raw, last: u64) -> Vec<Value> {
    let mut answers = Vec::new();
    loop {
        let line = raw.recv().await;
        if line.get("method").is_some() {
            continue;
        }
        let done = line["id"] == last;
        answers.push(line);
        if done {
            return answers;
        }
    }
}

#[tokio::test]
async fn lines_sent_with_the_first_initialize_are_served_after_it_and_it_is_answered_once_as_the_sdk_would() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let mut raw = Raw::spawn(env.command(&model, &["acp"]));
    let initialize = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"terminal": true}}}).to_string()
    };
    let new = json!({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": env.cwd(), "mcpServers": []}});
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {}});
    // One write, before any answer is read: the agent reads them together. The first is answered by the stdin
    // reader before the SDK runs; the repeat (allowed before any other request) is the SDK's own answer.
    for line in [initialize(1), initialize(2), new.to_string(), list.to_string()] {
        raw.frames.line(From::Client, &line);
    }
    raw.send_unchecked(&format!("{}\n{}\n{new}\n{list}", initialize(1), initialize(2))).await;
    let answers = answers_until(&mut raw, 4).await;
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [1, 2, 3, 4], "each request answered once, in order: {answers:#?}");
    assert_eq!(answers[0]["result"], answers[1]["result"], "the early answer is the SDK's");
    assert!(answers[2]["result"]["sessionId"].as_str().unwrap().starts_with("sess_"), "{:?}", answers[2]);
    assert!(answers[3]["result"]["sessions"].is_array(), "{:?}", answers[3]);
    drop(raw.stdin);
    assert!(wait_exit(&mut raw.child).await.success(), "{}", Raw::logs());
}

#[tokio::test]
async fn the_first_session_new_is_answered_before_the_sdk_runs_and_names_the_session_then_built_and_stored() {
    let env = Env::new();
    let model = FakeModel::start(vec![answer(&["Hi"])]).await;
    let log = env.dir.path().join("agent.log");
    let mut command = env.command(&model, &["acp"]);
    command.env("RUST_LOG", "tinycode::acp::handlers=debug").env("TINYCODE_LOG_FILE", &log);
    let mut raw = Raw::spawn(command);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#).await;
    assert_eq!(raw.recv().await["id"], 1);
    let cwd = env.cwd();
    raw.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}).to_string()).await;
    let new = raw.recv().await;
    assert_eq!(new["id"], 2, "{new}");
    let id = new["result"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(new["result"]["modes"]["currentModeId"], "build");
    let models: Vec<&Value> =
        new["result"]["configOptions"].as_array().unwrap().iter().map(|o| &o["currentValue"]).collect();
    assert_eq!(models, [&json!("build"), &json!("fake-model")]);
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}});
    raw.send(&prompt.to_string()).await;
    let mut answers = answers_until(&mut raw, 3).await;
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {}});
    raw.send(&list.to_string()).await;
    answers.extend(answers_until(&mut raw, 4).await);
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [3, 4], "the SDK's own answer to session/new never reaches the editor: {answers:#?}");
    assert_eq!(answers[0]["result"]["stopReason"], "end_turn", "{:?}", answers[0]);
    let listed: Vec<(&Value, &Value)> = answers[1]["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (&s["sessionId"], &s["cwd"]))
        .collect();
    assert_eq!(listed, [(&json!(id), &json!(cwd))]);
    drop(raw.stdin);
    assert!(wait_exit(&mut raw.child).await.success(), "{}", Raw::logs());
    model.assert_done();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains(&format!("session/new answered early session={id}")), "{logged}");
}

#[tokio::test]
async fn a_mistyped_first_initialize_gets_the_sdks_error_and_a_good_one_after_it_is_answered() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let mut raw = Raw::spawn(env.command(&model, &["acp"]));
    raw.send_unchecked(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":true}}}"#).await;
    let refused = raw.recv().await;
    assert_eq!((&refused["id"], &refused["error"]["code"]), (&json!(1), &json!(-32602)), "{refused}");
    assert_eq!(refused["error"]["data"], json!({"field": "clientCapabilities.fs"}));
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#).await;
    assert_eq!(raw.recv().await["result"]["agentInfo"]["name"], "tinycode");
    drop(raw.stdin);
    assert!(wait_exit(&mut raw.child).await.success(), "{}", Raw::logs());
}

#[tokio::test]
async fn invalid_utf8_and_a_ten_megabyte_garbage_line_get_small_errors_and_the_binary_keeps_serving() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let mut raw = Raw::spawn(env.command(&model, &["acp"]));
    let mut frame = br#"{"jsonrpc":"2.0","id":1,"method":"x"#.to_vec();
    frame.extend_from_slice(b"\xff\"}\n");
    raw.stdin.write_all(&frame).await.unwrap();
    let answer = raw.recv().await;
    assert_eq!((&answer["id"], &answer["error"]["code"]), (&json!(1), &json!(-32700)));
    let garbage = "garbage ".repeat(10 * 1024 * 1024 / 8);
    raw.stdin.write_all(format!("{garbage}\n").as_bytes()).await.unwrap();
    let line = tokio::time::timeout(PATIENCE, raw.stdout.next_line()).await.unwrap().unwrap().unwrap();
    assert!(line.len() < 1500, "the error frame is {} bytes", line.len());
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!((&answer["id"], &answer["error"]["code"]), (&Value::Null, &json!(-32700)));
    assert_eq!(answer["error"]["data"]["truncated"], true);
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#).await;
    assert_eq!(raw.recv().await["result"]["agentInfo"]["name"], "tinycode");
    drop(raw.stdin);
    let status = wait_exit(&mut raw.child).await;
    assert!(status.success(), "{status:?}; stderr:\n{}", Raw::logs());
}

#[tokio::test]
async fn the_agent_exits_cleanly_when_the_editor_closes_stdout_before_stdin() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let mut raw = Raw::spawn(env.command(&model, &["acp"]));
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#).await;
    assert_eq!(raw.recv().await["id"], 1);
    let Raw { mut child, mut stdin, stdout, .. } = raw;
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

/// The binary brings its own C `main` (no Rust runtime start), so what that start did for the standard streams
/// is its own job: a stream the editor left closed must not become the next file the agent opens.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_closed_stderr_is_reopened_on_dev_null_before_the_agent_opens_any_file() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let mut command = env.command(&model, &["acp"]);
    command.stderr(Stdio::null());
    // SAFETY: only `close`, async-signal-safe, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::close(2);
            Ok(())
        })
    };
    let mut raw = Raw::spawn(command);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#).await;
    assert_eq!(raw.recv().await["id"], 1);
    let cwd = env.cwd();
    let new = json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd": cwd,"mcpServers":[]}});
    raw.send(&new.to_string()).await;
    assert!(raw.recv().await["result"]["sessionId"].as_str().unwrap().starts_with("sess_"));
    let pid = raw.child.id().unwrap();
    let stderr = std::fs::read_link(format!("/proc/{pid}/fd/2"));
    assert_eq!(stderr.ok(), Some(std::path::PathBuf::from("/dev/null")));
    drop(raw.stdin);
    assert!(wait_exit(&mut raw.child).await.success());
}

/// Built with `crt-static` (.cargo/config.toml, x86_64 Linux), as this test is, the binary must need no dynamic
/// loader at all: a static link that still names an interpreter crashes at its first instruction.
#[cfg(all(target_os = "linux", target_feature = "crt-static"))]
#[test]
fn the_binary_is_linked_statically_and_names_no_interpreter() {
    let binary = std::env::var_os("TINYCODE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_tinycode").into());
    let elf = std::fs::read(binary).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    let at = |offset: usize, width: usize| {
        elf[offset..offset + width].iter().rev().fold(0usize, |value, &byte| value << 8 | usize::from(byte))
    };
    let (table, entry_size, entries) = (at(0x20, 8), at(0x36, 2), at(0x38, 2));
    let kinds: Vec<usize> = (0..entries).map(|i| at(table + i * entry_size, 4)).collect();
    const PT_DYNAMIC: usize = 2;
    const PT_INTERP: usize = 3;
    assert!(!kinds.contains(&PT_INTERP), "program header types: {kinds:?}");
    assert!(!kinds.contains(&PT_DYNAMIC), "program header types: {kinds:?}");
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
        "error: Model request failed: the model provider rejected the credentials (HTTP 401): bad key; fix the key: set TINYCODE_API_KEY.\n"
    );
}

/// Start the binary with `command` and run one prompt whose tool calls are all allowed; returns once the prompt
/// has answered. The connection stays open until the returned sender is dropped.
async fn drive_binary(
    mut command: Command,
) -> (Child, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let mut child = command.spawn().unwrap();
    let frames = std::sync::Arc::new(Tap::default());
    let (stdin, stdout) = tap(child.stdin.take().unwrap(), child.stdout.take().unwrap(), frames.clone());
    let cwd = command.as_std().get_current_dir().unwrap().to_path_buf();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let (answered_tx, answered_rx) = tokio::sync::oneshot::channel::<()>();
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
                    vec![acp::ContentBlock::Text(acp::TextContent::new("go"))],
                );
                cx.send_request(prompt).block_task().await?;
                let _ = answered_tx.send(());
                let _ = done_rx.await;
                Ok(())
            })
            .await;
        frames.assert_valid();
    });
    tokio::time::timeout(PATIENCE, answered_rx).await.expect("the prompt was answered").unwrap();
    (child, done_tx, driver)
}

/// Start the binary and have the model start every kind of escaping process tree as a background task; returns
/// the binary, the members' pids and the client (which closes stdin when it ends).
async fn binary_with_background_trees(
    env: &Env,
    model: &FakeModel,
) -> (Child, Vec<i32>, tokio::task::JoinHandle<()>) {
    let pidfile = env.cwd().join("tree.pids");
    model.script(vec![
        calls(&[(
            "bg",
            "bash",
            &json!({"command": trees::script(&pidfile), "background": true}).to_string(),
        )]),
        answer(&["started"]),
    ]);
    let (child, done, driver) = drive_binary(env.command(model, &["acp"])).await;
    let pids = trees::pids(&pidfile).await;
    assert_eq!(trees::survivors(&pids, Duration::ZERO).await, pids, "the whole tree runs");
    drop(done);
    (child, pids, driver)
}

#[tokio::test]
async fn no_process_outlives_the_binary_after_stdin_eof() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let (mut child, pids, driver) = binary_with_background_trees(&env, &model).await;
    driver.await.unwrap();
    assert!(wait_exit(&mut child).await.success());
    assert_eq!(trees::survivors(&pids, DEATH).await, Vec::<i32>::new());
}

#[tokio::test]
async fn no_process_outlives_the_binary_after_sigterm() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let (mut child, pids, _driver) = binary_with_background_trees(&env, &model).await;
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGTERM) };
    assert!(wait_exit(&mut child).await.success());
    assert_eq!(trees::survivors(&pids, DEATH).await, Vec::<i32>::new());
}

#[tokio::test]
async fn no_process_outlives_the_binary_after_kill_9() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let (mut child, pids, _driver) = binary_with_background_trees(&env, &model).await;
    child.start_kill().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&wait_exit(&mut child).await),
        Some(libc::SIGKILL)
    );
    // Nothing of the agent ran after SIGKILL: the supervisors saw their parent die and cleared their trees.
    assert_eq!(trees::survivors(&pids, DEATH).await, Vec::<i32>::new());
}

#[tokio::test]
async fn commands_never_see_provider_keys_or_secret_looking_variables() {
    let env = Env::new();
    let model = FakeModel::start(vec![
        calls(&[(
            "e",
            "bash",
            &json!({"command": "cat /proc/self/environ | tr '\\0' '\\n' | sort"}).to_string(),
        )]),
        answer(&["seen"]),
    ])
    .await;
    let mut command = env.command(&model, &["acp"]);
    command
        .env("OPENAI_API_KEY", "sk-openai")
        .env("GITHUB_TOKEN", "ghp-token")
        .env("AWS_SECRET_ACCESS_KEY", "aws-secret")
        .env("PGPASSWORD", "pg-password")
        .env("KEYBOARD_LAYOUT", "us")
        .env("TOKENIZERS_PARALLELISM", "false")
        .env("PATH", std::env::var("PATH").unwrap());
    let (mut child, done, driver) = drive_binary(command).await;
    drop(done);
    driver.await.unwrap();
    assert!(wait_exit(&mut child).await.success());
    let seen = crate::suite::turn::tool_result(&model.messages(1), "e");
    let names: Vec<&str> = seen.lines().filter_map(|l| l.split_once('=').map(|(n, _)| n)).collect();
    assert_eq!(
        names,
        vec![
            "GIT_PAGER",
            "GIT_TERMINAL_PROMPT",
            "HOME",
            "KEYBOARD_LAYOUT",
            "NO_COLOR",
            "PAGER",
            "PATH",
            "PWD",
            "TERM",
            "TINYCODE_BASE_URL",
            "TINYCODE_DATA_DIR",
            "TINYCODE_MODEL",
            "TOKENIZERS_PARALLELISM",
            "XDG_CONFIG_HOME",
        ],
        "{seen}"
    );
    for secret in ["test-key", "sk-openai", "ghp-token", "aws-secret", "pg-password"] {
        assert!(!seen.contains(secret), "{secret} leaked: {seen}");
    }
}

#[tokio::test]
async fn the_binary_runs_the_editors_mcp_server_without_provider_keys_and_leaves_nothing_behind_on_exit() {
    use crate::support::client::{Answer, TestClient};
    let env = Env::new();
    let model = FakeModel::start(vec![
        calls(&[("p", "mcp__fx__pid", "{}")]),
        calls(&[("k", "mcp__fx__env", r#"{"name": "TINYCODE_API_KEY"}"#)]),
        calls(&[("g", "mcp__fx__env", r#"{"name": "FX_TOKEN"}"#)]),
        answer(&["ok"]),
    ])
    .await;
    let mut child = env.command(&model, &["acp"]).spawn().unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let client = TestClient::over(stdin, stdout, None).await;
    client.initialize(acp::ClientCapabilities::new()).await;
    client.answer_permissions(&[
        Answer::Pick(acp::PermissionOptionKind::AllowOnce),
        Answer::Pick(acp::PermissionOptionKind::AllowAlways),
    ]);
    let server = crate::support::mcp::stdio("fx", &["--ignore-eof"], &[("FX_TOKEN", "given")]);
    let session = client.new_session_with(&env.cwd(), vec![server]).await;
    client.prompt(&session, "which pid?").await.unwrap();
    let result = super::turn::tool_result(&model.messages(1), "p");
    let pids: Vec<i32> = result.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert_eq!(pids.len(), 2, "{result}");
    assert!(pids.iter().all(|pid| tinycode::shell::process::running(*pid)));
    assert_eq!(
        super::turn::tool_result(&model.messages(2), "k"),
        "(unset)",
        "the provider key stays with tinycode"
    );
    assert_eq!(super::turn::tool_result(&model.messages(3), "g"), "given", "the server's own env is passed");
    client.close().await.unwrap();
    assert!(wait_exit(&mut child).await.success());
    assert_eq!(trees::survivors(&pids, DEATH).await, Vec::<i32>::new());
}

#[tokio::test]
async fn a_provider_error_that_repeats_the_key_reaches_neither_the_editor_nor_the_log() {
    const KEY: &str = "sk-live-4f9a8b7c6d5e3a2b";
    let env = Env::new();
    let echo = |code: u16| {
        let body = json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error"}});
        status(code, body, &[("retry-after", "0")])
    };
    let model = FakeModel::start(vec![echo(503), echo(401)]).await;
    let mut command = env.command(&model, &["acp"]);
    command.env("TINYCODE_API_KEY", KEY);
    let mut child = command.spawn().unwrap();
    let frames = std::sync::Arc::new(Tap::default());
    let (stdin, stdout) = tap(child.stdin.take().unwrap(), child.stdout.take().unwrap(), frames.clone());
    let cwd = env.cwd();
    let failed = Client
        .v1()
        .connect_with(ByteStreams::new(stdin.compat_write(), stdout.compat()), async move |cx| {
            cx.send_request(acp::InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let session = cx.send_request(acp::NewSessionRequest::new(cwd)).block_task().await?;
            let prompt = acp::PromptRequest::new(
                session.session_id,
                vec![acp::ContentBlock::Text(acp::TextContent::new("hi"))],
            );
            Ok(cx.send_request(prompt).block_task().await.map(|_| ()))
        })
        .await
        .unwrap();
    let error = failed.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the model provider rejected the credentials (HTTP 401): Incorrect API key provided: [redacted]; fix the key: set TINYCODE_API_KEY."
    );
    wait_exit(&mut child).await;
    let mut logs = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut logs).await.unwrap();
    assert!(!logs.contains(KEY), "{logs}");
    assert!(logs.contains("Incorrect API key provided: [redacted]"), "the retry was logged: {logs}");
    model.assert_done();
}
