//! Compaction: when the conversation nears the model's context window, older messages are summarised by the
//! model and replaced by the summary; the newest messages stay verbatim. The cut always falls on a user or
//! assistant message, so every tool call keeps exactly one result.
//!
//! Owns when and where to cut, and the summary request. Does not persist or report (the turn does).

use tokio_util::sync::CancellationToken;

use super::history::History;
use crate::llm::{LlmError, Message, ModelClient, Request, UserPart};

const PROMPT: &str = include_str!("prompts/compact.md");
/// Compaction starts when a request would fill this share of the window.
pub const TRIGGER: f64 = 0.9;
/// After compaction the kept messages use at most this share of the window.
pub const KEEP: f64 = 0.4;
/// Output tokens assumed when the configuration does not cap them.
pub const DEFAULT_OUTPUT_RESERVE: u64 = 4_096;

/// A cheap, deterministic token estimate: four bytes a token.
pub fn estimate_tokens(text_bytes: usize) -> u64 {
    text_bytes.div_ceil(4) as u64
}

fn message_bytes(message: &Message) -> usize {
    match message {
        Message::User(parts) => parts
            .iter()
            .map(|p| match p {
                UserPart::Text(t) => t.len(),
                UserPart::Image { .. } => 4_000,
            })
            .sum(),
        Message::Assistant { text, reasoning, tool_calls } => {
            text.len()
                + reasoning.as_ref().map_or(0, |r| r.text.len())
                + tool_calls.iter().map(|c| c.name.len() + c.arguments.len() + 16).sum::<usize>()
        }
        Message::Tool { content, .. } => {
            let parts = crate::llm::tool_content::parts(content);
            let bytes: usize = parts
                .iter()
                .map(|p| match p {
                    crate::llm::tool_content::Part::Text(t) => t.len(),
                    crate::llm::tool_content::Part::Image { .. } => 4_000,
                })
                .sum();
            bytes + 16
        }
    }
}

/// Estimated tokens of a request: system prompt, tools and history.
pub fn request_tokens(request: &Request) -> u64 {
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
        .sum();
    let history: usize = request.messages.iter().map(message_bytes).sum();
    estimate_tokens(request.system.len() + tools + history)
}

/// Does a request of `tokens` need compacting first?
pub fn needed(tokens: u64, window: u64, max_output: Option<u32>) -> bool {
    let reserve = max_output.map(u64::from).unwrap_or(DEFAULT_OUTPUT_RESERVE);
    (tokens + reserve) as f64 > window as f64 * TRIGGER
}

/// How many of the newest messages to keep: the longest suffix starting at a cut point whose estimate fits in
/// `budget` tokens, leaving at least one message to summarise. When not even the newest exchange fits, the newest
/// user message and what follows it are kept anyway (the request must still carry what the user asked), unless it
/// is the first message. `None` when nothing can be summarised.
pub fn keep_count(history: &History, budget: u64) -> Option<usize> {
    let messages = history.messages();
    let mut best = None;
    for cut in history.cut_points().into_iter().rev() {
        if cut == 0 {
            break;
        }
        let tokens: u64 = messages[cut..].iter().map(|m| estimate_tokens(message_bytes(m))).sum();
        if tokens > budget {
            break;
        }
        best = Some(messages.len() - cut);
    }
    let newest_user = messages.iter().rposition(|m| matches!(m, Message::User(_))).filter(|i| *i > 0);
    best.or_else(|| newest_user.map(|i| messages.len() - i)).or_else(|| (messages.len() > 1).then_some(0))
}

/// Ask the model for a summary of `messages`.
pub async fn summarise(
    model: &dyn ModelClient,
    model_name: &str,
    messages: &[Message],
    cancel: &CancellationToken,
) -> Result<String, LlmError> {
    let mut messages = messages.to_vec();
    messages.push(Message::User(vec![UserPart::Text(
        "Summarise the conversation above following your instructions. Reply with the summary only.".into(),
    )]));
    let request = Request {
        model: model_name.to_string(),
        system: PROMPT.to_string(),
        messages,
        tools: Vec::new(),
        max_output_tokens: None,
        reasoning_effort: None,
    };
    let response = model.stream(&request, &|_| {}, cancel).await?;
    Ok(response.text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn user(text: &str) -> Message {
        Message::User(vec![UserPart::Text(text.into())])
    }

    #[test]
    fn the_kept_part_starts_at_a_user_or_assistant_message_within_budget() {
        let mut history = History::default();
        history.push(user(&"a".repeat(400)));
        history.push(Message::Assistant {
            text: String::new(),
            reasoning: None,
            tool_calls: vec![ToolCall { id: "c".into(), name: "read".into(), arguments: "{}".into() }],
        });
        history.push(Message::Tool { call_id: "c".into(), content: "x".repeat(400) });
        history.push(user("short"));
        history.push(Message::Assistant { text: "ok".into(), reasoning: None, tool_calls: vec![] });
        assert_eq!(keep_count(&history, 10), Some(2), "keep the last user message and its answer");
        assert_eq!(keep_count(&history, 1_000), Some(4), "the first message is always summarised");
        assert_eq!(keep_count(&history, 0), Some(2), "the newest user message is kept even over budget");
        let mut first = History::default();
        first.push(user(&"a".repeat(400)));
        first.push(Message::Assistant { text: "ok".into(), reasoning: None, tool_calls: vec![] });
        assert_eq!(keep_count(&first, 0), Some(0), "a first message over budget is summarised with the rest");
        history.compact("what happened", 2);
        assert_eq!(history.messages().len(), 3);
        assert_eq!(history.check(), Ok(()));
    }

    #[test]
    fn compaction_triggers_near_the_window_counting_the_output_reserve() {
        assert!(!needed(1_000, 10_000, Some(1_000)));
        assert!(needed(8_500, 10_000, Some(1_000)));
        assert!(needed(5_000, 10_000, None), "the default reserve counts when output is not capped");
        assert_eq!(estimate_tokens(9), 3);
    }
}
