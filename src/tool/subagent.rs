//! The seam between the `task` tool and whoever runs subagents (the session layer): what a call asks for
//! ([`TaskRequest`]) and the [`Subagents`] trait the session implements. A call reaches it through
//! [`Context::subagents`](super::Context::subagents); without one (tests, embedders) the tool says so.
//!
//! Owns the vocabulary of a task call. Must not know sessions, ACP or any agent definition.

use futures::future::BoxFuture;

use super::{Context, ToolError, ToolOutput};

/// The deepest a subagent may be nested below the user's session (seed 000 `maxSubagentDepth`).
pub const MAX_SUBAGENT_DEPTH: u32 = 5;

/// One `task` call, its arguments checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRequest {
    /// Short description (3-5 words), shown as the card's title.
    pub description: String,
    /// What the subagent is to do; may be empty for a status check by `task_id`.
    pub prompt: String,
    /// The agent to run; `None` is `general`.
    pub subagent_type: Option<String>,
    /// An earlier task of this session: check on it, or resume it with `prompt`.
    pub task_id: Option<String>,
    /// Return at once with the id; the parent is told when it finishes.
    pub background: bool,
}

/// Runs subagents for one session.
pub trait Subagents: Send + Sync {
    /// Run (or check on, or resume) a task. The call's context carries its cancellation, its progress seam and
    /// the caller's depth.
    fn run(&self, ctx: Context, request: TaskRequest) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;

    /// The agent that runs the task `task_id` of this session, if there is one (a resumed task asks as its agent).
    fn agent_of(&self, task_id: &str) -> Option<String>;

    /// The agents a call may name, as lines for the tool's description (`- name: description`).
    fn catalogue(&self) -> String;

    /// Reports of background tasks that finished since the last call, for the model's next request.
    fn take_notes(&self) -> Vec<String>;
}
