//! The test MCP server (`tinycode-mcp-fixture`, built from `tests/bin/mcp_fixture.rs`) as the editor would declare
//! it, over stdio or streamable HTTP, and a look at what the model was offered and told.

use std::process::Stdio;

use agent_client_protocol::v1::schema as acp;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::fake_model::FakeModel;

pub const FIXTURE: &str = env!("CARGO_BIN_EXE_tinycode-mcp-fixture");

/// The fixture as a stdio server named `name`, with `args` and `env`.
pub fn stdio(name: &str, args: &[&str], env: &[(&str, &str)]) -> acp::McpServer {
    acp::McpServer::Stdio(
        acp::McpServerStdio::new(name, FIXTURE)
            .args(args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
            .env(env.iter().map(|(k, v)| acp::EnvVariable::new(*k, *v)).collect::<Vec<_>>()),
    )
}

/// The fixture serving streamable HTTP on 127.0.0.1 (it ends with the test).
pub struct HttpFixture {
    _child: tokio::process::Child,
    pub url: String,
}

impl HttpFixture {
    pub async fn start() -> HttpFixture {
        let mut child = tokio::process::Command::new(FIXTURE)
            .arg("--http")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = lines.next_line().await.unwrap().unwrap();
        let url = line.strip_prefix("listening ").unwrap().to_string();
        HttpFixture { _child: child, url }
    }

    pub fn server(&self, name: &str) -> acp::McpServer {
        acp::McpServer::Http(acp::McpServerHttp::new(name, self.url.clone()))
    }
}

/// The tool names offered in model request `n`.
pub fn offered(model: &FakeModel, n: usize) -> Vec<String> {
    model.requests()[n].body["tools"]
        .as_array()
        .map(|tools| {
            tools.iter().map(|t| t["function"]["name"].as_str().unwrap_or_default().to_string()).collect()
        })
        .unwrap_or_default()
}

/// The tool definition `name` offered in model request `n`.
pub fn offered_tool(model: &FakeModel, n: usize, name: &str) -> Value {
    model.requests()[n].body["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["function"]["name"] == name).cloned())
        .unwrap_or(Value::Null)
}

/// The last user message of model request `n`.
pub fn last_user(model: &FakeModel, n: usize) -> String {
    model
        .messages(n)
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => {
                parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("")
            }
            _ => String::new(),
        })
        .unwrap_or_default()
}

/// The system prompt of model request `n`.
pub fn system(model: &FakeModel, n: usize) -> String {
    model
        .messages(n)
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}
