//! `tinycode run "<prompt>"`: the same agent, driven by an in-process ACP client over a duplex pipe. The client
//! starts a session (or resumes a stored one), applies `--model`/`--mode` as config options, sends the prompt and
//! prints what comes back through [`output::Output`]; the exit code says how the turn ended.
//!
//! Owns the headless client's behaviour. The agent side is exactly what `tinycode acp` serves.

pub mod output;

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{ByteStreams, Client, Error};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::cli::Exit;
use crate::config::trust::Trust;
use crate::config::{Config, Sources};
use output::Output;

/// What the headless run was asked to do.
pub struct Options {
    pub prompt: String,
    pub cwd: PathBuf,
    /// Approve every permission ask once (otherwise asks are rejected).
    pub yes: bool,
    /// One JSON event per line instead of text.
    pub json: bool,
    pub model: Option<String>,
    pub mode: Option<String>,
    /// Continue this stored session instead of starting one.
    pub resume: Option<String>,
}

/// A failure with the exit code it maps to.
struct Failure {
    exit: Exit,
    message: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure { exit: Exit::Failed, message: e.message }
    }
}

fn permission_reply(
    request: &acp::RequestPermissionRequest,
    yes: bool,
    output: &Output,
) -> acp::RequestPermissionResponse {
    let wanted =
        if yes { acp::PermissionOptionKind::AllowOnce } else { acp::PermissionOptionKind::RejectOnce };
    let title = request.tool_call.fields.title.clone().unwrap_or_default();
    let option = request.options.iter().find(|o| o.kind == wanted);
    output.permission(&request.tool_call.tool_call_id.0, &title, yes && option.is_some());
    let outcome = match option {
        Some(option) => acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(
            option.option_id.clone(),
        )),
        None => acp::RequestPermissionOutcome::Cancelled,
    };
    acp::RequestPermissionResponse::new(outcome)
}

type Connection = agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>;

/// Start or resume the session and apply the options; the session id.
async fn open_session(
    cx: &Connection,
    options: &Options,
    output: &Output,
) -> Result<acp::SessionId, Failure> {
    let session = match &options.resume {
        Some(id) => {
            let id = acp::SessionId::new(id.as_str());
            cx.send_request(acp::ResumeSessionRequest::new(id.clone(), options.cwd.clone()))
                .block_task()
                .await?;
            id
        }
        None => {
            cx.send_request(acp::NewSessionRequest::new(options.cwd.clone())).block_task().await?.session_id
        }
    };
    output.session(&session.0, &options.cwd, options.resume.is_some());
    for (option, value, flag) in [("mode", &options.mode, "--mode"), ("model", &options.model, "--model")] {
        let Some(value) = value else { continue };
        let request = acp::SetSessionConfigOptionRequest::new(session.clone(), option, value.as_str());
        if let Err(e) = cx.send_request(request).block_task().await {
            return Err(Failure { exit: Exit::Usage, message: format!("{flag} {value}: {}", e.message) });
        }
    }
    Ok(session)
}

async fn drive(cx: Connection, options: &Options, output: &Output) -> Result<(String, Exit), Failure> {
    // Notices (an MCP server that failed) go to stderr, not into the answer.
    let capabilities = acp::ClientCapabilities::new()
        .session(acp::ClientSessionCapabilities::new().notices(acp::NoticeCapabilities::new()));
    cx.send_request(
        acp::InitializeRequest::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .client_capabilities(capabilities),
    )
    .block_task()
    .await?;
    let session = open_session(&cx, options, output).await?;
    let prompt = vec![acp::ContentBlock::Text(acp::TextContent::new(options.prompt.clone()))];
    let request = cx.send_request(acp::PromptRequest::new(session.clone(), prompt)).block_task();
    tokio::pin!(request);
    let response = tokio::select! {
        response = &mut request => response?,
        _ = tokio::signal::ctrl_c() => {
            // Ask the agent to stop and wait for its answer (a second Ctrl-C stops waiting).
            cx.send_notification(acp::CancelNotification::new(session))?;
            tokio::select! {
                response = &mut request => response?,
                _ = tokio::signal::ctrl_c() => return Ok(("cancelled".into(), Exit::Stopped)),
            }
        }
    };
    let reason = serde_json::to_value(response.stop_reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let exit = if response.stop_reason == acp::StopReason::EndTurn { Exit::Done } else { Exit::Stopped };
    Ok((reason, exit))
}

/// Run one prompt headlessly, printing to stdout and stderr.
pub async fn run(sources: Sources, options: Options) -> Exit {
    let output = Arc::new(Output::standard(options.json));
    run_with(sources, options, output).await
}

/// How long a headless run waits, after its prompt, for the agent to save and stop.
const AGENT_SHUTDOWN: std::time::Duration = std::time::Duration::from_secs(10);

/// Run one prompt headlessly, printing through `output`.
pub async fn run_with(sources: Sources, options: Options, output: Arc<Output>) -> Exit {
    if let Ok(loaded) = Config::load(&sources, &options.cwd, &Trust::new(&sources))
        && let Some(request) = loaded.untrusted
    {
        output.notice(request.ignored().trim_end());
    }
    let (agent_io, client_io) = tokio::io::duplex(1 << 20);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    // A headless run never trusts a project, not even with --yes: it said above which settings it ignores.
    let agent = tokio::spawn(super::serve_with(
        ByteStreams::new(agent_write.compat_write(), agent_read.compat()),
        crate::session::Manager::new(sources).without_trust_questions().without_schedule(),
    ));
    let yes = options.yes;
    let (updates, asks) = (output.clone(), output.clone());
    let result = Client
        .v1()
        .name("tinycode-run")
        .on_receive_notification(
            async move |notification: acp::SessionNotification, _cx| {
                if let Ok(update) = serde_json::to_value(&notification.update) {
                    updates.update(&update);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: acp::RequestPermissionRequest, responder, _cx| {
                responder.respond(permission_reply(&request, yes, &asks))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(ByteStreams::new(client_write.compat_write(), client_read.compat()), async |cx| {
            Ok(drive(cx, &options, &output).await)
        })
        .await;
    // The client's end is closed now: the agent finishes saving the session (its store queue) and stops its
    // servers. Aborting it instead could lose the turn's last messages when the process exits.
    let mut agent = agent;
    if tokio::time::timeout(AGENT_SHUTDOWN, &mut agent).await.is_err() {
        tracing::warn!("the agent did not stop within {AGENT_SHUTDOWN:?}; exiting anyway");
        agent.abort();
    }
    let outcome = result.map_err(Failure::from).and_then(|r| r);
    match outcome {
        Ok((reason, exit)) => {
            output.stop(&reason, exit as u8);
            exit
        }
        Err(failure) => {
            output.error(&failure.message, failure.exit as u8);
            failure.exit
        }
    }
}
