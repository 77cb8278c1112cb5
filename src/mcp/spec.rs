//! Which MCP servers a session uses: the editor's (`mcpServers` in `session/new`, `session/load`,
//! `session/resume`: the user's own editor settings, run without the trust question) and the `[mcp.NAME]` tables
//! of the configuration (the user's file, and the project's once trusted). A config table with neither `command`
//! nor `url` only adjusts a server of that name (`enabled = false`, timeouts); the editor's definition wins over a
//! config table that defines the same name again. A server that cannot be used as given keeps its place with the
//! reason, so it is reported like a failed start instead of failing the session.
//!
//! Owns the merge and the validation. Pure.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::McpServerConfig;

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A program speaking MCP on its stdin and stdout.
    Stdio { command: String, args: Vec<String>, env: Vec<(String, String)> },
    /// A streamable-HTTP endpoint.
    Http { url: String, headers: Vec<(String, String)> },
}

/// Who defined a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Editor,
    Config,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Editor => "editor",
            Source::Config => "config",
        }
    }
}

/// A server as the editor declared it (the `acp` layer converts the wire shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    pub name: String,
    /// Why the editor's entry cannot be used (an SSE server, say), if it cannot.
    pub transport: Result<Transport, String>,
}

/// One server the session should run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub name: String,
    pub transport: Result<Transport, String>,
    pub source: Source,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
}

/// Headers the streamable-HTTP transport sets itself; the SDK refuses a request that sets them too.
const RESERVED_HEADERS: [&str; 4] = ["accept", "mcp-session-id", "mcp-protocol-version", "last-event-id"];

fn check(transport: Transport) -> Result<Transport, String> {
    match &transport {
        Transport::Stdio { command, .. } if command.trim().is_empty() => Err("its command is empty".into()),
        Transport::Stdio { .. } => Ok(transport),
        Transport::Http { url, headers } => {
            let parsed = reqwest::Url::parse(url).map_err(|e| format!("its URL `{url}` is invalid: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!("its URL `{url}` is not http or https"));
            }
            for (name, value) in headers {
                if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                    return Err(format!("it sets the header `{name}`, which the MCP transport sets itself"));
                }
                reqwest::header::HeaderName::try_from(name.as_str())
                    .map_err(|_| format!("`{name}` is not a valid header name"))?;
                reqwest::header::HeaderValue::try_from(value.as_str())
                    .map_err(|_| format!("the value of header `{name}` is not valid"))?;
            }
            Ok(transport)
        }
    }
}

fn from_config(table: &McpServerConfig) -> Result<Transport, String> {
    match (&table.command, &table.url) {
        (Some(command), None) => Ok(Transport::Stdio {
            command: command.clone(),
            args: table.args.clone().unwrap_or_default(),
            env: table.env.clone().unwrap_or_default().into_iter().collect(),
        }),
        (None, Some(url)) => Ok(Transport::Http {
            url: url.clone(),
            headers: table.headers.clone().unwrap_or_default().into_iter().collect(),
        }),
        (Some(_), Some(_)) => Err("it sets both `command` and `url`; a server is one or the other".into()),
        (None, None) => Err("it sets neither `command` nor `url`".into()),
    }
}

fn millis(ms: Option<u64>, default: Duration) -> Duration {
    ms.map(Duration::from_millis).unwrap_or(default)
}

/// The servers to run: the editor's in its order, then the config's by name.
pub fn resolve(
    editor: &[Declared],
    config: &BTreeMap<String, McpServerConfig>,
    startup: Duration,
    call: Duration,
) -> Vec<Spec> {
    let mut specs: Vec<Spec> = Vec::new();
    for declared in editor {
        let duplicate = specs.iter().any(|s| s.name == declared.name);
        let table = config.get(&declared.name);
        if table.is_some_and(|t| t.command.is_some() || t.url.is_some()) {
            tracing::warn!(server = %declared.name, "the editor defines this MCP server too; its definition is used");
        }
        specs.push(Spec {
            name: declared.name.clone(),
            transport: if duplicate {
                Err(format!("the editor declares another server named `{}`", declared.name))
            } else {
                declared.transport.clone().and_then(check)
            },
            source: Source::Editor,
            enabled: table.and_then(|t| t.enabled).unwrap_or(true),
            startup_timeout: millis(table.and_then(|t| t.startup_timeout_ms), startup),
            call_timeout: millis(table.and_then(|t| t.call_timeout_ms), call),
        });
    }
    for (name, table) in config {
        if specs.iter().any(|s| &s.name == name) {
            continue;
        }
        specs.push(Spec {
            name: name.clone(),
            transport: from_config(table).and_then(check),
            source: Source::Config,
            enabled: table.enabled.unwrap_or(true),
            startup_timeout: millis(table.startup_timeout_ms, startup),
            call_timeout: millis(table.call_timeout_ms, call),
        });
    }
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(10);
    const C: Duration = Duration::from_secs(120);

    fn stdio(command: &str) -> Transport {
        Transport::Stdio { command: command.into(), args: vec![], env: vec![] }
    }

    #[test]
    fn the_editor_servers_come_first_and_config_tables_adjust_them_by_name() {
        let editor = [
            Declared { name: "fs".into(), transport: Ok(stdio("/bin/fs")) },
            Declared { name: "fs".into(), transport: Ok(stdio("/bin/other")) },
            Declared { name: "old".into(), transport: Err("SSE servers are not supported".into()) },
        ];
        let config = BTreeMap::from([
            (
                "fs".to_string(),
                McpServerConfig { enabled: Some(false), call_timeout_ms: Some(5), ..Default::default() },
            ),
            (
                "web".to_string(),
                McpServerConfig {
                    url: Some("http://127.0.0.1:1/mcp".into()),
                    headers: Some(BTreeMap::from([("Authorization".into(), "Bearer t".into())])),
                    startup_timeout_ms: Some(50),
                    ..Default::default()
                },
            ),
            ("bad".to_string(), McpServerConfig { url: Some("ftp://x".into()), ..Default::default() }),
            ("none".to_string(), McpServerConfig::default()),
        ]);
        let specs = resolve(&editor, &config, S, C);
        type Row<'a> = (&'a str, Result<&'a Transport, &'a str>, bool, u128, u128);
        let summary: Vec<Row> = specs
            .iter()
            .map(|s| {
                (
                    s.name.as_str(),
                    s.transport.as_ref().map_err(String::as_str),
                    s.enabled,
                    s.startup_timeout.as_millis(),
                    s.call_timeout.as_millis(),
                )
            })
            .collect();
        let web = Transport::Http {
            url: "http://127.0.0.1:1/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer t".into())],
        };
        assert_eq!(
            summary,
            [
                ("fs", Ok(&stdio("/bin/fs")), false, 10_000, 5),
                ("fs", Err("the editor declares another server named `fs`"), false, 10_000, 5),
                ("old", Err("SSE servers are not supported"), true, 10_000, 120_000),
                ("bad", Err("its URL `ftp://x` is not http or https"), true, 10_000, 120_000),
                ("none", Err("it sets neither `command` nor `url`"), true, 10_000, 120_000),
                ("web", Ok(&web), true, 50, 120_000),
            ]
        );
    }

    #[test]
    fn reserved_and_malformed_headers_are_refused() {
        let http = |name: &str, value: &str| Transport::Http {
            url: "https://example.test/mcp".into(),
            headers: vec![(name.into(), value.into())],
        };
        assert_eq!(
            check(http("Mcp-Session-Id", "x")),
            Err("it sets the header `Mcp-Session-Id`, which the MCP transport sets itself".into())
        );
        assert_eq!(check(http("bad header", "x")), Err("`bad header` is not a valid header name".into()));
        assert_eq!(check(http("X-Key", "a\nb")), Err("the value of header `X-Key` is not valid".into()));
        assert!(check(http("X-Key", "v")).is_ok());
    }
}
