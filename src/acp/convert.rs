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
        Content::Image { data, mime_type } => acp::ToolCallContent::Content(acp::Content::new(
            acp::ContentBlock::Image(acp::ImageContent::new(data.clone(), mime_type.clone())),
        )),
    }
}

/// The slash commands as advertised.
pub fn commands(list: &[crate::agent::event::CommandInfo]) -> acp::AvailableCommandsUpdate {
    let commands = list
        .iter()
        .map(|c| {
            let command = acp::AvailableCommand::new(c.name.clone(), c.description.clone());
            match &c.hint {
                Some(hint) => command.input(acp::AvailableCommandInput::Unstructured(
                    acp::UnstructuredCommandInput::new(hint.clone()),
                )),
                None => command,
            }
        })
        .collect();
    acp::AvailableCommandsUpdate::new(commands)
}

pub fn contents(items: &[Content]) -> Vec<acp::ToolCallContent> {
    items.iter().map(content).collect()
}

fn chunk(message_id: String, text: String) -> acp::ContentChunk {
    acp::ContentChunk::new(text_block(text)).message_id(acp::MessageId::from(message_id))
}

/// The user message chunks for a prompt as the editor sent it (one per content block).
pub fn user_message(message_id: &str, blocks: &serde_json::Value) -> Vec<acp::SessionUpdate> {
    let blocks: Vec<acp::ContentBlock> = serde_json::from_value(blocks.clone()).unwrap_or_default();
    blocks
        .into_iter()
        .map(|block| {
            acp::SessionUpdate::UserMessageChunk(
                acp::ContentChunk::new(block).message_id(acp::MessageId::from(message_id.to_string())),
            )
        })
        .collect()
}

/// The `session/update`s for one agent event. Compactions are rendered by the caller, which knows whether the
/// client takes `compaction_update`.
/// A subagent's update shown at the top level: tagged with the `task` call it belongs to.
pub fn lifted(update: acp::SessionUpdate, parent_call_id: &str) -> acp::SessionUpdate {
    let tag = |meta: Option<acp::Meta>| {
        let mut meta = meta.unwrap_or_default();
        meta.insert("tinycode".into(), serde_json::json!({"parentToolCallId": parent_call_id}));
        meta
    };
    match update {
        acp::SessionUpdate::ToolCall(call) => {
            let meta = tag(call.meta.clone());
            acp::SessionUpdate::ToolCall(call.meta(meta))
        }
        acp::SessionUpdate::ToolCallUpdate(call) => {
            let meta = tag(call.meta.clone());
            acp::SessionUpdate::ToolCallUpdate(call.meta(meta))
        }
        other => other,
    }
}

pub fn update(event: AgentEvent) -> Vec<acp::SessionUpdate> {
    vec![match event {
        AgentEvent::UserMessage { message_id, blocks } => return user_message(&message_id, &blocks),
        AgentEvent::SessionInfo { title, updated_at } => acp::SessionUpdate::SessionInfoUpdate(
            acp::SessionInfoUpdate::new().title(title).updated_at(updated_at),
        ),
        AgentEvent::Usage { used, size } => {
            acp::SessionUpdate::UsageUpdate(acp::UsageUpdate::new(used, size))
        }
        AgentEvent::Plan { items } => acp::SessionUpdate::Plan(plan(&items)),
        AgentEvent::SubagentProgress { call_id, child_session_id, agent, depth, lines } => {
            let meta =
                serde_json::json!({"childSessionId": child_session_id, "depth": depth, "agent": agent});
            let mut tinycode = acp::Meta::new();
            tinycode.insert("tinycode".into(), meta);
            acp::SessionUpdate::ToolCallUpdate(
                acp::ToolCallUpdate::new(
                    call_id,
                    acp::ToolCallUpdateFields::new().content(vec![content(&Content::Text(lines.join("\n")))]),
                )
                .meta(tinycode),
            )
        }
        // Counted by the renderer, which knows the session's context figures.
        AgentEvent::SubagentUsage { .. } | AgentEvent::TokensSpent { .. } => return Vec::new(),
        // Sent by the session's client under the child's id (`client`), and only to clients that show them.
        AgentEvent::Subagent { .. } | AgentEvent::Child { .. } => return Vec::new(),
        AgentEvent::Lifted { parent_call_id, event } => {
            return update(*event).into_iter().map(|u| lifted(u, &parent_call_id)).collect();
        }
        AgentEvent::Compaction { compaction_id, status, summary } => {
            let text = match (status, summary) {
                (crate::agent::event::CompactionStatus::Started, _) => {
                    "_Compacting the conversation: older messages are being summarised…_\n\n".to_string()
                }
                (crate::agent::event::CompactionStatus::Completed, _) => {
                    "_The conversation was compacted: older messages were replaced by a summary._\n\n"
                        .to_string()
                }
                (crate::agent::event::CompactionStatus::Failed, _) => {
                    "_Compacting the conversation failed; continuing without it._\n\n".to_string()
                }
            };
            acp::SessionUpdate::AgentMessageChunk(chunk(compaction_id, text))
        }
        AgentEvent::MessageChunk { message_id, text } => {
            acp::SessionUpdate::AgentMessageChunk(chunk(message_id, text))
        }
        AgentEvent::Commands(list) => acp::SessionUpdate::AvailableCommandsUpdate(commands(&list)),
        AgentEvent::Notice { title, description } => acp::SessionUpdate::AgentMessageChunk(chunk(
            format!("notice_{}", uuid::Uuid::new_v4().simple()),
            format!("\n\n> **{title}**\n> {}\n\n", description.replace('\n', "\n> ")),
        )),
        AgentEvent::ThoughtChunk { message_id, text } => {
            acp::SessionUpdate::AgentThoughtChunk(chunk(message_id, text))
        }
        AgentEvent::Aside { message_id, text, meta } => {
            let mut extension = acp::Meta::new();
            extension.insert(super::META_KEY.to_string(), meta);
            acp::SessionUpdate::AgentMessageChunk(chunk(message_id, text).meta(extension))
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
        AgentEvent::ToolCallRevised { call_id, presentation } => {
            let mut fields = acp::ToolCallUpdateFields::new()
                .title(presentation.title)
                .kind(kind(presentation.kind))
                .content(contents(&presentation.content));
            if !presentation.locations.is_empty() {
                fields = fields.locations(locations(&presentation.locations));
            }
            acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(call_id, fields))
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
            finished(call_id, status, output, display, locs, raw_output, true)
        }
    }]
}

/// The update that completes a call; without `content` when the card already shows what the result would
/// (ACP keeps content an update leaves out).
pub fn finished(
    call_id: String,
    status: ToolStatus,
    output: String,
    display: Vec<Content>,
    locs: Vec<Location>,
    raw_output: serde_json::Value,
    with_content: bool,
) -> acp::SessionUpdate {
    let status = match status {
        ToolStatus::Completed => acp::ToolCallStatus::Completed,
        ToolStatus::Failed => acp::ToolCallStatus::Failed,
    };
    let mut fields = acp::ToolCallUpdateFields::new().status(status).raw_output(raw_output);
    if with_content {
        let shown =
            if display.is_empty() { vec![content(&Content::Text(output))] } else { contents(&display) };
        fields = fields.content(shown);
    }
    if !locs.is_empty() {
        fields = fields.locations(locations(&locs));
    }
    acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(call_id, fields))
}

/// A plan update from the to-do list (`done` → completed, `normal` → medium).
pub fn plan(items: &serde_json::Value) -> acp::Plan {
    let entries = items
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            let priority = match item.get("priority").and_then(serde_json::Value::as_str) {
                Some("high") => acp::PlanEntryPriority::High,
                Some("low") => acp::PlanEntryPriority::Low,
                _ => acp::PlanEntryPriority::Medium,
            };
            let status = match item.get("status").and_then(serde_json::Value::as_str) {
                Some("in_progress") => acp::PlanEntryStatus::InProgress,
                Some("done") | Some("completed") => acp::PlanEntryStatus::Completed,
                _ => acp::PlanEntryStatus::Pending,
            };
            let content = item.get("content").and_then(serde_json::Value::as_str).unwrap_or("");
            // While an item runs, the editor shows what is happening ("Adding the form").
            let active = item.get("activeForm").and_then(serde_json::Value::as_str).filter(|a| !a.is_empty());
            let shown = match (&status, active) {
                (acp::PlanEntryStatus::InProgress, Some(active)) => active,
                _ => content,
            };
            acp::PlanEntry::new(shown, priority, status)
        })
        .collect();
    acp::Plan::new(entries)
}

/// The session's options as ACP config options.
pub fn config_options(options: &[crate::session::settings::ConfigOption]) -> Vec<acp::SessionConfigOption> {
    use crate::session::settings::OptionKind;
    options
        .iter()
        .map(|option| {
            let choices: Vec<acp::SessionConfigSelectOption> = option
                .choices
                .iter()
                .map(|c| {
                    acp::SessionConfigSelectOption::new(c.id.clone(), c.name.clone())
                        .description(c.description.clone())
                })
                .collect();
            let category = match option.kind {
                OptionKind::Mode => acp::SessionConfigOptionCategory::Mode,
                OptionKind::Model => acp::SessionConfigOptionCategory::Model,
                OptionKind::ThoughtLevel => acp::SessionConfigOptionCategory::ThoughtLevel,
            };
            acp::SessionConfigOption::select(option.id, option.name, option.current.clone(), choices)
                .description(option.description.to_string())
                .category(category)
        })
        .collect()
}

/// The legacy mode state, kept in step with the `mode` config option.
pub fn modes(current: crate::session::settings::Mode) -> acp::SessionModeState {
    use crate::session::settings::Mode;
    let available = Mode::ALL
        .iter()
        .map(|m| acp::SessionMode::new(m.id(), m.name()).description(m.description().to_string()))
        .collect();
    acp::SessionModeState::new(current.id(), available)
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

    /// The one update `event` becomes, checked against the ACP schema (no unknown field outside `_meta`).
    fn one(event: AgentEvent) -> acp::SessionUpdate {
        let mut updates = update(event);
        assert_eq!(updates.len(), 1);
        let wire = serde_json::to_value(&updates[0]).unwrap();
        let problems = crate::acp::schema_check::SCHEMA.check("#/$defs/SessionUpdate", &wire);
        assert!(problems.is_empty(), "{wire} breaks the ACP schema: {problems:?}");
        updates.remove(0)
    }

    #[test]
    fn a_started_tool_call_carries_title_kind_locations_and_raw_input_on_the_wire() {
        let update = one(AgentEvent::ToolCallStarted {
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
            serde_json::to_value(one(AgentEvent::ToolCallFinished {
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
        let value = serde_json::to_value(one(AgentEvent::MessageChunk {
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
