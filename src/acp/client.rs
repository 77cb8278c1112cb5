//! The client side of one session as the core sees it: [`SessionClient`] implements the core's seams
//! ([`EventSink`], [`Approver`]) with `session/update` notifications and `session/request_permission`.
//!
//! Owns how core requests become ACP traffic. Must not make decisions; it only relays.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use futures::future::BoxFuture;

use super::convert;
use crate::agent::{AgentEvent, EventSink};
use crate::permission::{Approver, Ask, Reply};
use crate::tool::files::ClientFs;

/// The connection to the editor, bound to one session.
#[derive(Clone)]
pub struct SessionClient {
    cx: ConnectionTo<Client>,
    session_id: acp::SessionId,
    /// What the client declared in `initialize`.
    capabilities: acp::ClientCapabilities,
}

impl SessionClient {
    pub fn new(cx: ConnectionTo<Client>, session_id: &str, capabilities: acp::ClientCapabilities) -> Self {
        Self { cx, session_id: acp::SessionId::from(session_id.to_string()), capabilities }
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

impl EventSink for SessionClient {
    fn emit(&self, event: AgentEvent) {
        self.send(convert::update(event));
    }
}

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

fn options() -> Vec<acp::PermissionOption> {
    vec![
        acp::PermissionOption::new(ALLOW_ONCE, "Allow once", acp::PermissionOptionKind::AllowOnce),
        acp::PermissionOption::new(ALLOW_ALWAYS, "Always allow", acp::PermissionOptionKind::AllowAlways),
        acp::PermissionOption::new(REJECT_ONCE, "Reject", acp::PermissionOptionKind::RejectOnce),
        acp::PermissionOption::new(REJECT_ALWAYS, "Always reject", acp::PermissionOptionKind::RejectAlways),
    ]
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
    if !p.content.is_empty() {
        fields = fields.content(convert::contents(&p.content));
    }
    acp::ToolCallUpdate::new(ask.call_id.clone(), fields)
}

impl Approver for SessionClient {
    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let request =
                acp::RequestPermissionRequest::new(self.session_id.clone(), ask_tool_call(ask), options());
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
                Err(e) => {
                    tracing::warn!(error = %e, "session/request_permission failed; ending the turn");
                    Reply::Cancelled
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

    fn read(&self, path: &std::path::Path) -> BoxFuture<'_, Result<String, String>> {
        let request = acp::ReadTextFileRequest::new(self.session_id.clone(), path.to_path_buf());
        Box::pin(async move {
            self.cx.send_request(request).block_task().await.map(|r| r.content).map_err(|e| e.message)
        })
    }

    fn write<'a>(&'a self, path: &'a std::path::Path, content: &'a str) -> BoxFuture<'a, Result<(), String>> {
        let request =
            acp::WriteTextFileRequest::new(self.session_id.clone(), path.to_path_buf(), content.to_string());
        Box::pin(async move {
            self.cx.send_request(request).block_task().await.map(|_| ()).map_err(|e| e.message)
        })
    }
}
