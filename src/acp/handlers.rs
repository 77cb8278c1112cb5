//! The request handlers: each answers one ACP method by calling the session layer, maps its errors to ACP error
//! codes, and keeps the ordering rules (a session's updates go out after the `session/new` answer; a load's
//! replay goes out before the `session/load` answer; turns run on their own tasks).
//!
//! Owns protocol mapping only; decisions belong to the core.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use futures::FutureExt;
use serde_json::Value;

use super::client::SessionClient;
use super::{State, convert, prompt};
use crate::session::manager::SessionError;
use crate::session::settings::{MODE_OPTION, Mode};
use crate::session::{Seams, Session};

fn error(e: SessionError) -> Error {
    match &e {
        SessionError::NotFound(id) => Error::new(ErrorCode::RESOURCE_NOT_FOUND, e.to_string())
            .data(serde_json::json!({"sessionId": id})),
        SessionError::Invalid(_) | SessionError::Config(_) => {
            Error::new(ErrorCode::INVALID_PARAMS, e.to_string())
        }
        SessionError::Store(_) => Error::new(ErrorCode::INTERNAL_ERROR, e.to_string()),
    }
}

fn not_found(id: &acp::SessionId) -> Error {
    error(SessionError::NotFound(id.to_string()))
}

fn check_cwd(cwd: &Path) -> Result<(), Error> {
    if !cwd.is_absolute() {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd must be an absolute path, got \"{}\"", cwd.display()),
        ));
    }
    if !cwd.is_dir() {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd is not an existing directory: {}", cwd.display()),
        ));
    }
    Ok(())
}

/// `additionalDirectories` must be absolute paths of existing directories.
fn check_additional(dirs: &[std::path::PathBuf]) -> Result<(), Error> {
    match dirs.iter().find(|d| !d.is_absolute() || !d.is_dir()) {
        None => Ok(()),
        Some(dir) => Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "additionalDirectories must be absolute paths of existing directories: {}",
                dir.display()
            ),
        )),
    }
}

/// Seams for session `id` over this connection.
fn seams(
    state: &State,
    cx: &ConnectionTo<Client>,
    id: &str,
    cwd: &Path,
    additional: &[std::path::PathBuf],
) -> (Seams, Arc<SessionClient>) {
    let client = Arc::new(SessionClient::new(cx.clone(), id, state.client_capabilities(), cwd.to_path_buf()));
    let fs: Option<Arc<dyn crate::workspace::files::ClientFs>> =
        if client.has_fs() { Some(client.clone()) } else { None };
    let terminals: Option<Arc<dyn crate::shell::terminal::ClientTerminals>> =
        if client.offers_terminals() { Some(client.clone()) } else { None };
    (
        Seams {
            sink: client.clone(),
            settings: client.clone(),
            approver: Some(client.clone()),
            fs,
            terminals,
            asker: Some(client.clone()),
            trust: Some(client.clone()),
            elicitor: if super::mcp::elicits(&client.capabilities) { Some(client.clone()) } else { None },
            additional_directories: additional.to_vec(),
        },
        client,
    )
}

fn state_of(session: &Session) -> (acp::SessionModeState, Vec<acp::SessionConfigOption>) {
    (convert::modes(session.settings().mode), convert::config_options(&session.options()))
}

/// What `session/new` requires of its request as it stands: an absolute, existing `cwd` and additional
/// directories.
pub(super) fn check_new(request: &acp::NewSessionRequest) -> Result<(), Error> {
    check_cwd(&request.cwd).and_then(|()| check_additional(&request.additional_directories))
}

pub async fn new_session(
    state: &State,
    request: acp::NewSessionRequest,
    responder: Responder<acp::NewSessionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    if let Err(e) = check_new(&request) {
        return responder.respond_with_error(e);
    }
    let mcp = super::mcp::declared_all(&request.mcp_servers);
    let seams = |id: &str| seams(state, &cx, id, &request.cwd, &request.additional_directories).0;
    // The stdio transport may have answered this request already, with a session decided for it (`early`).
    let early = state.early.as_ref().and_then(|early| early.take_session(&request));
    let (session, answered) = match early {
        Some((prepared, answer)) => (state.manager.create_prepared(prepared, mcp, seams).await, Some(answer)),
        None => match state.manager.create(&request.cwd, mcp, seams).await {
            Ok(session) => (session, None),
            Err(e) => return responder.respond_with_error(error(e)),
        },
    };
    tracing::info!(session = %session.id, cwd = %request.cwd.display(), "session/new");
    if answered.is_some() {
        // Said here, not where it was answered: that can be before logging has started.
        tracing::debug!(session = %session.id, "session/new answered early");
    }
    let (modes, options) = state_of(&session);
    let response = acp::NewSessionResponse::new(session.id.clone()).modes(modes).config_options(options);
    // Answered early already: this answer is dropped by the transport, and the editor is told what differs.
    let differs = answered.filter(|answered| *answered != response);
    responder.respond(response.clone())?;
    if let Some(answered) = differs {
        catch_up(&session, &cx, &answered, &response);
    }
    // Let the answer be written before the work that follows it (the commands, the model list, the trust
    // question): on a busy machine that work held the answer back by a few tenths of a millisecond.
    tokio::task::yield_now().await;
    session.announce();
    session.refresh_models();
    session.offer_trust();
    Ok(())
}

/// Bring the editor from the state it was `answered` to the session's `actual` one (an early answer to
/// `session/new` is decided before the session is built; it should never differ).
fn catch_up(
    session: &Session,
    cx: &ConnectionTo<Client>,
    answered: &acp::NewSessionResponse,
    actual: &acp::NewSessionResponse,
) {
    tracing::warn!(session = %session.id, "the session differs from the early answer to session/new; updating the editor");
    let notify = |update| {
        let _ = cx.send_notification(acp::SessionNotification::new(session.id.clone(), update));
    };
    let mode = |r: &acp::NewSessionResponse| r.modes.as_ref().map(|m| m.current_mode_id.clone());
    if let Some(current) = mode(actual).filter(|current| mode(answered).as_ref() != Some(current)) {
        notify(acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(current)));
    }
    if let Some(options) =
        actual.config_options.clone().filter(|o| answered.config_options.as_ref() != Some(o))
    {
        notify(acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(options)));
    }
}

/// `session/load` (with replay) and `session/resume` (without).
async fn open(
    state: &State,
    (id, cwd, additional): (&acp::SessionId, &Path, &[std::path::PathBuf]),
    mcp: Option<&[acp::McpServer]>,
    cx: &ConnectionTo<Client>,
    replay: bool,
) -> Result<Arc<Session>, Error> {
    check_cwd(cwd)?;
    check_additional(additional)?;
    let (seams, client) = seams(state, cx, &id.0, cwd, additional);
    let declared = mcp.map(super::mcp::declared_all);
    let (session, events) = state.manager.open(&id.0, cwd, declared, seams, replay).await.map_err(error)?;
    for event in events {
        crate::agent::EventSink::emit(client.as_ref(), event);
    }
    // The replay is complete before the load is answered.
    crate::agent::EventSink::flush(client.as_ref());
    Ok(session)
}

pub async fn load_session(
    state: &State,
    request: acp::LoadSessionRequest,
    responder: Responder<acp::LoadSessionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let target = (&request.session_id, request.cwd.as_path(), request.additional_directories.as_slice());
    match open(state, target, Some(&request.mcp_servers), &cx, true).await {
        Ok(session) => {
            let (modes, options) = state_of(&session);
            responder.respond(acp::LoadSessionResponse::new().modes(modes).config_options(options))?;
            session.announce();
            session.refresh_models();
            session.offer_trust();
            Ok(())
        }
        Err(e) => responder.respond_with_error(e),
    }
}

pub async fn resume_session(
    state: &State,
    request: acp::ResumeSessionRequest,
    responder: Responder<acp::ResumeSessionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    // Resume's `mcpServers` is optional: none given keeps the servers a live session has.
    let mcp = Some(request.mcp_servers.as_slice()).filter(|list| !list.is_empty());
    let target = (&request.session_id, request.cwd.as_path(), request.additional_directories.as_slice());
    match open(state, target, mcp, &cx, false).await {
        Ok(session) => {
            let (modes, options) = state_of(&session);
            responder.respond(acp::ResumeSessionResponse::new().modes(modes).config_options(options))?;
            session.announce();
            session.refresh_models();
            session.offer_trust();
            Ok(())
        }
        Err(e) => responder.respond_with_error(e),
    }
}

pub async fn list_sessions(
    state: &State,
    request: acp::ListSessionsRequest,
    responder: Responder<acp::ListSessionsResponse>,
) -> Result<(), Error> {
    match state.manager.list(request.cwd.as_deref(), request.cursor.clone()).await {
        Ok(page) => {
            let sessions = page
                .sessions
                .into_iter()
                .map(|row| {
                    acp::SessionInfo::new(row.id, std::path::PathBuf::from(row.cwd))
                        .title(row.title)
                        .updated_at(crate::clock::iso8601(row.updated_at))
                })
                .collect();
            responder.respond(acp::ListSessionsResponse::new(sessions).next_cursor(page.next))
        }
        Err(e) => responder.respond_with_error(error(e)),
    }
}

pub async fn close_session(
    state: &State,
    request: acp::CloseSessionRequest,
    responder: Responder<acp::CloseSessionResponse>,
) -> Result<(), Error> {
    match state.manager.close(&request.session_id.0).await {
        Ok(()) => responder.respond(acp::CloseSessionResponse::new()),
        Err(e) => responder.respond_with_error(error(e)),
    }
}

pub async fn delete_session(
    state: &State,
    request: acp::DeleteSessionRequest,
    responder: Responder<acp::DeleteSessionResponse>,
) -> Result<(), Error> {
    match state.manager.delete(&request.session_id.0).await {
        Ok(()) => responder.respond(acp::DeleteSessionResponse::new()),
        Err(e) => responder.respond_with_error(error(e)),
    }
}

/// Apply an option change and keep the legacy mode state and the options in step on the client.
fn change(
    session: &Session,
    client: &ConnectionTo<Client>,
    option: &str,
    value: &str,
    echo_options: bool,
) -> Result<Vec<acp::SessionConfigOption>, Error> {
    let before = session.settings().mode;
    let options = session.set_option(option, value).map_err(|e| Error::new(ErrorCode::INVALID_PARAMS, e))?;
    let options = convert::config_options(&options);
    let after = session.settings().mode;
    let notify = |update| {
        let _ = client.send_notification(acp::SessionNotification::new(session.id.clone(), update));
    };
    if before != after && option != MODE_OPTION {
        notify(acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(after.id())));
    }
    if option == MODE_OPTION && !echo_options {
        notify(acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(after.id())));
    }
    if echo_options {
        notify(acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(options.clone())));
    }
    Ok(options)
}

pub fn set_mode(
    state: &State,
    request: acp::SetSessionModeRequest,
    responder: Responder<acp::SetSessionModeResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let Some(session) = state.manager.get(&request.session_id.0) else {
        return responder.respond_with_error(not_found(&request.session_id));
    };
    if Mode::parse(&request.mode_id.0).is_none() {
        return responder.respond_with_error(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("unknown mode \"{}\"", request.mode_id),
        ));
    }
    match change(&session, &cx, MODE_OPTION, &request.mode_id.0, true) {
        Ok(_) => responder.respond(acp::SetSessionModeResponse::new()),
        Err(e) => responder.respond_with_error(e),
    }
}

pub fn set_config_option(
    state: &State,
    request: acp::SetSessionConfigOptionRequest,
    responder: Responder<acp::SetSessionConfigOptionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let Some(session) = state.manager.get(&request.session_id.0) else {
        return responder.respond_with_error(not_found(&request.session_id));
    };
    let value = match &request.value {
        acp::SessionConfigOptionValue::ValueId { value } => value.0.to_string(),
        _ => {
            return responder.respond_with_error(Error::new(
                ErrorCode::INVALID_PARAMS,
                "every option of this agent takes a value id",
            ));
        }
    };
    match change(&session, &cx, &request.config_id.0, &value, false) {
        Ok(options) => responder.respond(acp::SetSessionConfigOptionResponse::new(options)),
        Err(e) => responder.respond_with_error(e),
    }
}

/// Does the prompt ask to steer the running turn (`_meta.tinycode.steer: true`)?
fn wants_steering(request: &acp::PromptRequest) -> bool {
    let extension = request.meta.as_ref().and_then(|m| m.get(super::META_KEY));
    extension.and_then(|e| e.get("steer")).and_then(Value::as_bool) == Some(true)
}

/// The answer to a prompt; `_meta.tinycode` says when a steering message was delivered into the running turn,
/// and what the database had not taken yet (`unsaved`), so the answer never claims everything was kept.
fn prompt_response(answer: crate::session::Answer) -> acp::PromptResponse {
    let response = acp::PromptResponse::new(convert::stop_reason(answer.stop));
    let mut extension = serde_json::Map::new();
    if answer.steered {
        extension.insert("steered".into(), Value::Bool(true));
    }
    if let Some(unsaved) = answer.unsaved {
        extension.insert(
            "unsaved".into(),
            serde_json::json!({"items": unsaved.items, "database": unsaved.database}),
        );
    }
    if extension.is_empty() {
        return response;
    }
    let mut meta = acp::Meta::new();
    meta.insert(super::META_KEY.to_string(), Value::Object(extension));
    response.meta(meta)
}

pub fn prompt(
    state: &State,
    request: acp::PromptRequest,
    responder: Responder<acp::PromptResponse>,
) -> Result<(), Error> {
    let Some(session) = state.manager.get(&request.session_id.0) else {
        return responder.respond_with_error(not_found(&request.session_id));
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
        let blocks = serde_json::to_value(&request.prompt).unwrap_or(Value::Null);
        // A panic in the turn (tools have their own boundary) still answers the prompt instead of dropping it.
        let turn = std::panic::AssertUnwindSafe(session.submit(parts, blocks, wants_steering(&request)));
        let outcome = turn.catch_unwind().await;
        // What the turn freed (a search's buffers, a long answer) goes back to the system before the agent idles.
        crate::heap::release_free_memory();
        let reply = match outcome {
            Ok(Ok(answer)) => responder.respond(prompt_response(answer)),
            Ok(Err(e)) => {
                tracing::warn!(session = %session.id, error = %e, "turn failed");
                let code =
                    if e.needs_sign_in() { ErrorCode::AUTH_REQUIRED } else { ErrorCode::INTERNAL_ERROR };
                responder.respond_with_error(Error::new(code, e.user_message()))
            }
            Err(_) => {
                tracing::error!(session = %session.id, "the turn crashed");
                responder.respond_with_error(Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    "The turn crashed inside the agent; the session is still open. Please report this.",
                ))
            }
        };
        if let Err(e) = reply {
            tracing::debug!(error = %e, "prompt response not sent (connection closing)");
        }
    });
    Ok(())
}
