//! The editor's terminals as the core sees them (`terminal/create`, `output`, `wait_for_exit`, `kill`,
//! `release`). Implemented by the `acp` layer; used by `bash` when the editor offers terminals and the
//! configuration asks for them.
//!
//! Owns the seam only.

use std::path::Path;

use futures::future::BoxFuture;

/// How a terminal's command ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TerminalExit {
    pub code: Option<u32>,
    pub signal: Option<String>,
}

/// A terminal's output so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TerminalOutput {
    pub output: String,
    /// The editor dropped the beginning to stay within the byte limit.
    pub truncated: bool,
    pub exit: Option<TerminalExit>,
}

pub trait ClientTerminals: Send + Sync {
    /// Start `sh -c <command>` in `cwd`; returns the terminal id.
    fn create<'a>(
        &'a self,
        command: &'a str,
        cwd: &'a Path,
        output_limit: u64,
    ) -> BoxFuture<'a, Result<String, String>>;
    fn output<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TerminalOutput, String>>;
    fn wait_for_exit<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TerminalExit, String>>;
    fn kill<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), String>>;
    fn release<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), String>>;
}
