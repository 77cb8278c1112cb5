//! The client side of one session as the core sees it: [`SessionClient`] implements the core's seams
//! ([`EventSink`], [`SettingsSink`], [`Approver`], [`ClientFs`], [`ClientTerminals`]) with `session/update` notifications and `session/request_permission`.
//!
//! Owns how core requests become ACP traffic. Must not make decisions; it only relays.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};

use super::coalesce::{self, Held, Pushed};
use super::convert;
use super::render::Renderer;
use crate::agent::{AgentEvent, EventSink, SubagentState};
use crate::display::Content;
use crate::permission::{Approver, Ask, Category, Reply};
use crate::session::SettingsSink;
use crate::session::settings::{ConfigOption, Mode};
use crate::shell::terminal::{ClientTerminals, TerminalExit, TerminalOutput};
use crate::workspace::files::{ClientFs, EditorError};

/// JSON-RPC's "internal error": how a subagent that failed is reported.
const INTERNAL_ERROR: i32 = -32603;

/// The connection to the editor, bound to one session.
pub struct SessionClient {
    pub(super) cx: ConnectionTo<Client>,
    pub(super) session_id: acp::SessionId,
    /// What the client declared in `initialize`.
    pub(super) capabilities: acp::ClientCapabilities,
    renderer: std::sync::Mutex<Renderer>,
    /// Streamed text waiting to go out as one update (see `coalesce`).
    held: Arc<Mutex<Held>>,
    /// The client shows subagents as sessions of their own (it declared `subagents`).
    subagents: bool,
    cwd: std::path::PathBuf,
    /// The subagents' own sessions, as the client sees them (only when `subagents`).
    children: Mutex<std::collections::HashMap<String, Arc<SessionClient>>>,
}

fn lock<T>(held: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match held.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Does the client ask for Zed's terminal `_meta` extension?
pub fn wants_terminal_meta(capabilities: &acp::ClientCapabilities) -> bool {
    capabilities.meta.as_ref().and_then(|m| m.get("terminal_output")).and_then(serde_json::Value::as_bool)
        == Some(true)
}

impl SessionClient {
    pub fn new(
        cx: ConnectionTo<Client>,
        session_id: &str,
        capabilities: acp::ClientCapabilities,
        cwd: std::path::PathBuf,
    ) -> Self {
        let compaction = capabilities.session.as_ref().is_some_and(|s| s.compaction.is_some());
        let notices = capabilities.session.as_ref().is_some_and(|s| s.notices.is_some());
        let subagents = capabilities.subagents.is_some();
        let renderer = std::sync::Mutex::new(
            Renderer::new(wants_terminal_meta(&capabilities), compaction, cwd.clone())
                .with_notices(notices)
                .with_subagents(subagents),
        );
        Self {
            cx,
            session_id: acp::SessionId::from(session_id.to_string()),
            capabilities,
            renderer,
            held: Arc::default(),
            subagents,
            cwd,
            children: Mutex::default(),
        }
    }

    /// The client of subagent `id`'s own session (made on its first event).
    fn child(&self, id: &str) -> Arc<SessionClient> {
        lock(&self.children)
            .entry(id.to_string())
            .or_insert_with(|| {
                Arc::new(SessionClient::new(self.cx.clone(), id, self.capabilities.clone(), self.cwd.clone()))
            })
            .clone()
    }

    /// A subagent's run started or ended: `subagent_update` on this session (after the child's held text, so
    /// its session reads in order). Patch semantics: what is not given stays as the client has it.
    fn subagent_update(
        &self,
        child: &str,
        title: Option<String>,
        description: Option<String>,
        state: SubagentState,
    ) {
        let known = lock(&self.children).get(child).cloned();
        if let Some(client) = known {
            client.flush();
        }
        let state = match state {
            SubagentState::Running => acp::StateUpdate::Running(acp::RunningStateUpdate::new()),
            SubagentState::Completed => {
                acp::StateUpdate::Idle(acp::IdleStateUpdate::new().stop_reason(acp::IdleStopReason::EndTurn))
            }
            SubagentState::Cancelled => acp::StateUpdate::Idle(
                acp::IdleStateUpdate::new().stop_reason(acp::IdleStopReason::Cancelled),
            ),
            SubagentState::Failed(message) => {
                acp::StateUpdate::Idle(acp::IdleStateUpdate::new().stop_reason(acp::IdleStopReason::Error(
                    acp::ErrorStopReason::new().error(acp::Error::new(INTERNAL_ERROR, message)),
                )))
            }
        };
        let mut update = acp::SubagentUpdate::new(child.to_string()).state(state);
        if let Some(title) = title {
            update = update
                .title(title)
                .capabilities(
                    acp::SubagentSessionCapabilities::new().cancel(acp::SessionCancelCapabilities::new()),
                )
                .cwd(self.cwd.clone());
        }
        if let Some(description) = description {
            update = update.description(description);
        }
        self.send(acp::SessionUpdate::SubagentUpdate(update));
    }

    /// Commands may run in the editor's terminals: it offers them and does not prefer the `_meta` stream.
    pub fn offers_terminals(&self) -> bool {
        self.capabilities.terminal && !wants_terminal_meta(&self.capabilities)
    }

    /// Whether the client offers any `fs/*` method.
    pub fn has_fs(&self) -> bool {
        self.capabilities.fs.read_text_file || self.capabilities.fs.write_text_file
    }

    pub fn send(&self, update: acp::SessionUpdate) {
        let notification = acp::SessionNotification::new(self.session_id.clone(), update);
        if let Err(e) = self.cx.send_notification(notification) {
            tracing::debug!(error = %e, "session/update not sent (connection closing)");
        }
    }
}

impl SessionClient {
    fn render_and_send(&self, event: AgentEvent) {
        let updates = match self.renderer.lock() {
            Ok(mut renderer) => renderer.render(event),
            Err(poisoned) => poisoned.into_inner().render(event),
        };
        for update in updates {
            self.send(update);
        }
    }

    /// Flush hold number `generation` after [`coalesce::HOLD`] unless something flushed it first. Without a
    /// runtime (nothing could flush later) the text goes out now.
    fn flush_later(&self, held: &mut Held, generation: u64) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            if let Some(event) = held.take() {
                self.render_and_send(event);
            }
            return;
        };
        let (shared, cx, session_id) = (self.held.clone(), self.cx.clone(), self.session_id.clone());
        runtime.spawn(async move {
            tokio::time::sleep(coalesce::HOLD).await;
            let mut held = lock(&shared);
            // Chunks render the same for every client: no renderer state is needed.
            for update in held.take_if(generation).map(convert::update).unwrap_or_default() {
                if let Err(e) =
                    cx.send_notification(acp::SessionNotification::new(session_id.clone(), update))
                {
                    tracing::debug!(error = %e, "session/update not sent (connection closing)");
                }
            }
        });
    }
}

impl EventSink for SessionClient {
    /// Streamed text is held briefly and joined (`coalesce`); anything else first sends the held text, so the
    /// order of updates is the order of events. The lock is held while sending for the same reason.
    fn emit(&self, event: AgentEvent) {
        let event = match event {
            AgentEvent::Child { child_session_id, event } => {
                if self.subagents {
                    self.child(&child_session_id).emit(*event);
                }
                return;
            }
            AgentEvent::Subagent { child_session_id, title, description, state } => {
                if self.subagents {
                    self.flush();
                    self.subagent_update(&child_session_id, title, description, state);
                }
                return;
            }
            other => other,
        };
        let mut held = lock(&self.held);
        match held.push(event) {
            Pushed::Joined => {}
            Pushed::Started { flushed, generation } => {
                if let Some(event) = flushed {
                    self.render_and_send(event);
                }
                self.flush_later(&mut held, generation);
            }
            Pushed::Full(event) => {
                let text = matches!(event, AgentEvent::MessageChunk { .. } | AgentEvent::ThoughtChunk { .. });
                if !text && let Some(earlier) = held.take() {
                    self.render_and_send(earlier);
                }
                self.render_and_send(event);
            }
        }
    }

    fn flush(&self) {
        let mut held = lock(&self.held);
        if let Some(event) = held.take() {
            self.render_and_send(event);
        }
    }

    fn shows_subagents(&self) -> bool {
        self.subagents
    }
}

impl SettingsSink for SessionClient {
    fn settings_changed(&self, mode: Option<Mode>, options: &[ConfigOption]) {
        if let Some(mode) = mode {
            self.send(acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(mode.id())));
        }
        let options = convert::config_options(options);
        self.send(acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(options)));
    }
}

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

/// What "always allow" covers, as the option says it: a read outside the workspace is remembered for its
/// directory (the ask's pattern is `/dir/**`).
fn always_label(ask: &Ask) -> String {
    match (ask.category, ask.presentation.patterns.first()) {
        (Category::ExternalDirectory, Some(pattern)) => {
            let dir = pattern.strip_suffix("/**").unwrap_or(pattern);
            format!("Always allow in {}", if dir.is_empty() { "/" } else { dir })
        }
        _ => "Always allow".into(),
    }
}

/// The four answers; destructive and secret-touching commands, secret files and protected paths ask every time,
/// so they offer no "always allow".
fn options(ask: &Ask) -> Vec<acp::PermissionOption> {
    let mut options = vec![
        acp::PermissionOption::new(ALLOW_ONCE, "Allow once", acp::PermissionOptionKind::AllowOnce),
        acp::PermissionOption::new(ALLOW_ALWAYS, always_label(ask), acp::PermissionOptionKind::AllowAlways),
        acp::PermissionOption::new(REJECT_ONCE, "Reject", acp::PermissionOptionKind::RejectOnce),
        acp::PermissionOption::new(REJECT_ALWAYS, "Always reject", acp::PermissionOptionKind::RejectAlways),
    ];
    if !ask.offers_always() {
        options.remove(1);
    }
    options
}

/// The tool call as shown in the ask: the real title, kind, locations and content (diff or command).
fn ask_tool_call(ask: &Ask) -> acp::ToolCallUpdate {
    let p = &ask.presentation;
    let mut fields = acp::ToolCallUpdateFields::new()
        .title(p.title.clone())
        .kind(convert::kind(p.kind))
        .status(acp::ToolCallStatus::Pending)
        .raw_input(ask.raw_input.clone());
    if !p.locations.is_empty() {
        fields = fields.locations(convert::locations(&p.locations));
    }
    // Diffs are already on the tool call the editor has (sent before the ask): the ask refers to that call
    // instead of sending a file's text again, and carries only its notes. An ask without content leaves the
    // card's content as it is (ACP keeps content an update leaves out).
    let notes: Vec<Content> =
        p.content.iter().filter(|c| !matches!(c, Content::Diff { .. })).cloned().collect();
    if !notes.is_empty() {
        fields = fields.content(convert::contents(&notes));
    }
    acp::ToolCallUpdate::new(ask.call_id.clone(), fields)
}

impl Approver for SessionClient {
    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let request =
                acp::RequestPermissionRequest::new(self.session_id.clone(), ask_tool_call(ask), options(ask));
            match self.cx.send_request(request).block_task().await {
                Ok(response) => match response.outcome {
                    acp::RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                        ALLOW_ONCE => Reply::AllowOnce,
                        ALLOW_ALWAYS => Reply::AllowAlways,
                        REJECT_ONCE => Reply::RejectOnce,
                        REJECT_ALWAYS => Reply::RejectAlways,
                        other => {
                            tracing::warn!(
                                option = other,
                                "client selected an unknown permission option; rejecting"
                            );
                            Reply::RejectOnce
                        }
                    },
                    _ => Reply::Cancelled,
                },
                // The editor could not ask: this call is refused (fail closed) and the turn goes on; only a
                // `cancelled` outcome, which the editor sends for a cancelled turn, ends it.
                Err(e) => {
                    tracing::warn!(error = %e, "session/request_permission failed; rejecting the call");
                    Reply::RejectOnce
                }
            }
        })
    }
}

impl ClientFs for SessionClient {
    fn can_read(&self) -> bool {
        self.capabilities.fs.read_text_file
    }

    fn can_write(&self) -> bool {
        self.capabilities.fs.write_text_file
    }

    fn read(&self, path: &std::path::Path) -> BoxFuture<'_, Result<String, EditorError>> {
        let request = acp::ReadTextFileRequest::new(self.session_id.clone(), path.to_path_buf());
        Box::pin(async move {
            self.cx.send_request(request).block_task().await.map(|r| r.content).map_err(editor_error)
        })
    }

    fn write<'a>(
        &'a self,
        path: &'a std::path::Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<(), EditorError>> {
        let request =
            acp::WriteTextFileRequest::new(self.session_id.clone(), path.to_path_buf(), content.to_string());
        Box::pin(
            async move { self.cx.send_request(request).block_task().await.map(|_| ()).map_err(editor_error) },
        )
    }
}

/// Only "method not found" means the editor lacks the method (and the disk may serve instead); any other
/// error is the editor's answer and stands.
fn editor_error(e: agent_client_protocol::Error) -> EditorError {
    if e.code == agent_client_protocol::ErrorCode::METHOD_NOT_FOUND {
        EditorError::Unsupported
    } else {
        EditorError::Failed(e.message)
    }
}

fn exit_of(status: acp::TerminalExitStatus) -> TerminalExit {
    TerminalExit { code: status.exit_code, signal: status.signal }
}

impl ClientTerminals for SessionClient {
    fn create<'a>(
        &'a self,
        command: &'a str,
        cwd: &'a std::path::Path,
        output_limit: u64,
    ) -> BoxFuture<'a, Result<String, String>> {
        let request = acp::CreateTerminalRequest::new(self.session_id.clone(), "sh")
            .args(vec!["-c".to_string(), command.to_string()])
            .cwd(cwd.to_path_buf())
            .output_byte_limit(output_limit);
        Box::pin(async move {
            self.cx
                .send_request(request)
                .block_task()
                .await
                .map(|r| r.terminal_id.0.to_string())
                .map_err(|e| e.message)
        })
    }

    fn output<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TerminalOutput, String>> {
        let request = acp::TerminalOutputRequest::new(self.session_id.clone(), id.to_string());
        Box::pin(async move {
            let response = self.cx.send_request(request).block_task().await.map_err(|e| e.message)?;
            Ok(TerminalOutput {
                output: response.output,
                truncated: response.truncated,
                exit: response.exit_status.map(exit_of),
            })
        })
    }

    fn wait_for_exit<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TerminalExit, String>> {
        let request = acp::WaitForTerminalExitRequest::new(self.session_id.clone(), id.to_string());
        Box::pin(async move {
            let response = self.cx.send_request(request).block_task().await.map_err(|e| e.message)?;
            Ok(exit_of(response.exit_status))
        })
    }

    fn kill<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), String>> {
        let request = acp::KillTerminalRequest::new(self.session_id.clone(), id.to_string());
        Box::pin(async move {
            self.cx.send_request(request).block_task().await.map(|_| ()).map_err(|e| e.message)
        })
    }

    fn release<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), String>> {
        let request = acp::ReleaseTerminalRequest::new(self.session_id.clone(), id.to_string());
        Box::pin(async move {
            self.cx.send_request(request).block_task().await.map(|_| ()).map_err(|e| e.message)
        })
    }
}
