//! The project-trust question over ACP: a tool call card naming every setting the project file wants, a
//! `session/request_permission` on it with "Trust this project" and "Not now", and the card completed with what
//! became of the answer.
//!
//! Owns that mapping only. When to ask and what trust means belong to the core (`session::trust`, `config::trust`).

use agent_client_protocol::v1::schema as acp;
use futures::future::BoxFuture;

use super::client::SessionClient;
use crate::config::trust::Request;
use crate::session::{TrustAnswer, TrustAsker};

/// The option that trusts the project (headless runs recognise the question by it and never pick it).
pub const TRUST: &str = "trust_project";
pub const NOT_NOW: &str = "not_now";

/// One card per question: the settings' fingerprint names it.
fn call_id(request: &Request) -> acp::ToolCallId {
    let short = request.fingerprint.trim_start_matches("sha256:").get(..16).unwrap_or_default();
    acp::ToolCallId::from(format!("trust_{short}"))
}

fn text(text: String) -> acp::ToolCallContent {
    acp::ToolCallContent::Content(acp::Content::new(acp::ContentBlock::Text(acp::TextContent::new(text))))
}

fn fields(request: &Request) -> acp::ToolCallUpdateFields {
    acp::ToolCallUpdateFields::new()
        .title(request.title())
        .kind(acp::ToolKind::Other)
        .status(acp::ToolCallStatus::Pending)
        .content(vec![text(request.summary())])
        .locations(vec![acp::ToolCallLocation::new(request.file.clone())])
}

fn options() -> Vec<acp::PermissionOption> {
    vec![
        acp::PermissionOption::new(TRUST, "Trust this project", acp::PermissionOptionKind::AllowAlways),
        acp::PermissionOption::new(NOT_NOW, "Not now", acp::PermissionOptionKind::RejectOnce),
    ]
}

impl TrustAsker for SessionClient {
    fn ask_trust<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, TrustAnswer> {
        Box::pin(async move {
            let id = call_id(request);
            let card = acp::ToolCall::new(id.clone(), request.title())
                .kind(acp::ToolKind::Other)
                .status(acp::ToolCallStatus::Pending)
                .content(vec![text(request.summary())])
                .locations(vec![acp::ToolCallLocation::new(request.file.clone())]);
            self.send(acp::SessionUpdate::ToolCall(card));
            let ask = acp::RequestPermissionRequest::new(
                self.session_id.clone(),
                acp::ToolCallUpdate::new(id, fields(request)),
                options(),
            );
            match self.cx.send_request(ask).block_task().await {
                Ok(response) => match response.outcome {
                    acp::RequestPermissionOutcome::Selected(selected) if &*selected.option_id.0 == TRUST => {
                        TrustAnswer::Trust
                    }
                    _ => TrustAnswer::NotNow,
                },
                Err(e) => {
                    tracing::warn!(error = %e, "the project trust question failed; its settings stay ignored");
                    TrustAnswer::NotNow
                }
            }
        })
    }

    fn trust_settled(&self, request: &Request, note: &str) {
        let fields = acp::ToolCallUpdateFields::new()
            .status(acp::ToolCallStatus::Completed)
            .content(vec![text(request.summary()), text(note.to_string())]);
        self.send(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(call_id(request), fields)));
    }
}
