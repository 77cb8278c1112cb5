//! What the turn loop tells the outside world while it runs, and the [`EventSink`] seam it tells it through.
//! The `acp` layer turns these into `session/update` notifications.
//!
//! Owns the vocabulary of user-visible progress. Must not know about ACP types.

use serde_json::Value;

use crate::display::{Content, Location, Presentation};

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Completed,
    Failed,
}

/// Where a compaction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionStatus {
    Started,
    Completed,
    Failed,
}

/// Where a subagent's run stands, for clients that show subagents as sessions of their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubagentState {
    Running,
    Completed,
    /// Stopped by a cancel (its parent's or its own).
    Cancelled,
    /// Ended by an error, said in words.
    Failed(String),
}

/// A slash command as the editor's menu shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: String,
    pub description: String,
    /// What to type after the name, when it takes arguments.
    pub hint: Option<String>,
}

/// One user-visible step of a turn, or news about the session.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// A user message, as the editor sent it (replayed when a session is loaded).
    UserMessage { message_id: String, blocks: Value },
    /// Streamed assistant text; chunks with the same `message_id` belong to one message.
    MessageChunk { message_id: String, text: String },
    /// Streamed reasoning text.
    ThoughtChunk { message_id: String, text: String },
    /// A message from tinycode itself rather than the model (a prompt is queued), with machine-readable details
    /// for clients that show it their own way (`_meta.tinycode`).
    Aside { message_id: String, text: String, meta: Value },
    /// A tool call was requested (it may still wait for permission).
    ToolCallStarted { call_id: String, tool: String, presentation: Presentation, raw_input: Value },
    /// The call's presentation after a slow preview (title, locations and content replace the started ones).
    ToolCallRevised { call_id: String, presentation: Presentation },
    /// Permission was granted and the tool is running.
    ToolCallRunning { call_id: String },
    /// Incremental output of a running tool (only the new part).
    ToolCallOutput { call_id: String, text: String },
    /// Content the call's card shows from now on (an editor terminal).
    ToolCallContent { call_id: String, content: Vec<Content> },
    /// The session's title or activity time changed.
    SessionInfo { title: Option<String>, updated_at: String },
    /// Tokens in the context now, of the model's window.
    Usage { used: u64, size: u64 },
    /// The session's to-do list changed (the whole list, as `todowrite` keeps it).
    Plan { items: Value },
    /// Older history is being (or was) summarised.
    Compaction { compaction_id: String, status: CompactionStatus, summary: Option<String> },
    /// A subagent's progress, shown in this session's `task` call `call_id`: the whole list every time (a
    /// tool call's content is replaced, never appended to).
    SubagentProgress {
        call_id: String,
        child_session_id: String,
        agent: String,
        depth: u32,
        lines: Vec<String>,
    },
    /// A subagent of this session started or ended a run (`title` and `description` are given when it starts).
    /// Only clients that show subagents as sessions of their own (see [`EventSink::shows_subagents`]) get it.
    Subagent {
        child_session_id: String,
        title: Option<String>,
        description: Option<String>,
        state: SubagentState,
    },
    /// An event of a subagent's own session, for a client that shows that session (it goes out under the
    /// child's id). Only emitted to sinks that [show subagents](EventSink::shows_subagents).
    Child { child_session_id: String, event: Box<AgentEvent> },
    /// Tokens (input plus output) one model response of this session spent, as its provider reported them.
    TokensSpent { tokens: u64 },
    /// Tokens a subagent (or one of its own) spent on one model response: not in this session's context, but
    /// part of what this session costs, so the editor's usage display counts them as they happen.
    SubagentUsage { tokens: u64 },
    /// A subagent's tool call shown at the top level of this session (its edits, commands and permission asks,
    /// so they can be reviewed and answered); `parent_call_id` is the `task` call that started the subagent.
    Lifted { parent_call_id: String, event: Box<AgentEvent> },
    /// The slash commands changed (the whole list).
    Commands(Vec<CommandInfo>),
    /// Something the user should know that is not part of the conversation (an MCP server failed, a skill file
    /// could not be read).
    Notice { title: String, description: String },
    /// The tool call is over.
    ToolCallFinished {
        call_id: String,
        status: ToolStatus,
        output: String,
        display: Vec<Content>,
        locations: Vec<Location>,
        raw_output: Value,
    },
}

/// Where a turn's events go. Implementations must not block: they enqueue and return.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: AgentEvent);
    /// Send anything held back (a sink may join streamed text); called when a model's stream ends.
    fn flush(&self) {}
    /// Whether this sink shows a subagent as a session of its own, so [`AgentEvent::Subagent`] and
    /// [`AgentEvent::Child`] are worth emitting (the editor declared the `subagents` capability).
    fn shows_subagents(&self) -> bool {
        false
    }
}

/// A sink that keeps every event; used by tests and by headless callers that inspect the transcript.
#[derive(Default)]
pub struct Recorder {
    pub events: std::sync::Mutex<Vec<AgentEvent>>,
}

impl EventSink for Recorder {
    fn emit(&self, event: AgentEvent) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }
}
