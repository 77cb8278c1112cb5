//! The ACP agent: the only module that speaks the Agent Client Protocol. It wires the SDK's builder to the
//! session manager, answers `initialize`, `session/new`, `session/prompt` and `session/cancel`, and relays
//! the core's events and questions to the editor through [`client::SessionClient`].
//!
//! Owns protocol concerns (capabilities, error codes, ordering). Decisions belong to the core.

pub mod auth;
pub mod client;
pub mod coalesce;
pub mod convert;
pub mod early;
pub mod frames;
pub mod handlers;
pub mod headless;
pub mod lines;
pub mod mcp;
pub mod params;
pub mod prompt;
pub mod question;
pub mod render;
pub mod serve;
pub mod stdio;
pub mod trust;

/// The frame checker of the integration tests (the official ACP schema of the pinned crate), shared with the unit
/// tests here that build wire values.
#[cfg(test)]
#[path = "../../tests/support/schema.rs"]
#[allow(dead_code)]
pub(crate) mod schema_check;

use std::sync::{Arc, RwLock};

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Agent, ConnectTo, Error};

use crate::config::Sources;
use crate::session::Manager;

/// The state shared by all handlers of one connection.
pub struct State {
    manager: Manager,
    client: RwLock<Option<acp::InitializeRequest>>,
    /// The stdio transport's early answer to `initialize` (see [`early`]).
    early: Option<Arc<early::Handover>>,
}

impl State {
    pub fn new(manager: Manager) -> Self {
        Self { manager, client: RwLock::new(None), early: None }
    }

    /// The capabilities the client declared in `initialize` (none before it).
    pub fn client_capabilities(&self) -> acp::ClientCapabilities {
        match self.client.read() {
            Ok(client) => client.as_ref().map(|c| c.client_capabilities.clone()).unwrap_or_default(),
            Err(_) => acp::ClientCapabilities::default(),
        }
    }
}

/// The `_meta` key of tinycode's protocol extensions (documented in `protocol/README.md`).
pub const META_KEY: &str = "tinycode";

/// What `agentCapabilities._meta.tinycode` advertises: prompts sent during a turn are queued (not cancelling
/// it), and a prompt with `_meta.tinycode.steer: true` steers the running turn.
pub fn extensions() -> serde_json::Value {
    serde_json::json!({
        "promptQueueing": true,
        "steering": {"supported": true, "promptMeta": "steer", "command": "/steer"},
    })
}

/// What the agent offers; images only when the default model takes them.
fn capabilities(images: bool) -> acp::AgentCapabilities {
    let mut meta = acp::Meta::new();
    meta.insert(META_KEY.to_string(), extensions());
    acp::AgentCapabilities::new()
        .meta(meta)
        .load_session(true)
        .prompt_capabilities(acp::PromptCapabilities::new().image(images).embedded_context(true).audio(false))
        .session_capabilities(
            acp::SessionCapabilities::new()
                .list(acp::SessionListCapabilities::new())
                .resume(acp::SessionResumeCapabilities::new())
                .close(acp::SessionCloseCapabilities::new())
                .delete(acp::SessionDeleteCapabilities::new())
                .additional_directories(acp::SessionAdditionalDirectoriesCapabilities::new()),
        )
        .mcp_capabilities(acp::McpCapabilities::new().http(true).sse(false))
}

fn initialize(
    state: &State,
    request: acp::InitializeRequest,
    responder: Responder<acp::InitializeResponse>,
) -> Result<(), Error> {
    tracing::info!(client = ?request.client_info, "initialize");
    // The first `initialize` of a stdio connection was answered before it got here: the same answer again.
    let early = state.early.as_ref().and_then(|early| early.take_response());
    let response = early.unwrap_or_else(|| initialize_response(state.manager.sources(), &request));
    if let Ok(mut client) = state.client.write() {
        *client = Some(request);
    }
    responder.respond(response)
}

/// The answer to `initialize`: what the agent offers, given the user's configuration (images when the default
/// model takes them; the sign-in methods the client can run). The SDK's handler and the [`early`] answer both
/// give this.
pub fn initialize_response(sources: &Sources, request: &acp::InitializeRequest) -> acp::InitializeResponse {
    let config = auth::user_config(sources);
    let images = config.as_ref().is_some_and(auth::takes_images);
    let methods = config.as_ref().map(|c| auth::methods(c, &request.client_capabilities)).unwrap_or_default();
    acp::InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
        .agent_capabilities(capabilities(images))
        .auth_methods(methods)
        .agent_info(acp::Implementation::new("tinycode", env!("CARGO_PKG_VERSION")).title("tinycode"))
}

fn cancel(state: &State, notification: acp::CancelNotification) {
    match state.manager.get_or_subagent(&notification.session_id.0) {
        Some(session) => session.cancel(),
        None => tracing::debug!(session = %notification.session_id, "cancel for unknown session ignored"),
    }
}

/// What `tinycode acp` starts before the async runtime, for [`serve`] to take over.
#[derive(Default)]
pub struct Started {
    /// What the transport answered before the connection started ([`stdio::Transport::handover`]).
    pub early: Option<Arc<early::Handover>>,
    /// The session database, being opened since (at the path the manager would use).
    pub store: Option<crate::store::Opening>,
}

/// Serve one ACP connection with the built-in tools until the client closes it.
pub async fn serve(
    transport: impl ConnectTo<Agent> + 'static,
    sources: Sources,
    started: Started,
) -> Result<(), Error> {
    // Beside the rest of the start-up, not before it: `initialize` needs its params schema (unless the transport
    // answered it already), the later requests their own schemas; whatever is not ready yet is built on first use.
    crate::warm::spawn("tinycode-warm", params::warm_initialize, params::warm);
    let mut manager = Manager::new(sources);
    if let Some(opening) = started.store {
        manager = manager.with_opening(opening);
    }
    let state = State { early: started.early, ..State::new(manager) };
    serve_state(transport, state).await
}

/// Serve one ACP connection with `manager`'s sessions until the client closes it; then cancel every
/// session's work.
pub async fn serve_with(transport: impl ConnectTo<Agent> + 'static, manager: Manager) -> Result<(), Error> {
    serve_state(transport, State::new(manager)).await
}

async fn serve_state(transport: impl ConnectTo<Agent> + 'static, state: State) -> Result<(), Error> {
    let state = Arc::new(state);
    // Open the session database now, so the first session/new does not wait for it.
    tokio::spawn({
        let state = state.clone();
        async move {
            if let Err(e) = state.manager.store().await {
                tracing::error!(error = %e, "sessions will not be saved");
            }
        }
    });
    // Scheduled jobs fire while this connection is served.
    tokio::spawn({
        let state = state.clone();
        async move { state.manager.run_schedule().await }
    });
    macro_rules! request {
        ($builder:expr, $kind:ty, |$state:ident, $request:ident, $responder:ident, $cx:ident| $body:expr) => {{
            let $state = state.clone();
            $builder.on_receive_request(
                async move |$request: $kind, $responder, $cx| $body,
                agent_client_protocol::on_receive_request!(),
            )
        }};
    }
    let builder = Agent.v1().name("tinycode").with_handler(params::ParamsCheck);
    let builder =
        request!(builder, acp::InitializeRequest, |s, r, responder, _cx| initialize(&s, r, responder));
    let builder = request!(builder, acp::NewSessionRequest, |s, r, responder, cx| handlers::new_session(
        &s, r, responder, cx
    )
    .await);
    let builder = request!(builder, acp::LoadSessionRequest, |s, r, responder, cx| handlers::load_session(
        &s, r, responder, cx
    )
    .await);
    let builder =
        request!(builder, acp::ResumeSessionRequest, |s, r, responder, cx| handlers::resume_session(
            &s, r, responder, cx
        )
        .await);
    let builder =
        request!(builder, acp::ListSessionsRequest, |s, r, responder, _cx| handlers::list_sessions(
            &s, r, responder
        )
        .await);
    let builder =
        request!(builder, acp::CloseSessionRequest, |s, r, responder, _cx| handlers::close_session(
            &s, r, responder
        )
        .await);
    let builder =
        request!(builder, acp::DeleteSessionRequest, |s, r, responder, _cx| handlers::delete_session(
            &s, r, responder
        )
        .await);
    let builder = request!(builder, acp::SetSessionModeRequest, |s, r, responder, cx| handlers::set_mode(
        &s, r, responder, cx
    ));
    let builder = request!(builder, acp::SetSessionConfigOptionRequest, |s, r, responder, cx| {
        handlers::set_config_option(&s, r, responder, cx)
    });
    let builder =
        request!(builder, acp::PromptRequest, |s, r, responder, _cx| handlers::prompt(&s, r, responder));
    let builder = request!(builder, acp::AuthenticateRequest, |s, r, responder, _cx| auth::authenticate(
        &s, r, responder
    )
    .await);
    let result = builder
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
    state.manager.shutdown().await;
    result
}
