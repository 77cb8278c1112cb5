//! The agent: the turn loop (model request → tool calls → results → …), the conversation history and its
//! invariant, the system prompt, and the events a turn emits.
//!
//! Knows nothing about ACP. Depends on `llm`, `tool`, `mcp` (to wait for and sync its servers' tools), `extensions`,
//! `permission`, `bus` and `config`.

pub mod compaction;
pub mod event;
pub mod history;
pub mod instructions;
pub mod journal;
pub mod steer;
pub mod system_prompt;
pub mod turn;

pub use event::{AgentEvent, EventSink, SubagentState, ToolStatus};
pub use steer::{Steer, Steering};
pub use turn::{AgentSwitcher, Conversation, StopReason, Turn, TurnError};
