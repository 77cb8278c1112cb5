//! Pure conversions between the core's types and ACP's: agent events to `session/update`s, presentation to
//! tool call fields, stop reasons.
//!
//! Owns the mapping only; sends nothing.

use agent_client_protocol::v1::schema as acp;

use crate::agent::{AgentEvent, StopReason, ToolStatus};
use crate::display::{Content, Kind, Location};

pub fn kind(kind: Kind) -> acp::ToolKind {
    match kind {
        Kind::Read => acp::ToolKind::Read,
        Kind::Edit => acp::ToolKind::Edit,
        Kind::Delete => acp::ToolKind::Delete,
        Kind::Move => acp::ToolKind::Move,
        Kind::Search => acp::ToolKind::Search,
        Kind::Execute => acp::ToolKind::Execute,
        Kind::Think => acp::ToolKind::Think,
        Kind::Fetch => acp::ToolKind::Fetch,
        Kind::SwitchMode => acp::ToolKind::SwitchMode,
        Kind::Other => acp::ToolKind::Other,
    }
}

pub fn location(location: &Location) -> acp::ToolCallLocation {
    acp::ToolCallLocation::new(location.path.clone()).line(location.line)
}

pub fn locations(locations: &[Location]) -> Vec<acp::ToolCallLocation> {
    locations.iter().map(location).collect()
}

fn text_block(text: impl Into<String>) -> acp::ContentBlock {
    acp::ContentBlock::Text(acp::TextContent::new(text))
}

pub fn content(content: &Content) -> acp::ToolCallContent {
    match content {
        Content::Text(text) => acp::ToolCallContent::Content(acp::Content::new(text_block(text.clone()))),
        Content::Diff { path, old_text, new_text } => acp::ToolCallContent::Diff(
            acp::Diff::new(path.clone(), new_text.clone()).old_text(old_text.clone()),
        ),
        Content::Terminal(id) => acp::ToolCallContent::Terminal(acp::Terminal::new(id.clone())),
    }
}

pub fn contents(items: &[Content]) -> Vec<acp::ToolCallContent> {
    items.iter().map(content).collect()
}

fn chunk(message_id: String, text: String) -> acp::ContentChunk {
    acp::ContentChunk::new(text_block(text)).message_id(acp::MessageId::from(message_id))
}

/// The `session/update` for one agent event.
pub fn update(event: AgentEvent) -> acp::SessionUpdate {
    match event {
        AgentEvent::MessageChunk { message_id, text } => {
            acp::SessionUpdate::AgentMessageChunk(chunk(message_id, text))
        }
        AgentEvent::ThoughtChunk { message_id, text } => {
            acp::SessionUpdate::AgentThoughtChunk(chunk(message_id, text))
        }
        AgentEvent::ToolCallStarted { call_id, tool, presentation, raw_input } => {
            let call = acp::ToolCall::new(call_id, presentation.title)
                .name(tool)
                .kind(kind(presentation.kind))
                .status(acp::ToolCallStatus::Pending)
                .locations(locations(&presentation.locations))
                .content(contents(&presentation.content))
                .raw_input(raw_input);
            acp::SessionUpdate::ToolCall(call)
        }
        AgentEvent::ToolCallRunning { call_id } => {
            acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
                call_id,
                acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
            ))
        }
        AgentEvent::ToolCallOutput { call_id, text } => {
            acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
                call_id,
                acp::ToolCallUpdateFields::new().content(vec![content(&Content::Text(text))]),
            ))
        }
        AgentEvent::ToolCallContent { call_id, content: items } => acp::SessionUpdate::ToolCallUpdate(
            acp::ToolCallUpdate::new(call_id, acp::ToolCallUpdateFields::new().content(contents(&items))),
        ),
        AgentEvent::ToolCallFinished { call_id, status, output, display, locations: locs, raw_output } => {
            let status = match status {
                ToolStatus::Completed => acp::ToolCallStatus::Completed,
                ToolStatus::Failed => acp::ToolCallStatus::Failed,
            };
            let shown =
                if display.is_empty() { vec![content(&Content::Text(output))] } else { contents(&display) };
            let mut fields =
                acp::ToolCallUpdateFields::new().status(status).content(shown).raw_output(raw_output);
            if !locs.is_empty() {
                fields = fields.locations(locations(&locs));
            }
            acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(call_id, fields))
        }
    }
}

pub fn stop_reason(stop: StopReason) -> acp::StopReason {
    match stop {
        StopReason::EndTurn => acp::StopReason::EndTurn,
        StopReason::MaxTokens => acp::StopReason::MaxTokens,
        StopReason::MaxTurnRequests => acp::StopReason::MaxTurnRequests,
        StopReason::Refusal => acp::StopReason::Refusal,
        StopReason::Cancelled => acp::StopReason::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::Presentation;
    use serde_json::json;

    #[test]
    fn a_started_tool_call_carries_title_kind_locations_and_raw_input_on_the_wire() {
        let update = update(AgentEvent::ToolCallStarted {
            call_id: "call_1".into(),
            tool: "read".into(),
            presentation: Presentation {
                title: "Read src/a.rs".into(),
                kind: Kind::Read,
                locations: vec![Location::at_line("/p/src/a.rs", 1)],
                patterns: vec!["/p/src/a.rs".into()],
                content: vec![],
            },
            raw_input: json!({"file_path": "/p/src/a.rs"}),
        });
        assert_eq!(
            serde_json::to_value(update).unwrap(),
            json!({
                "sessionUpdate": "tool_call",
                "toolCallId": "call_1",
                "title": "Read src/a.rs",
                "name": "read",
                "kind": "read",
                "locations": [{"path": "/p/src/a.rs", "line": 1}],
                "rawInput": {"file_path": "/p/src/a.rs"}
            })
        );
    }

    #[test]
    fn a_finished_call_shows_its_output_as_text_unless_it_has_richer_content() {
        let finished = |display: Vec<Content>| {
            serde_json::to_value(update(AgentEvent::ToolCallFinished {
                call_id: "c".into(),
                status: ToolStatus::Failed,
                output: "File not found: /x".into(),
                display,
                locations: vec![],
                raw_output: json!({"output": "File not found: /x"}),
            }))
            .unwrap()
        };
        assert_eq!(
            finished(vec![]),
            json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c",
                "status": "failed",
                "content": [{"type": "content", "content": {"type": "text", "text": "File not found: /x"}}],
                "rawOutput": {"output": "File not found: /x"}
            })
        );
        let diff = finished(vec![Content::Diff {
            path: "/p/a".into(),
            old_text: Some("a".into()),
            new_text: "b".into(),
        }]);
        assert_eq!(
            diff["content"],
            json!([{"type": "diff", "path": "/p/a", "oldText": "a", "newText": "b"}])
        );
    }

    #[test]
    fn message_chunks_carry_their_message_id() {
        let value = serde_json::to_value(update(AgentEvent::MessageChunk {
            message_id: "m1".into(),
            text: "hi".into(),
        }))
        .unwrap();
        assert_eq!(
            value,
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "messageId": "m1"})
        );
    }
}
