//! The MCP client: the servers a session uses (see `spec`), started in the background so `session/new` never waits
//! for one, their tools offered to the model under stable names (`naming`) through the same pipeline as the
//! built-ins (`adapter` builds the `tool::Def`s), their prompts as slash commands and their resources through the
//! `mcp_resource` tool. Stdio servers run in their own process group and are closed within 2 s (stdin EOF, then
//! SIGTERM, then SIGKILL: `process`); a server that crashes is reported once and its tools withdrawn; a server's
//! `tools/list_changed` refreshes its list before the next model request. A stdio server's answer over the line
//! limit fails its call at once (`lines`); results reach the model and the editor as the same bounded preview.
//!
//! Owns connections, their lifetime and the mapping of MCP to tinycode's tools. Must not know ACP or the session:
//! the editor is reached through [`Elicitor`], the session hears about servers through [`Report`]s. The tool
//! framework never imports this module.

pub mod adapter;
pub mod content;
pub mod handler;
pub mod lines;
pub mod naming;
pub mod process;
pub mod schema;
pub mod server;
pub mod servers;
pub mod spec;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

pub use servers::Servers;
pub use spec::{Declared, Spec, Transport};

/// The user's answer to a server's request for input.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

/// The editor's form for questions a server asks (MCP elicitation). Implemented by the `acp` layer when the
/// editor supports ACP form elicitation; without it, servers are told the client cannot elicit and any request
/// is declined.
pub trait Elicitor: Send + Sync {
    /// Ask the user `message` on behalf of `server`, with the answer shaped by `schema` (a flat JSON Schema
    /// object).
    fn elicit<'a>(&'a self, server: &'a str, message: &'a str, schema: &'a Value) -> BoxFuture<'a, Elicited>;
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Starting,
    Ready,
    /// It never started, or it stopped (crashed, closed its connection): why.
    Failed(String),
    Disabled,
    Closed,
}

/// What a session hears about its servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A server could not start, or stopped while in use: said once per server and start.
    Failed { server: String, reason: String },
    /// Tools, prompts or states changed (the slash commands may need announcing again).
    Changed,
}

/// One server as `/mcp` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub name: String,
    pub source: spec::Source,
    pub phase: Phase,
    pub tools: usize,
    pub prompts: usize,
    pub resources: usize,
}

/// A server prompt offered as a slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCommand {
    /// `mcp__<server>__<prompt>` (named like the tools).
    pub name: String,
    pub server: String,
    pub prompt: String,
    pub description: String,
    /// The prompt's arguments in order: name and whether it is required.
    pub arguments: Vec<(String, bool)>,
}
