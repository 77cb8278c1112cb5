//! The conversation history of a session and its invariant: every tool call of an assistant message has
//! exactly one result, placed after it and before the next assistant message.
//!
//! Owns the message list. Must not call the model or run tools.

use std::collections::HashSet;

use crate::llm::{Message, UserPart};
use crate::tool::repair;

/// The text put in place of a result that never arrived (cancel, crash, cut-off stream).
pub const MISSING_RESULT: &str = "The tool call did not run: the turn was cancelled before it started.";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    messages: Vec<Message>,
}

impl History {
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn push_user(&mut self, parts: Vec<UserPart>) {
        self.close_open_calls();
        self.messages.push(Message::User(parts));
    }

    /// Add a message. Tool-call arguments that are not a JSON object are stored as the object the input repair
    /// makes of them (or `{}`), since every later request sends them back to a provider that may parse them.
    pub fn push(&mut self, mut message: Message) {
        if let Message::Assistant { tool_calls, .. } = &mut message {
            for call in tool_calls {
                if let Some(arguments) = repair::history_arguments(&call.arguments) {
                    call.arguments = arguments;
                }
            }
        }
        if matches!(message, Message::Assistant { .. } | Message::User(_)) {
            self.close_open_calls();
        }
        self.messages.push(message);
    }

    /// Replace everything but the newest `keep` messages with a summary. The kept part must start at a message
    /// boundary where every earlier call has its result (see [`History::cut_points`]).
    pub fn compact(&mut self, summary: &str, keep: usize) {
        let keep = keep.min(self.messages.len());
        let kept = self.messages.split_off(self.messages.len() - keep);
        let text = format!(
            "<conversation-summary>\nThe earlier part of this conversation was summarised to save space:\n\n{summary}\n</conversation-summary>"
        );
        self.messages = vec![Message::User(vec![UserPart::Text(text)])];
        self.messages.extend(kept);
    }

    /// Indices where the history may be cut for compaction: user and assistant messages (a tool result never
    /// starts the kept part, so no call loses its result).
    pub fn cut_points(&self) -> Vec<usize> {
        self.messages
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, Message::User(_) | Message::Assistant { .. }))
            .map(|(i, _)| i)
            .collect()
    }

    /// Tool call ids of the last assistant message that have no result yet.
    pub fn open_calls(&self) -> Vec<String> {
        let Some(start) = self.messages.iter().rposition(|m| matches!(m, Message::Assistant { .. })) else {
            return Vec::new();
        };
        let Message::Assistant { tool_calls, .. } = &self.messages[start] else { return Vec::new() };
        let answered: HashSet<&str> = self.messages[start + 1..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        tool_calls.iter().filter(|c| !answered.contains(c.id.as_str())).map(|c| c.id.clone()).collect()
    }

    /// Give every unanswered call of the last assistant message a placeholder result.
    pub fn close_open_calls(&mut self) {
        for call_id in self.open_calls() {
            self.messages.push(Message::Tool { call_id, content: MISSING_RESULT.into() });
        }
    }

    /// Check the invariant; returns a description of the first violation.
    pub fn check(&self) -> Result<(), String> {
        let mut open: Vec<String> = Vec::new();
        for (i, message) in self.messages.iter().enumerate() {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    if !open.is_empty() {
                        return Err(format!("message {i}: calls {open:?} have no result"));
                    }
                    open = tool_calls.iter().map(|c| c.id.clone()).collect();
                }
                Message::Tool { call_id, .. } => match open.iter().position(|id| id == call_id) {
                    Some(p) => {
                        open.remove(p);
                    }
                    None => {
                        return Err(format!("message {i}: result for unknown or answered call {call_id}"));
                    }
                },
                Message::User(_) => {
                    if !open.is_empty() {
                        return Err(format!("message {i}: calls {open:?} have no result"));
                    }
                }
            }
        }
        if open.is_empty() { Ok(()) } else { Err(format!("calls {open:?} have no result")) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn assistant(ids: &[&str]) -> Message {
        Message::Assistant {
            text: String::new(),
            reasoning: None,
            tool_calls: ids
                .iter()
                .map(|id| ToolCall { id: id.to_string(), name: "read".into(), arguments: "{}".into() })
                .collect(),
        }
    }

    fn result(id: &str) -> Message {
        Message::Tool { call_id: id.into(), content: "ok".into() }
    }

    #[test]
    fn unanswered_calls_get_placeholder_results_before_the_next_user_message() {
        let mut h = History::default();
        h.push_user(vec![UserPart::Text("hi".into())]);
        h.push(assistant(&["a", "b"]));
        h.push(result("a"));
        assert_eq!(h.open_calls(), vec!["b"]);
        h.push_user(vec![UserPart::Text("again".into())]);
        assert_eq!(h.check(), Ok(()));
        assert_eq!(h.messages()[3], Message::Tool { call_id: "b".into(), content: MISSING_RESULT.into() });
    }

    #[test]
    fn the_check_reports_missing_and_stray_results() {
        let mut h = History::default();
        h.messages.push(assistant(&["a"]));
        assert_eq!(h.check(), Err("calls [\"a\"] have no result".into()));
        h.messages.push(result("a"));
        h.messages.push(result("a"));
        assert_eq!(h.check(), Err("message 2: result for unknown or answered call a".into()));
    }

    #[test]
    fn tool_call_arguments_a_provider_cannot_parse_are_stored_as_repaired_objects() {
        let call = |id: &str, arguments: &str| ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: arguments.into(),
        };
        let mut h = History::default();
        h.push(Message::Assistant {
            text: String::new(),
            reasoning: None,
            tool_calls: vec![
                call("a", "{\"x\":  1}"),
                call("b", "{\"x\": 1,}"),
                call("c", "{\"content\": \"fn main() {"),
            ],
        });
        let Message::Assistant { tool_calls, .. } = &h.messages()[0] else {
            panic!("not an assistant message")
        };
        let arguments: Vec<&str> = tool_calls.iter().map(|c| c.arguments.as_str()).collect();
        assert_eq!(arguments, vec!["{\"x\":  1}", "{\"x\":1}", "{}"]);
    }
}
