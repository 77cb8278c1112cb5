//! Questions from the `question` tool, put to the user over ACP: `elicitation/create` in form mode when the
//! client advertises it (an enum field for choices, a string otherwise); for clients without it, choices go
//! through `session/request_permission` with one `allow_once` option per choice plus a way out; a free-text
//! question they cannot ask is reported back so the agent sends it as a message and ends the turn.
//!
//! Owns that mapping only. The tool and its waiting belong to `tool::question`.

use std::collections::BTreeMap;

use agent_client_protocol::v1::schema as acp;
use futures::future::BoxFuture;

use super::client::SessionClient;
use crate::control::{Answer, Asker, Question};

const FIELD: &str = "answer";
const SKIP: &str = "skip";

fn form(client: &SessionClient, question: &Question) -> acp::CreateElicitationRequest {
    let field = acp::StringPropertySchema::new().title("Answer".to_string());
    let field = if question.options.is_empty() { field } else { field.enum_values(question.options.clone()) };
    let schema = acp::ElicitationSchema::new().property(FIELD, field, true);
    let scope = acp::ElicitationSessionScope::new(client.session_id.clone())
        .tool_call_id(acp::ToolCallId::from(question.call_id.clone()));
    acp::CreateElicitationRequest::new(
        acp::ElicitationFormMode::new(scope, schema),
        question.question.clone(),
    )
}

fn accepted(content: Option<BTreeMap<String, acp::ElicitationContentValue>>) -> Answer {
    match content.and_then(|mut c| c.remove(FIELD)) {
        Some(acp::ElicitationContentValue::String(text)) if !text.trim().is_empty() => Answer::Text(text),
        _ => Answer::Dismissed,
    }
}

async fn elicit(client: &SessionClient, question: &Question) -> Answer {
    match client.cx.send_request(form(client, question)).block_task().await {
        Ok(response) => match response.action {
            acp::ElicitationAction::Accept(accept) => accepted(accept.content),
            acp::ElicitationAction::Decline => Answer::Declined,
            _ => Answer::Dismissed,
        },
        Err(e) => {
            tracing::warn!(error = %e, "elicitation/create failed; sending the question as a message");
            Answer::Unavailable
        }
    }
}

async fn choose(client: &SessionClient, question: &Question) -> Answer {
    let mut options: Vec<acp::PermissionOption> = question
        .options
        .iter()
        .enumerate()
        .map(|(n, choice)| {
            acp::PermissionOption::new(
                format!("choice_{n}"),
                choice.clone(),
                acp::PermissionOptionKind::AllowOnce,
            )
        })
        .collect();
    options.push(acp::PermissionOption::new(SKIP, "Don't answer", acp::PermissionOptionKind::RejectOnce));
    let fields = acp::ToolCallUpdateFields::new()
        .title(question.question.clone())
        .kind(acp::ToolKind::Other)
        .status(acp::ToolCallStatus::Pending);
    let call = acp::ToolCallUpdate::new(question.call_id.clone(), fields);
    let request = acp::RequestPermissionRequest::new(client.session_id.clone(), call, options);
    match client.cx.send_request(request).block_task().await {
        Ok(response) => match response.outcome {
            acp::RequestPermissionOutcome::Selected(selected) => {
                let picked =
                    selected.option_id.0.strip_prefix("choice_").and_then(|n| n.parse::<usize>().ok());
                match picked.and_then(|n| question.options.get(n)) {
                    Some(choice) => Answer::Text(choice.clone()),
                    None => Answer::Dismissed,
                }
            }
            _ => Answer::Cancelled,
        },
        Err(e) => {
            tracing::warn!(error = %e, "session/request_permission failed for a question; sending it as a message");
            Answer::Unavailable
        }
    }
}

impl Asker for SessionClient {
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let form = self.capabilities.elicitation.as_ref().is_some_and(|e| e.form.is_some());
            if form {
                elicit(self, question).await
            } else if !question.options.is_empty() {
                choose(self, question).await
            } else {
                Answer::Unavailable
            }
        })
    }
}
