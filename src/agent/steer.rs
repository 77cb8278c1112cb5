//! Steering: messages the user sends into a running turn. They wait in the session's inbox until the turn's next
//! model request, which carries them as user messages; the turn goes on without stopping.
//!
//! Owns the seam between the session's inbox ([`Steering`]) and the turn loop. Must not know ACP.

use serde_json::Value;

use crate::llm::UserPart;

/// One steering message: what the model sees and what the editor sent (kept for replay).
#[derive(Debug, Clone, PartialEq)]
pub struct Steer {
    pub parts: Vec<UserPart>,
    pub blocks: Value,
}

/// Where a running turn picks up steering messages, right before each model request. Taking them marks them
/// delivered.
pub trait Steering: Send + Sync {
    fn take(&self) -> Vec<Steer>;
}
