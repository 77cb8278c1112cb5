//! How a tool call fails, and who handles each failure. A leaf: the services tools share (files, shell) return
//! these errors too, so this file must not import anything from the rest of `tool`.

/// Why a tool failed, and therefore who handles it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The model can fix this by changing its arguments (missing file, bad regex, ...). The message goes
    /// back to the model as the tool result; the turn goes on.
    #[error("{0}")]
    Retry(String),
    /// The tool broke for a reason the model cannot fix (I/O failure, ...). The model is told, the user sees
    /// a failed tool call; the turn goes on.
    #[error("{0}")]
    Execution(String),
    /// The turn must stop now (the user cancelled). The agent records a cancelled result and ends the turn.
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    pub fn retry(message: impl Into<String>) -> Self {
        ToolError::Retry(message.into())
    }

    pub fn execution(message: impl Into<String>) -> Self {
        ToolError::Execution(message.into())
    }
}
