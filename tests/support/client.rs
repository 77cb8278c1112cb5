//! An in-process ACP client over duplex pipes, driving the real agent (`tinycode::acp::serve_with`). It records
//! every `session/update`, answers permission asks from a script, and lets tests wait for conditions without
//! sleeping.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Agent, ByteStreams, Client, Error};
use serde_json::Value;
use tinycode::config::Sources;
use tinycode::session::Manager;
use tinycode::tool::Registry;
use tokio::sync::{oneshot, watch};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::fake_model::{FakeModel, Reply};

/// Longest a test waits for something before failing with the transcript.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// How the test client answers `session/request_permission`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The first option of this kind.
    Pick(acp::PermissionOptionKind),
    /// The option with this id.
    Option(&'static str),
    Cancelled,
    /// Answer with a JSON-RPC error.
    Fail,
    /// Leave the ask open, as a user who has not decided yet; `cancel` answers it `cancelled`, as Zed does.
    Hold,
}

/// How the test client answers `elicitation/create`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elicit {
    /// Accept with this value for the `answer` field.
    Accept(&'static str),
    Decline,
    Cancel,
    Fail,
}

/// Runs just before the client answers a permission ask (to change the world while the user "thinks").
pub type BeforeAnswer = Box<dyn FnOnce() + Send>;

#[derive(Default)]
pub struct Log {
    pub updates: Mutex<Vec<acp::SessionNotification>>,
    pub permission_requests: Mutex<Vec<acp::RequestPermissionRequest>>,
    pub answers: Mutex<VecDeque<Answer>>,
    pub before_answer: Mutex<Option<BeforeAnswer>>,
    /// Asks left open by [`Answer::Hold`].
    pub held: Mutex<Vec<agent_client_protocol::v1::Responder<acp::RequestPermissionResponse>>>,
    pub elicitations: Mutex<Vec<acp::CreateElicitationRequest>>,
    pub elicit_answers: Mutex<VecDeque<Elicit>>,
    /// Editor buffers that differ from disk (unsaved changes), by path.
    pub buffers: Mutex<std::collections::BTreeMap<PathBuf, String>>,
    /// Every `fs/read_text_file` path and `fs/write_text_file` (path, content), in order.
    pub fs_reads: Mutex<Vec<PathBuf>>,
    /// When set, every `fs/read_text_file` is answered with this error (an editor refusing the read).
    pub fs_read_error: Mutex<Option<Error>>,
    pub fs_writes: Mutex<Vec<(PathBuf, String)>>,
    /// `fs/write_text_file` requests for these paths are answered with the error (an editor that cannot save
    /// there); they are still logged in `fs_writes`.
    pub fs_write_errors: Mutex<std::collections::BTreeMap<PathBuf, Error>>,
    /// `terminal/*` calls in order, as `method id-or-command`.
    pub terminal_calls: Mutex<Vec<String>>,
    pub terminals: Mutex<std::collections::BTreeMap<String, Terminal>>,
}

/// A terminal the test client runs for the agent.
pub struct Terminal {
    pub pid: i32,
    pub output: Arc<Mutex<String>>,
    pub exit: Arc<tokio::sync::watch::Sender<Option<acp::TerminalExitStatus>>>,
}

fn terminal_exit(status: std::process::ExitStatus) -> acp::TerminalExitStatus {
    use std::os::unix::process::ExitStatusExt;
    let signal = status.signal().map(|s| if s == 9 { "SIGKILL".to_string() } else { format!("SIG{s}") });
    acp::TerminalExitStatus::new().exit_code(status.code().map(|c| c as u32)).signal(signal)
}

async fn run_terminal(log: Arc<Log>, request: acp::CreateTerminalRequest) -> String {
    let id = format!("term_{}", log.terminals.lock().unwrap().len() + 1);
    let mut command = tokio::process::Command::new(&request.command);
    command
        .args(&request.args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &request.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().unwrap();
    let output = Arc::new(Mutex::new(String::new()));
    let exit = Arc::new(tokio::sync::watch::Sender::new(None));
    let pid = child.id().unwrap() as i32;
    for pipe in [
        child.stdout.take().map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        child.stderr.take().map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let output = output.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut pipe = pipe;
            let mut buffer = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buffer).await {
                if n == 0 {
                    break;
                }
                output.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
    }
    let exit_tx = exit.clone();
    tokio::spawn(async move {
        let status = child.wait().await.unwrap();
        exit_tx.send_replace(Some(terminal_exit(status)));
    });
    log.terminals.lock().unwrap().insert(id.clone(), Terminal { pid, output, exit });
    id
}

pub struct TestClient {
    pub cx: ConnectionTo<Agent>,
    pub log: Arc<Log>,
    changed: watch::Receiver<u64>,
    stop: Option<oneshot::Sender<()>>,
    /// Every frame in both directions, checked against the ACP schema.
    pub frames: Arc<super::schema::Tap>,
    /// The in-process agent's serve loop (`None` when the agent is a child process).
    agent: Option<tokio::task::JoinHandle<Result<(), Error>>>,
}

fn bump(tx: &watch::Sender<u64>) {
    tx.send_modify(|n| *n += 1);
}

impl TestClient {
    /// Connect a client to an agent serving `manager`.
    pub async fn start(manager: Manager) -> TestClient {
        let (agent_io, client_io) = tokio::io::duplex(1 << 20);
        let (agent_read, agent_write) = tokio::io::split(agent_io);
        let (client_read, client_write) = tokio::io::split(client_io);
        let agent = tokio::spawn(tinycode::acp::serve_with(
            tinycode::acp::stdio::Transport::new(agent_write.compat_write(), agent_read.compat()),
            manager,
        ));
        Self::over(client_write, client_read, Some(agent)).await
    }

    /// Connect a client to the agent at the other end of `write`/`read` (a child's stdin and stdout).
    pub async fn over<W, R>(
        client_write: W,
        client_read: R,
        agent: Option<tokio::task::JoinHandle<Result<(), Error>>>,
    ) -> TestClient
    where
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
    {
        let frames = Arc::new(super::schema::Tap::default());
        let (client_write, client_read) = super::schema::tap(client_write, client_read, frames.clone());
        let log = Arc::new(Log::default());
        let (changed_tx, changed) = watch::channel(0u64);
        let changed_tx = Arc::new(changed_tx);
        let (cx_tx, cx_rx) = oneshot::channel();
        let (stop, stop_rx) = oneshot::channel::<()>();
        let (log1, log2, log3, log4) = (log.clone(), log.clone(), log.clone(), log.clone());
        let (log5, log6, log7, log8, log9) =
            (log.clone(), log.clone(), log.clone(), log.clone(), log.clone());
        let (tx1, tx2, tx3) = (changed_tx.clone(), changed_tx.clone(), changed_tx.clone());
        let (tx5, tx7, tx8, tx9) =
            (changed_tx.clone(), changed_tx.clone(), changed_tx.clone(), changed_tx.clone());
        let log10 = log.clone();
        tokio::spawn(async move {
            let result = Client
                .v1()
                .name("test-client")
                .on_receive_notification(
                    async move |n: acp::SessionNotification, _cx| {
                        log1.updates.lock().unwrap().push(n);
                        bump(&tx1);
                        Ok(())
                    },
                    agent_client_protocol::on_receive_notification!(),
                )
                .on_receive_request(
                    async move |request: acp::RequestPermissionRequest, responder, _cx| {
                        let hook = log2.before_answer.lock().unwrap().take();
                        if let Some(hook) = hook {
                            hook();
                        }
                        let answer = log2.answers.lock().unwrap().pop_front();
                        let options = request.options.clone();
                        log2.permission_requests.lock().unwrap().push(request);
                        bump(&tx2);
                        let outcome = match answer {
                            Some(Answer::Pick(kind)) => {
                                let id = options.iter().find(|o| o.kind == kind).unwrap().option_id.clone();
                                acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(
                                    id,
                                ))
                            }
                            Some(Answer::Option(id)) => {
                                assert!(
                                    options.iter().any(|o| o.option_id.0.as_ref() == id),
                                    "no option {id}"
                                );
                                acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(
                                    id.to_string(),
                                ))
                            }
                            Some(Answer::Hold) => {
                                log2.held.lock().unwrap().push(responder);
                                bump(&tx2);
                                return Ok(());
                            }
                            Some(Answer::Cancelled) => acp::RequestPermissionOutcome::Cancelled,
                            Some(Answer::Fail) | None => {
                                return responder.respond_with_error(Error::internal_error());
                            }
                        };
                        responder.respond(acp::RequestPermissionResponse::new(outcome))
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    async move |request: acp::ReadTextFileRequest, responder, _cx| {
                        log3.fs_reads.lock().unwrap().push(request.path.clone());
                        let refusal = log3.fs_read_error.lock().unwrap().clone();
                        if let Some(error) = refusal {
                            return responder.respond_with_error(error);
                        }
                        let buffer = log3.buffers.lock().unwrap().get(&request.path).cloned();
                        match buffer.map(Ok).unwrap_or_else(|| std::fs::read_to_string(&request.path)) {
                            Ok(content) => responder.respond(acp::ReadTextFileResponse::new(content)),
                            Err(e) => responder.respond_with_error(Error::new(
                                agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND,
                                e.to_string(),
                            )),
                        }
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    async move |request: acp::WriteTextFileRequest, responder, _cx| {
                        // Like Zed: the buffer takes the text and is saved to disk.
                        log4.fs_writes.lock().unwrap().push((request.path.clone(), request.content.clone()));
                        let refusal = log4.fs_write_errors.lock().unwrap().get(&request.path).cloned();
                        if let Some(error) = refusal {
                            return responder.respond_with_error(error);
                        }
                        log4.buffers.lock().unwrap().remove(&request.path);
                        if let Some(dir) = request.path.parent() {
                            std::fs::create_dir_all(dir).unwrap();
                        }
                        std::fs::write(&request.path, &request.content).unwrap();
                        responder.respond(acp::WriteTextFileResponse::new())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    async move |request: acp::CreateTerminalRequest, responder, _cx| {
                        let label = format!("create {} {}", request.command, request.args.join(" "));
                        log5.terminal_calls
                            .lock()
                            .unwrap()
                            .push(format!("{label} limit={:?}", request.output_byte_limit));
                        let id = run_terminal(log5.clone(), request).await;
                        bump(&tx5);
                        responder.respond(acp::CreateTerminalResponse::new(id))
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    async move |request: acp::TerminalOutputRequest, responder, _cx| {
                        let id = request.terminal_id.0.to_string();
                        log6.terminal_calls.lock().unwrap().push(format!("output {id}"));
                        let (text, exit) = {
                            let terminals = log6.terminals.lock().unwrap();
                            let terminal = &terminals[&id];
                            (terminal.output.lock().unwrap().clone(), terminal.exit.borrow().clone())
                        };
                        responder.respond(acp::TerminalOutputResponse::new(text, false).exit_status(exit))
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    async move |request: acp::WaitForTerminalExitRequest, responder, _cx| {
                        let id = request.terminal_id.0.to_string();
                        log7.terminal_calls.lock().unwrap().push(format!("wait {id}"));
                        bump(&tx7);
                        let mut exit = log7.terminals.lock().unwrap()[&id].exit.subscribe();
                        // Answer from a task: the client's dispatch loop must stay free meanwhile.
                        tokio::spawn(async move {
                            let status = loop {
                                if let Some(status) = exit.borrow_and_update().clone() {
                                    break status;
                                }
                                if exit.changed().await.is_err() {
                                    return;
                                }
                            };
                            let _ = responder.respond(acp::WaitForTerminalExitResponse::new(status));
                        });
                        Ok(())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    async move |request: acp::KillTerminalRequest, responder, _cx| {
                        let id = request.terminal_id.0.to_string();
                        log8.terminal_calls.lock().unwrap().push(format!("kill {id}"));
                        bump(&tx8);
                        let pid = log8.terminals.lock().unwrap()[&id].pid;
                        unsafe { libc::kill(-pid, libc::SIGKILL) };
                        responder.respond(acp::KillTerminalResponse::new())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    async move |request: acp::ReleaseTerminalRequest, responder, _cx| {
                        let id = request.terminal_id.0.to_string();
                        log9.terminal_calls.lock().unwrap().push(format!("release {id}"));
                        bump(&tx9);
                        let pid = log9.terminals.lock().unwrap()[&id].pid;
                        unsafe { libc::kill(-pid, libc::SIGKILL) };
                        responder.respond(acp::ReleaseTerminalResponse::new())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    async move |request: acp::CreateElicitationRequest, responder, _cx| {
                        let answer = log10.elicit_answers.lock().unwrap().pop_front();
                        log10.elicitations.lock().unwrap().push(request);
                        bump(&tx3);
                        let action = match answer {
                            Some(Elicit::Accept(text)) => {
                                let content = std::collections::BTreeMap::from([(
                                    "answer".to_string(),
                                    acp::ElicitationContentValue::from(text),
                                )]);
                                acp::ElicitationAction::Accept(
                                    acp::ElicitationAcceptAction::new().content(content),
                                )
                            }
                            Some(Elicit::Decline) => acp::ElicitationAction::Decline,
                            Some(Elicit::Cancel) => acp::ElicitationAction::Cancel,
                            Some(Elicit::Fail) | None => {
                                return responder.respond_with_error(Error::internal_error());
                            }
                        };
                        responder.respond(acp::CreateElicitationResponse::new(action))
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .connect_with(
                    ByteStreams::new(client_write.compat_write(), client_read.compat()),
                    async move |cx| {
                        let _ = cx_tx.send(cx);
                        let _ = stop_rx.await;
                        Ok(())
                    },
                )
                .await;
            if let Err(e) = result {
                eprintln!("test client ended with error: {e:?}");
            }
        });
        let cx = cx_rx.await.unwrap();
        TestClient { cx, log, changed, stop: Some(stop), frames, agent }
    }

    pub async fn initialize(&self, capabilities: acp::ClientCapabilities) -> acp::InitializeResponse {
        let request = acp::InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities);
        self.cx.send_request(request).block_task().await.unwrap()
    }

    pub async fn new_session(&self, cwd: &Path) -> acp::SessionId {
        self.try_new_session(cwd).await.unwrap()
    }

    /// `session/new`, with the agent's error if it refuses.
    pub async fn try_new_session(&self, cwd: &Path) -> Result<acp::SessionId, Error> {
        let response =
            self.cx.send_request(acp::NewSessionRequest::new(cwd.to_path_buf())).block_task().await?;
        Ok(response.session_id)
    }

    /// A new session with the MCP servers an editor declares.
    pub async fn new_session_with(&self, cwd: &Path, servers: Vec<acp::McpServer>) -> acp::SessionId {
        self.call(acp::NewSessionRequest::new(cwd.to_path_buf()).mcp_servers(servers))
            .await
            .unwrap()
            .session_id
    }

    pub async fn prompt_blocks(
        &self,
        session: &acp::SessionId,
        blocks: Vec<acp::ContentBlock>,
    ) -> Result<acp::PromptResponse, Error> {
        let request = acp::PromptRequest::new(session.clone(), blocks);
        tokio::time::timeout(PATIENCE, self.cx.send_request(request).block_task())
            .await
            .unwrap_or_else(|_| panic!("prompt did not finish; updates: {:#?}", self.updates_json()))
    }

    pub async fn prompt(&self, session: &acp::SessionId, text: &str) -> Result<acp::PromptResponse, Error> {
        self.prompt_blocks(session, vec![acp::ContentBlock::Text(acp::TextContent::new(text))]).await
    }

    /// Start a prompt without waiting for it.
    pub fn prompt_later(
        &self,
        session: &acp::SessionId,
        text: &str,
    ) -> tokio::task::JoinHandle<Result<acp::PromptResponse, Error>> {
        let request = acp::PromptRequest::new(
            session.clone(),
            vec![acp::ContentBlock::Text(acp::TextContent::new(text))],
        );
        let cx = self.cx.clone();
        tokio::spawn(async move { cx.send_request(request).block_task().await })
    }

    /// Send any prompt request without waiting for it.
    pub fn request_later(
        &self,
        request: acp::PromptRequest,
    ) -> tokio::task::JoinHandle<Result<acp::PromptResponse, Error>> {
        let cx = self.cx.clone();
        tokio::spawn(async move { cx.send_request(request).block_task().await })
    }

    pub fn cancel(&self, session: &acp::SessionId) {
        self.cx.send_notification(acp::CancelNotification::new(session.clone())).unwrap();
        for held in self.log.held.lock().unwrap().drain(..) {
            let _ =
                held.respond(acp::RequestPermissionResponse::new(acp::RequestPermissionOutcome::Cancelled));
        }
    }

    /// Wait until `condition` holds over the client's log (asks, elicitations, fs and terminal calls).
    pub async fn wait_log(&self, what: &str, condition: impl Fn(&Log) -> bool) {
        let mut changed = self.changed.clone();
        let wait = async {
            while !condition(&self.log) {
                if changed.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(PATIENCE, wait).await.is_err() {
            panic!("timed out waiting for {what}; updates: {:#?}", self.updates_json());
        }
    }

    pub fn answer_permissions(&self, answers: &[Answer]) {
        self.log.answers.lock().unwrap().extend(answers.iter().copied());
    }

    /// Every update received so far, as wire JSON (`{sessionId, update}`).
    pub fn updates_json(&self) -> Vec<Value> {
        self.log.updates.lock().unwrap().iter().map(|n| serde_json::to_value(n).unwrap()).collect()
    }

    /// The `update` objects of one session, consecutive chunks of one message joined: the agent coalesces
    /// streamed text on a timer, so how a text is split into updates depends on timing, and the transcript
    /// asserts the whole text instead.
    pub fn updates(&self, session: &acp::SessionId) -> Vec<Value> {
        let mut updates: Vec<Value> = Vec::new();
        for update in self.updates_json().into_iter().filter(|n| n["sessionId"] == session.0.as_ref()) {
            let update = update["update"].clone();
            let chunk = |u: &Value| {
                ["agent_message_chunk", "agent_thought_chunk"]
                    .contains(&u["sessionUpdate"].as_str().unwrap_or(""))
                    && u["content"]["type"] == "text"
            };
            if let Some(last) = updates.last_mut()
                && chunk(last)
                && chunk(&update)
                && last["sessionUpdate"] == update["sessionUpdate"]
                && last["messageId"] == update["messageId"]
            {
                let joined = format!(
                    "{}{}",
                    last["content"]["text"].as_str().unwrap(),
                    update["content"]["text"].as_str().unwrap()
                );
                last["content"]["text"] = Value::String(joined);
                continue;
            }
            updates.push(update);
        }
        updates
    }

    /// Wait until `condition` holds over the updates received so far.
    pub async fn wait_for(&self, what: &str, condition: impl Fn(&[Value]) -> bool) {
        let mut changed = self.changed.clone();
        let wait = async {
            loop {
                if condition(&self.updates_json()) {
                    return;
                }
                if changed.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(PATIENCE, wait).await.is_err() {
            panic!("timed out waiting for {what}; updates: {:#?}", self.updates_json());
        }
    }

    /// Close the connection (stdin EOF for the agent) and return how the agent's serve loop ended.
    pub async fn close(mut self) -> Result<(), Error> {
        self.frames.assert_valid();
        drop(self.stop.take());
        let Some(agent) = self.agent.as_mut() else { return Ok(()) };
        tokio::time::timeout(PATIENCE, agent).await.expect("agent did not stop after EOF").unwrap()
    }

    /// Send any request and wait (with patience) for its answer.
    pub async fn call<Req>(&self, request: Req) -> Result<Req::Response, Error>
    where
        Req: agent_client_protocol::JsonRpcRequest,
    {
        tokio::time::timeout(PATIENCE, self.cx.send_request(request).block_task())
            .await
            .unwrap_or_else(|_| panic!("no answer; updates: {:#?}", self.updates_json()))
    }
}

impl Drop for TestClient {
    /// Every frame the test saw must have followed the schema.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.frames.assert_valid();
        }
    }
}

/// A workspace, a fake model and a connected, initialized client.
pub struct Harness {
    /// Keeps the temporary directory alive for the test.
    pub root: tempfile::TempDir,
    pub cwd: PathBuf,
    pub data: PathBuf,
    pub model: FakeModel,
    pub client: TestClient,
    /// The agent's event bus (the newest agent's after a restart).
    pub bus: tinycode::bus::Bus,
    capabilities: acp::ClientCapabilities,
    registry: Arc<Registry>,
    /// The scheduler's clock (every agent of the harness shares it).
    clock: Option<tinycode::schedule::Clock>,
    /// The first agent's environment and config home.
    pub sources: Sources,
    targets: Vec<tinycode::llm::detect::Target>,
}

pub struct Setup {
    pub script: Vec<Reply>,
    /// Lines of the project's `.tinycode/config.toml`.
    pub project_config: String,
    pub registry: Option<Registry>,
    pub capabilities: acp::ClientCapabilities,
    /// Trust the project's settings before the agent starts (as `tinycode trust` would).
    pub trusted: bool,
    /// Put the fake model's URL and a key (`user-key`) in the user's config file instead of the environment.
    pub user_provider: bool,
    /// The scheduler's clock (UTC); the system clock when unset.
    pub clock: Option<tinycode::schedule::Clock>,
    /// More lines for the user's config file (`{base_url}` stands for the fake model's URL).
    pub user_config: String,
    /// Environment changes: a value, or `None` to remove the variable.
    pub env: Vec<(String, Option<String>)>,
    /// Probe these loopback targets when nothing is configured (default: a port nothing listens on).
    pub targets: Vec<tinycode::llm::detect::Target>,
    /// Files of the project, written before the agent starts (relative path, text).
    pub files: Vec<(String, String)>,
    /// Makes the agent's session database refuse writes while set.
    pub store_fault: Option<tinycode::store::Fault>,
}

/// What an editor with a file system (Zed) declares.
pub fn editor_fs() -> acp::ClientCapabilities {
    acp::ClientCapabilities::new()
        .fs(acp::FileSystemCapabilities::new().read_text_file(true).write_text_file(true))
}

/// What current Zed declares: fs, terminals, terminal sign-in, and the terminal `_meta` extensions.
pub fn zed() -> acp::ClientCapabilities {
    let mut meta = acp::Meta::new();
    meta.insert("terminal_output".into(), serde_json::json!(true));
    meta.insert("terminal-auth".into(), serde_json::json!(true));
    editor_fs().terminal(true).auth(acp::AuthCapabilities::new().terminal(true)).meta(meta)
}

/// A client with terminals but without Zed's `_meta` extension.
pub fn terminals() -> acp::ClientCapabilities {
    acp::ClientCapabilities::new().terminal(true)
}

impl Setup {
    pub fn new(script: Vec<Reply>) -> Self {
        Self {
            script,
            project_config: String::new(),
            registry: None,
            capabilities: acp::ClientCapabilities::new(),
            trusted: false,
            user_provider: false,
            clock: None,
            user_config: String::new(),
            env: Vec::new(),
            targets: Vec::new(),
            files: Vec::new(),
            store_fault: None,
        }
    }

    /// The agent's session database refuses writes while `fault` is set.
    pub fn store_fault(mut self, fault: tinycode::store::Fault) -> Self {
        self.store_fault = Some(fault);
        self
    }

    /// Write `text` to `rel` in the project before the agent starts (and before `trusted` trusts it).
    pub fn project_file(self, rel: &str, text: &str) -> Self {
        self.file(rel, text)
    }

    /// Add lines to the user's config file (`{base_url}` stands for the fake model's URL).
    pub fn user_config(mut self, toml: &str) -> Self {
        self.user_config.push_str(toml);
        self.user_config.push('\n');
        self
    }

    /// Set (or, with `None`, remove) an environment variable of the agent.
    pub fn env(mut self, name: &str, value: Option<&str>) -> Self {
        self.env.push((name.to_string(), value.map(String::from)));
        self
    }

    /// Configure no provider at all: only key variables and probes can find one.
    pub fn unconfigured(self) -> Self {
        self.env("TINYCODE_BASE_URL", None).env("TINYCODE_API_KEY", None).env("TINYCODE_MODEL", None)
    }

    /// Probe these loopback targets when nothing is configured.
    pub fn probes(mut self, targets: Vec<tinycode::llm::detect::Target>) -> Self {
        self.targets = targets;
        self
    }

    /// A project file written before the agent starts (and before `trusted` takes the project's settings).
    pub fn file(mut self, rel: &str, text: &str) -> Self {
        self.files.push((rel.to_string(), text.to_string()));
        self
    }

    /// Scheduled jobs read the time from `clock`, in UTC.
    pub fn clock(mut self, clock: tinycode::schedule::Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    pub fn trusted(mut self) -> Self {
        self.trusted = true;
        self
    }

    pub fn provider_in_user_config(mut self) -> Self {
        self.user_provider = true;
        self
    }

    pub fn capabilities(mut self, capabilities: acp::ClientCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    pub fn config(mut self, toml: &str) -> Self {
        self.project_config.push_str(toml);
        self.project_config.push('\n');
        self
    }

    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    pub async fn start(self) -> Harness {
        // Commands run under the real binary's supervisor mode, as they do in the shipped agent.
        tinycode::shell::process::use_supervisor(PathBuf::from(env!("CARGO_BIN_EXE_tinycode")));
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("work");
        let data = root.path().join("data");
        let config_home = root.path().join("config");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(config_home.join("tinycode")).unwrap();
        let model = FakeModel::start(self.script).await;
        let provider = if self.user_provider {
            format!("base_url = \"{}\"\napi_key = \"user-key\"\n", model.base_url)
        } else {
            String::new()
        };
        let extra = self.user_config.replace("{base_url}", &model.base_url);
        std::fs::write(
            config_home.join("tinycode/config.toml"),
            format!(
                "{provider}{extra}[retry]\nmax_retries = 2\ninitial_backoff_ms = 1\nmax_backoff_ms = 5\n"
            ),
        )
        .unwrap();
        for (rel, text) in &self.files {
            let path = cwd.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        if !self.project_config.is_empty() {
            std::fs::create_dir_all(cwd.join(".tinycode")).unwrap();
            std::fs::write(cwd.join(".tinycode/config.toml"), &self.project_config).unwrap();
        }
        let mut sources = agent_sources(self.user_provider, &model.base_url, &data, &config_home);
        for (name, value) in &self.env {
            match value {
                Some(value) => sources.env.insert(name.clone(), value.replace("{base_url}", &model.base_url)),
                None => sources.env.remove(name),
            };
        }
        if self.trusted {
            let trust = tinycode::config::trust::Trust::new(&sources);
            let loaded = tinycode::config::Config::load(&sources, &cwd, &trust).unwrap();
            trust.grant(&loaded.untrusted.expect("the project sets nothing that needs trust")).unwrap();
        }
        let registry = Arc::new(self.registry.unwrap_or_else(tinycode::builtin::registry));
        let mut manager = with_clock(
            Manager::with_registry(sources.clone(), registry.clone())
                .with_detector(tinycode::llm::detect::Detector::new(self.targets.clone())),
            &self.clock,
        );
        if let Some(fault) = self.store_fault {
            manager = manager.with_store_fault(fault);
        }
        let bus = manager.bus().clone();
        let client = TestClient::start(manager).await;
        client.initialize(self.capabilities.clone()).await;
        Harness {
            root,
            cwd,
            data,
            model,
            client,
            bus,
            capabilities: self.capabilities,
            registry,
            sources,
            targets: self.targets,
            clock: self.clock,
        }
    }
}

fn with_clock(manager: Manager, clock: &Option<tinycode::schedule::Clock>) -> Manager {
    match clock {
        Some(clock) => manager.with_clock(clock.clone(), tinycode::schedule::Zone::Utc),
        None => manager,
    }
}

/// The environment of a test agent, with the provider in the environment or (`user_provider`) in the user's file.
fn agent_sources(user_provider: bool, base_url: &str, data: &Path, config_home: &Path) -> Sources {
    let mut sources = sources(base_url, data, config_home);
    if user_provider {
        sources.env.remove("TINYCODE_BASE_URL");
        sources.env.remove("TINYCODE_API_KEY");
    }
    sources
}

/// The environment a test agent sees: the fake model, a key, a model name and private directories.
pub fn sources(base_url: &str, data: &Path, config_home: &Path) -> Sources {
    let env = [
        ("TINYCODE_BASE_URL", base_url.to_string()),
        ("TINYCODE_API_KEY", "test-key".to_string()),
        ("TINYCODE_MODEL", "fake-model".to_string()),
        ("TINYCODE_DATA_DIR", data.display().to_string()),
        ("HOME", data.display().to_string()),
    ];
    Sources {
        env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        user_config_home: Some(config_home.to_path_buf()),
    }
}

impl Harness {
    pub async fn start(script: Vec<Reply>) -> Harness {
        Setup::new(script).start().await
    }

    pub async fn session(&self) -> acp::SessionId {
        self.client.new_session(&self.cwd).await
    }

    /// A session with these MCP servers, as an editor declares them.
    pub async fn session_with(&self, servers: Vec<acp::McpServer>) -> acp::SessionId {
        self.client.new_session_with(&self.cwd, servers).await
    }

    /// The user's config directory (`$XDG_CONFIG_HOME`).
    pub fn config_home(&self) -> PathBuf {
        self.root.path().join("config")
    }

    /// The home directory the agent sees (`$HOME`).
    pub fn home(&self) -> PathBuf {
        self.data.clone()
    }

    /// The text of every agent message chunk of `session`, in order.
    pub fn said(&self, session: &acp::SessionId) -> Vec<String> {
        self.client
            .updates(session)
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The content the card of call `id` shows before it runs (what its permission ask refers to): the
    /// content of the last `tool_call`/`tool_call_update` for it that carried some before it completed.
    pub fn shown_content(&self, session: &acp::SessionId, id: &str) -> Value {
        self.client
            .updates(session)
            .into_iter()
            .rev()
            .find(|u| {
                u["toolCallId"] == id
                    && u.get("content").is_some()
                    && u.get("status") != Some(&Value::from("completed"))
            })
            .map(|u| u["content"].clone())
            .unwrap_or(Value::Null)
    }

    /// Another agent (as a second editor window would start) on the same database and config, initialized.
    pub async fn another_agent(&self) -> TestClient {
        self.agent_and_bus().await.0
    }

    /// Another agent and its event bus.
    async fn agent_and_bus(&self) -> (TestClient, tinycode::bus::Bus) {
        let manager = with_clock(
            Manager::with_registry(self.sources.clone(), self.registry.clone())
                .with_detector(tinycode::llm::detect::Detector::new(self.targets.clone())),
            &self.clock,
        );
        let bus = manager.bus().clone();
        let client = TestClient::start(manager).await;
        client.initialize(self.capabilities.clone()).await;
        (client, bus)
    }

    /// Stop the agent (stdin EOF) and start a fresh one on the same database, as after an editor restart.
    pub async fn restart(&mut self) {
        let (fresh, bus) = self.agent_and_bus().await;
        self.bus = bus;
        let old = std::mem::replace(&mut self.client, fresh);
        old.close().await.unwrap();
    }

    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.cwd.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// The turn updates of `session` with temp paths, times and generated ids replaced by stable placeholders.
    /// Left out: the slash-command announcement and option updates, which come when the provider's model list
    /// happens to arrive (the model-picker tests look at them).
    pub fn transcript(&self, session: &acp::SessionId) -> Vec<Value> {
        self.client
            .updates(session)
            .into_iter()
            .filter(|u| u["sessionUpdate"] != "available_commands_update")
            .filter(|u| u["sessionUpdate"] != "config_option_update")
            .map(|u| redact(u, &self.cwd, &self.data))
            .collect()
    }
}

/// Replace the workspace and data paths and generated ids with placeholders.
pub fn redact(value: Value, cwd: &Path, data: &Path) -> Value {
    let ids = regex::Regex::new(r"\b(msg|thought|sess|tool|user|compaction)_[0-9a-f]{32}").unwrap();
    let times = regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z").unwrap();
    let text = value.to_string();
    let text =
        text.replace(&cwd.display().to_string(), "<cwd>").replace(&data.display().to_string(), "<data>");
    let text = ids.replace_all(&text, "${1}_<id>");
    let text = times.replace_all(&text, "<time>");
    serde_json::from_str(&text).unwrap()
}
