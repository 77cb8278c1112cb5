//! MCP over ACP: the editor's `mcpServers` as the core's declarations (stdio and streamable HTTP; an SSE entry is
//! kept as a server that cannot start, so it is reported rather than failing the session), and MCP servers'
//! questions put to the user through ACP form elicitation.
//!
//! Owns those mappings only. Servers belong to `mcp`.

use agent_client_protocol::v1::schema as acp;
use futures::future::BoxFuture;
use serde_json::Value;

use super::client::SessionClient;
use crate::mcp::{Declared, Elicited, Elicitor, Transport};

/// The core's view of one server the editor declares.
pub fn declared(server: &acp::McpServer) -> Declared {
    match server {
        acp::McpServer::Stdio(stdio) => Declared {
            name: stdio.name.clone(),
            transport: Ok(Transport::Stdio {
                command: stdio.command.display().to_string(),
                args: stdio.args.clone(),
                env: stdio.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect(),
            }),
        },
        acp::McpServer::Http(http) => Declared {
            name: http.name.clone(),
            transport: Ok(Transport::Http {
                url: http.url.clone(),
                headers: http.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
            }),
        },
        acp::McpServer::Sse(sse) => Declared {
            name: sse.name.clone(),
            transport: Err(
                "it uses the SSE transport, which MCP deprecated; tinycode speaks stdio and streamable HTTP"
                    .into(),
            ),
        },
        _ => Declared {
            name: "unknown".into(),
            transport: Err("its transport is not one tinycode knows".into()),
        },
    }
}

pub fn declared_all(servers: &[acp::McpServer]) -> Vec<Declared> {
    servers.iter().map(declared).collect()
}

/// Does the client take form elicitation?
pub fn elicits(capabilities: &acp::ClientCapabilities) -> bool {
    capabilities.elicitation.as_ref().is_some_and(|e| e.form.is_some())
}

fn content_value(value: acp::ElicitationContentValue) -> Value {
    match value {
        acp::ElicitationContentValue::String(s) => Value::String(s),
        acp::ElicitationContentValue::Integer(n) => Value::from(n),
        acp::ElicitationContentValue::Number(n) => Value::from(n),
        acp::ElicitationContentValue::Boolean(b) => Value::Bool(b),
        acp::ElicitationContentValue::StringArray(list) => Value::from(list),
        _ => Value::Null,
    }
}

impl Elicitor for SessionClient {
    fn elicit<'a>(&'a self, server: &'a str, message: &'a str, schema: &'a Value) -> BoxFuture<'a, Elicited> {
        Box::pin(async move {
            let schema: acp::ElicitationSchema = match serde_json::from_value(schema.clone()) {
                Ok(schema) => schema,
                Err(e) => {
                    tracing::warn!(server, error = %e, "an MCP server asked with a form the editor cannot show; declined");
                    return Elicited::Decline;
                }
            };
            let scope = acp::ElicitationSessionScope::new(self.session_id.clone());
            let request = acp::CreateElicitationRequest::new(
                acp::ElicitationFormMode::new(scope, schema),
                format!("The MCP server `{server}` asks: {message}"),
            );
            match self.cx.send_request(request).block_task().await {
                Ok(response) => match response.action {
                    acp::ElicitationAction::Accept(accept) => Elicited::Accept(
                        accept
                            .content
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(k, v)| (k, content_value(v)))
                            .collect(),
                    ),
                    acp::ElicitationAction::Decline => Elicited::Decline,
                    _ => Elicited::Cancel,
                },
                Err(e) => {
                    tracing::warn!(server, error = %e, "elicitation/create failed; the MCP server's question is declined");
                    Elicited::Decline
                }
            }
        })
    }
}
