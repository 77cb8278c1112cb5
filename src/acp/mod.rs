//! The ACP agent: the only module that speaks the Agent Client Protocol. It wires the SDK's builder to the
//! session manager, answers `initialize`, `session/new`, `session/prompt` and `session/cancel`, and relays
//! the core's events and questions to the editor through [`client::SessionClient`].
//!
//! Owns protocol concerns (capabilities, error codes, ordering). Decisions belong to the core.

pub mod client;
pub mod convert;
pub mod headless;
pub mod prompt;
pub mod render;

use std::sync::{Arc, RwLock};

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error, ErrorCode};
use serde_json::Value;

use crate::config::Sources;
use crate::session::{Manager, Seams};
use client::SessionClient;

/// The state shared by all handlers of one connection.
pub struct State {
    manager: Manager,
    client: RwLock<Option<acp::InitializeRequest>>,
}

impl State {
    pub fn new(manager: Manager) -> Self {
        Self { manager, client: RwLock::new(None) }
    }

    /// The capabilities the client declared in `initialize` (none before it).
    pub fn client_capabilities(&self) -> acp::ClientCapabilities {
        match self.client.read() {
            Ok(client) => client.as_ref().map(|c| c.client_capabilities.clone()).unwrap_or_default(),
            Err(_) => acp::ClientCapabilities::default(),
        }
    }
}

fn session_not_found(id: &acp::SessionId) -> Error {
    Error::new(ErrorCode::RESOURCE_NOT_FOUND, format!("Session not found: {id}"))
        .data(serde_json::json!({"sessionId": id}))
}

fn capabilities() -> acp::AgentCapabilities {
    acp::AgentCapabilities::new()
        .load_session(false)
        .prompt_capabilities(acp::PromptCapabilities::new().image(true).embedded_context(true).audio(false))
}

fn initialize(
    state: &State,
    request: acp::InitializeRequest,
    responder: Responder<acp::InitializeResponse>,
) -> Result<(), Error> {
    tracing::info!(client = ?request.client_info, "initialize");
    if let Ok(mut client) = state.client.write() {
        *client = Some(request);
    }
    responder.respond(
        acp::InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(capabilities())
            .auth_methods(Vec::new())
            .agent_info(acp::Implementation::new("tinycode", env!("CARGO_PKG_VERSION")).title("tinycode")),
    )
}

fn new_session(
    state: &State,
    request: acp::NewSessionRequest,
    responder: Responder<acp::NewSessionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let cwd = request.cwd;
    if !cwd.is_absolute() {
        return responder.respond_with_error(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd must be an absolute path, got \"{}\"", cwd.display()),
        ));
    }
    if !cwd.is_dir() {
        return responder.respond_with_error(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd is not an existing directory: {}", cwd.display()),
        ));
    }
    let mcp: Vec<Value> = request.mcp_servers.iter().filter_map(|s| serde_json::to_value(s).ok()).collect();
    let capabilities = state.client_capabilities();
    let created = state.manager.create(&cwd, mcp, |id| {
        let client = Arc::new(SessionClient::new(cx.clone(), id, capabilities.clone(), cwd.clone()));
        let fs: Option<Arc<dyn crate::tool::files::ClientFs>> =
            if client.has_fs() { Some(client.clone()) } else { None };
        let terminals: Option<Arc<dyn crate::tool::shell::terminal::ClientTerminals>> =
            if client.offers_terminals() { Some(client.clone()) } else { None };
        Seams { sink: client.clone(), approver: Some(client), fs, terminals }
    });
    match created {
        Ok(session) => {
            tracing::info!(session = %session.id, cwd = %cwd.display(), "session/new");
            responder.respond(acp::NewSessionResponse::new(session.id.clone()))
        }
        Err(e) => responder.respond_with_error(Error::new(ErrorCode::INVALID_PARAMS, e.to_string())),
    }
}

fn prompt(
    state: &State,
    request: acp::PromptRequest,
    responder: Responder<acp::PromptResponse>,
) -> Result<(), Error> {
    let Some(session) = state.manager.get(&request.session_id.0) else {
        return responder.respond_with_error(session_not_found(&request.session_id));
    };
    // The turn runs on its own task: the dispatch loop must stay free for cancel and permission replies.
    tokio::spawn(async move {
        let parts = match prompt::user_parts(&request.prompt).await {
            Ok(parts) => parts,
            Err(e) => {
                let _ = responder.respond_with_error(Error::new(ErrorCode::INVALID_PARAMS, e.to_string()));
                return;
            }
        };
        let reply = match session.prompt(parts).await {
            Ok(stop) => responder.respond(acp::PromptResponse::new(convert::stop_reason(stop))),
            Err(e) => {
                tracing::warn!(session = %session.id, error = %e, "turn failed");
                responder.respond_with_error(Error::new(ErrorCode::INTERNAL_ERROR, e.user_message()))
            }
        };
        if let Err(e) = reply {
            tracing::debug!(error = %e, "prompt response not sent (connection closing)");
        }
    });
    Ok(())
}

fn cancel(state: &State, notification: acp::CancelNotification) {
    match state.manager.get(&notification.session_id.0) {
        Some(session) => session.cancel(),
        None => tracing::debug!(session = %notification.session_id, "cancel for unknown session ignored"),
    }
}

/// Serve one ACP connection with the built-in tools until the client closes it.
pub async fn serve(transport: impl ConnectTo<Agent> + 'static, sources: Sources) -> Result<(), Error> {
    serve_with(transport, Manager::new(sources)).await
}

/// Serve one ACP connection with `manager`'s sessions until the client closes it; then cancel every
/// session's work.
pub async fn serve_with(transport: impl ConnectTo<Agent> + 'static, manager: Manager) -> Result<(), Error> {
    let state = Arc::new(State::new(manager));
    let result = Agent
        .v1()
        .name("tinycode")
        .on_receive_request(
            {
                let state = state.clone();
                async move |request: acp::InitializeRequest, responder, _cx| {
                    initialize(&state, request, responder)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = state.clone();
                async move |request: acp::NewSessionRequest, responder, cx| {
                    new_session(&state, request, responder, cx)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = state.clone();
                async move |request: acp::PromptRequest, responder, _cx| prompt(&state, request, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let state = state.clone();
                async move |notification: acp::CancelNotification, _cx| {
                    cancel(&state, notification);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    state.manager.close_all();
    result
}
