//! Subagents defined in config files: `[agents.NAME]` tables with `description`, `prompt`, and optionally
//! `model`, `tools` (an allow-list) and `mode`. The user's file always counts; a project's file only once the
//! user trusts the project (`agents` is not a harmless setting, see `trust`): an agent's prompt and model come
//! from whoever wrote the file. The user's table wins over a trusted project's table of the same name.
//!
//! Owns the file format only. What a subagent may do with these settings (narrowing, name rules) is
//! `session::agents`'s.

use serde::Deserialize;

/// One `[agents.NAME]` table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// What the `task` tool tells the model this agent is for (required).
    pub description: String,
    /// Its instructions, added to the subagent's system prompt.
    #[serde(default)]
    pub prompt: String,
    /// A model of the parent's provider; unset: the parent's model.
    pub model: Option<String>,
    /// The tools it may use (always intersected with its parent's); unset: all of the parent's.
    pub tools: Option<Vec<String>>,
    /// The mode it runs in at most (`plan`, `build`, `accept-edits`, `yolo`); never looser than its parent's.
    pub mode: Option<String>,
}
