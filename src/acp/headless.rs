//! `tinycode run "<prompt>"`: the same agent, driven by an in-process ACP client over a duplex pipe. The answer
//! goes to stdout, one line per tool call to stderr; the exit code says how the turn ended.
//!
//! Owns the headless client's behaviour. The agent side is exactly what `tinycode acp` serves.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{ByteStreams, Client, Error};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::config::trust::Trust;
use crate::config::{Config, Sources};

/// What the headless run was asked to do.
pub struct Options {
    pub prompt: String,
    pub cwd: PathBuf,
    /// Approve every permission ask once (otherwise asks are rejected).
    pub yes: bool,
}

/// How the run ended, as a process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The model finished its answer.
    Done = 0,
    /// The turn failed (provider error, bad configuration, protocol error).
    Failed = 1,
    /// The turn stopped early: cancelled, output limit, request cap, refusal.
    Stopped = 3,
}

fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

fn err(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Tool call titles by id, so completion lines can name the call.
type Titles = Arc<Mutex<std::collections::HashMap<String, String>>>;

fn show(update: &acp::SessionUpdate, titles: &Titles) {
    match update {
        acp::SessionUpdate::AgentMessageChunk(chunk) => {
            if let acp::ContentBlock::Text(text) = &chunk.content {
                out(&text.text);
            }
        }
        acp::SessionUpdate::ToolCall(call) => {
            if let Ok(mut titles) = titles.lock() {
                titles.insert(call.tool_call_id.0.to_string(), call.title.clone());
            }
            err(&format!("• {}", call.title));
        }
        acp::SessionUpdate::ToolCallUpdate(update) => {
            let mark = match update.fields.status {
                Some(acp::ToolCallStatus::Completed) => "✓",
                Some(acp::ToolCallStatus::Failed) => "✗",
                _ => return,
            };
            let title =
                titles.lock().ok().and_then(|t| t.get(&*update.tool_call_id.0).cloned()).unwrap_or_default();
            err(&format!("{mark} {title}"));
        }
        acp::SessionUpdate::Notice(notice) => {
            err(&format!("! {}: {}", notice.title, notice.description.as_deref().unwrap_or_default()));
        }
        _ => {}
    }
}

fn permission_reply(request: &acp::RequestPermissionRequest, yes: bool) -> acp::RequestPermissionResponse {
    let wanted =
        if yes { acp::PermissionOptionKind::AllowOnce } else { acp::PermissionOptionKind::RejectOnce };
    let title = request.tool_call.fields.title.clone().unwrap_or_default();
    err(&format!("? {title}: {}", if yes { "allowed (--yes)" } else { "rejected (pass --yes to allow)" }));
    let outcome = match request.options.iter().find(|o| o.kind == wanted) {
        Some(option) => acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(
            option.option_id.clone(),
        )),
        None => acp::RequestPermissionOutcome::Cancelled,
    };
    acp::RequestPermissionResponse::new(outcome)
}

async fn drive(
    cx: agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>,
    options: &Options,
) -> Result<Exit, Error> {
    // Notices (an MCP server that failed) go to stderr, not into the answer.
    let capabilities = acp::ClientCapabilities::new()
        .session(acp::ClientSessionCapabilities::new().notices(acp::NoticeCapabilities::new()));
    cx.send_request(
        acp::InitializeRequest::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .client_capabilities(capabilities),
    )
    .block_task()
    .await?;
    let session = cx.send_request(acp::NewSessionRequest::new(options.cwd.clone())).block_task().await?;
    let prompt = vec![acp::ContentBlock::Text(acp::TextContent::new(options.prompt.clone()))];
    let request = cx.send_request(acp::PromptRequest::new(session.session_id.clone(), prompt)).block_task();
    let response = tokio::select! {
        response = request => response?,
        _ = tokio::signal::ctrl_c() => {
            cx.send_notification(acp::CancelNotification::new(session.session_id.clone()))?;
            err("cancelled");
            return Ok(Exit::Stopped);
        }
    };
    out("\n");
    Ok(match response.stop_reason {
        acp::StopReason::EndTurn => Exit::Done,
        other => {
            err(&format!(
                "stopped: {}",
                serde_json::to_value(other).map(|v| v.to_string()).unwrap_or_default()
            ));
            Exit::Stopped
        }
    })
}

/// Run one prompt headlessly.
pub async fn run(sources: Sources, options: Options) -> Exit {
    if let Ok(loaded) = Config::load(&sources, &options.cwd, &Trust::new(&sources))
        && let Some(request) = loaded.untrusted
    {
        err(&request.ignored());
    }
    let (agent_io, client_io) = tokio::io::duplex(1 << 20);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    // A headless run never trusts a project, not even with --yes: it said above which settings it ignores.
    let agent = tokio::spawn(super::serve_with(
        ByteStreams::new(agent_write.compat_write(), agent_read.compat()),
        crate::session::Manager::new(sources).without_trust_questions(),
    ));
    let titles = Titles::default();
    let yes = options.yes;
    let result = Client
        .v1()
        .name("tinycode-run")
        .on_receive_notification(
            async move |notification: acp::SessionNotification, _cx| {
                show(&notification.update, &titles);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: acp::RequestPermissionRequest, responder, _cx| {
                responder.respond(permission_reply(&request, yes))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(ByteStreams::new(client_write.compat_write(), client_read.compat()), async |cx| {
            drive(cx, &options).await
        })
        .await;
    agent.abort();
    match result {
        Ok(exit) => exit,
        Err(e) => {
            err(&format!("error: {}", e.message));
            Exit::Failed
        }
    }
}
