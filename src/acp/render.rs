//! Rendering agent events as `session/update`s for one client, including how running commands are shown:
//! - a client that sets `_meta.terminal_output` (Zed) gets a terminal block fed by `_meta.terminal_info`,
//!   `terminal_output` (new output only) and `terminal_exit`, with no `content` that would replace the block;
//! - otherwise output goes out as a fenced text window of at most [`WINDOW_BYTES`] bytes per update (never the
//!   whole accumulated output), and the final result as a fenced block.
//!
//! Owns per-call presentation state. Sends nothing itself.

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};

use super::convert;
use crate::agent::event::CompactionStatus;
use crate::agent::{AgentEvent, ToolStatus};
use crate::display::{Content, Kind};
use crate::shell::process::signal_name;

/// Largest live output window sent to clients without a terminal block.
pub const WINDOW_BYTES: usize = 8 * 1024;

/// A fenced code block that no backtick run inside `text` can close early.
pub fn fenced(text: &str, language: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{language}\n{}\n{fence}", text.trim_end_matches('\n'))
}

fn meta(key: &str, value: Value) -> acp::Meta {
    let mut meta = acp::Meta::new();
    meta.insert(key.to_string(), value);
    meta
}

fn text(content: String) -> acp::ToolCallContent {
    convert::content(&Content::Text(content))
}

/// The latest `WINDOW_BYTES` of a command's output.
#[derive(Default)]
struct Window {
    text: String,
}

impl Window {
    fn push(&mut self, chunk: &str) -> &str {
        self.text.push_str(chunk);
        if self.text.len() > WINDOW_BYTES {
            let mut start = self.text.len() - WINDOW_BYTES;
            while !self.text.is_char_boundary(start) {
                start += 1;
            }
            self.text.drain(..start);
        }
        &self.text
    }
}

/// How a client wants running commands shown.
pub struct Renderer {
    terminal_meta: bool,
    /// The client takes `compaction_update` (declared `session.compaction`).
    compaction_updates: bool,
    /// The client takes `notice` updates (declared `session.notices`); others get notices as a quoted message.
    notices: bool,
    cwd: PathBuf,
    /// Running execute calls and their live output windows.
    executing: HashMap<String, Window>,
    /// Calls whose card shows a diff, with a fingerprint of that content: a result showing the same content
    /// leaves it out, so a file's diff crosses the wire once.
    diffs: HashMap<String, u64>,
    /// The session's context figures as last reported (`used`, `size`), resent when a subagent spends tokens.
    context: Option<(u64, u64)>,
    /// Tokens this session's subagents spent, shown with every usage update as `_meta.tinycode.subagentTokens`.
    subagent_tokens: u64,
    /// The client shows subagents as sessions: a `task` card also refers to the child's session.
    subagents: bool,
    /// `task` calls and the child session each shows (only when `subagents`).
    tasks: HashMap<String, String>,
}

/// A fingerprint of content that holds a diff (other content is cheap to resend and not tracked).
fn diff_fingerprint(content: &[Content]) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    if !content.iter().any(|c| matches!(c, Content::Diff { .. })) {
        return None;
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    content.hash(&mut hasher);
    Some(hasher.finish())
}

impl Renderer {
    pub fn new(terminal_meta: bool, compaction_updates: bool, cwd: PathBuf) -> Self {
        Self {
            terminal_meta,
            compaction_updates,
            notices: false,
            cwd,
            executing: HashMap::new(),
            diffs: HashMap::new(),
            context: None,
            subagent_tokens: 0,
            subagents: false,
            tasks: HashMap::new(),
        }
    }

    /// Refer to a subagent's own session in its `task` card (`{type: "session"}` content).
    pub fn with_subagents(mut self, subagents: bool) -> Self {
        self.subagents = subagents;
        self
    }

    /// The card of a `task` call with a reference to its child's session put first, for a client that shows
    /// subagents (content replaces, so every update of the card carries it).
    fn refer_to_child(&mut self, event: &AgentEvent, updates: &mut [acp::SessionUpdate]) {
        if !self.subagents {
            return;
        }
        let (call_id, child) = match event {
            AgentEvent::SubagentProgress { call_id, child_session_id, .. } => {
                self.tasks.insert(call_id.clone(), child_session_id.clone());
                (call_id, child_session_id.clone())
            }
            AgentEvent::ToolCallFinished { call_id, .. } => match self.tasks.remove(call_id) {
                Some(child) => (call_id, child),
                None => return,
            },
            _ => return,
        };
        for update in updates {
            if let acp::SessionUpdate::ToolCallUpdate(update) = update
                && update.tool_call_id.0.as_ref() == call_id.as_str()
                && let Some(content) = update.fields.content.as_mut()
            {
                content.insert(0, acp::ToolCallContent::Session(acp::SessionReference::new(child.clone())));
            }
        }
    }

    /// Send notices as `notice` updates.
    pub fn with_notices(mut self, notices: bool) -> Self {
        self.notices = notices;
        self
    }

    /// The usage update: the context meter stays this session's own context (a subagent's tokens are not in
    /// it), and the tokens its subagents spent so far ride along in `_meta`.
    fn usage(&mut self, event: &AgentEvent) -> Option<Vec<acp::SessionUpdate>> {
        match event {
            AgentEvent::Usage { used, size } => self.context = Some((*used, *size)),
            AgentEvent::SubagentUsage { tokens } => self.subagent_tokens += tokens,
            _ => return None,
        }
        let Some((used, size)) = self.context else { return Some(Vec::new()) };
        let mut update = acp::UsageUpdate::new(used, size);
        if self.subagent_tokens > 0 {
            update = update.meta(meta("tinycode", json!({"subagentTokens": self.subagent_tokens})));
        }
        Some(vec![acp::SessionUpdate::UsageUpdate(update)])
    }

    /// The updates for one event.
    pub fn render(&mut self, event: AgentEvent) -> Vec<acp::SessionUpdate> {
        let task = self.subagents
            && (matches!(&event, AgentEvent::SubagentProgress { .. })
                || matches!(&event, AgentEvent::ToolCallFinished { call_id, .. } if self.tasks.contains_key(call_id)));
        if task {
            let mut updates = self.render_event(event.clone());
            self.refer_to_child(&event, &mut updates);
            return updates;
        }
        self.render_event(event)
    }

    fn render_event(&mut self, event: AgentEvent) -> Vec<acp::SessionUpdate> {
        if let Some(updates) = self.usage(&event) {
            return updates;
        }
        if let AgentEvent::Compaction { compaction_id, status, summary } = &event
            && self.compaction_updates
        {
            let status = match status {
                CompactionStatus::Started => acp::CompactionStatus::InProgress,
                CompactionStatus::Completed => acp::CompactionStatus::Completed,
                CompactionStatus::Failed => acp::CompactionStatus::Failed,
            };
            // Patch semantics: an absent field leaves the editor's value alone (`null` would clear it).
            let failed = status == acp::CompactionStatus::Failed;
            let mut update = acp::CompactionUpdate::new(compaction_id.clone(), status);
            if let Some(summary) = summary {
                update =
                    update.summary(vec![acp::ContentBlock::Text(acp::TextContent::new(summary.clone()))]);
            }
            if failed {
                update = update
                    .error("the model could not summarise the conversation; nothing was changed".to_string());
            }
            return vec![acp::SessionUpdate::CompactionUpdate(update)];
        }
        if let AgentEvent::Notice { title, description } = &event
            && self.notices
        {
            let notice = acp::Notice::new(acp::NoticeSeverity::Warning, title.clone())
                .description(description.clone());
            return vec![acp::SessionUpdate::Notice(notice)];
        }
        match &event {
            AgentEvent::ToolCallStarted { call_id, presentation, .. }
            | AgentEvent::ToolCallRevised { call_id, presentation } => {
                match diff_fingerprint(&presentation.content) {
                    Some(fingerprint) => self.diffs.insert(call_id.clone(), fingerprint),
                    None => self.diffs.remove(call_id),
                };
            }
            AgentEvent::ToolCallFinished { call_id, display, .. }
                if !self.executing.contains_key(call_id) =>
            {
                let shown = self.diffs.remove(call_id);
                if shown.is_some()
                    && shown == diff_fingerprint(display)
                    && let AgentEvent::ToolCallFinished {
                        call_id,
                        status,
                        output,
                        display,
                        locations,
                        raw_output,
                    } = event
                {
                    return vec![convert::finished(
                        call_id, status, output, display, locations, raw_output, false,
                    )];
                }
            }
            _ => {}
        }
        vec![match event {
            AgentEvent::Lifted { parent_call_id, event } => {
                return self
                    .render(*event)
                    .into_iter()
                    .map(|u| convert::lifted(u, &parent_call_id))
                    .collect();
            }
            AgentEvent::ToolCallStarted { call_id, tool, presentation, raw_input }
                if presentation.kind == Kind::Execute =>
            {
                self.executing.insert(call_id.clone(), Window::default());
                let mut call = acp::ToolCall::new(call_id.clone(), presentation.title)
                    .name(tool)
                    .kind(acp::ToolKind::Execute)
                    .status(acp::ToolCallStatus::Pending)
                    .raw_input(raw_input);
                if self.terminal_meta {
                    call = call
                        .content(vec![acp::ToolCallContent::Terminal(acp::Terminal::new(call_id.clone()))])
                        .meta(meta("terminal_info", json!({"terminal_id": call_id, "cwd": self.cwd})));
                } else {
                    call = call.content(convert::contents(&presentation.content));
                }
                acp::SessionUpdate::ToolCall(call)
            }
            AgentEvent::ToolCallOutput { call_id, text: chunk } if self.executing.contains_key(&call_id) => {
                let update = if self.terminal_meta {
                    acp::ToolCallUpdate::new(call_id.clone(), acp::ToolCallUpdateFields::new())
                        .meta(meta("terminal_output", json!({"terminal_id": call_id, "data": chunk})))
                } else {
                    let window = self.executing.entry(call_id.clone()).or_default().push(&chunk).to_string();
                    acp::ToolCallUpdate::new(
                        call_id,
                        acp::ToolCallUpdateFields::new().content(vec![text(fenced(&window, "console"))]),
                    )
                };
                acp::SessionUpdate::ToolCallUpdate(update)
            }
            AgentEvent::ToolCallFinished { call_id, status, output, display, locations, raw_output }
                if self.executing.contains_key(&call_id) =>
            {
                self.executing.remove(&call_id);
                self.finish_execute(call_id, status, output, display, locations, raw_output)
            }
            other => return convert::update(other),
        }]
    }

    fn finish_execute(
        &self,
        call_id: String,
        status: ToolStatus,
        output: String,
        display: Vec<Content>,
        locations: Vec<crate::display::Location>,
        raw_output: Value,
    ) -> acp::SessionUpdate {
        let status = match status {
            ToolStatus::Completed => acp::ToolCallStatus::Completed,
            ToolStatus::Failed => acp::ToolCallStatus::Failed,
        };
        let ran = raw_output.get("timedOut").is_some();
        let mut fields = acp::ToolCallUpdateFields::new().status(status).raw_output(raw_output.clone());
        if !locations.is_empty() {
            fields = fields.locations(convert::locations(&locations));
        }
        if self.terminal_meta && ran {
            let signal = raw_output.get("signal").and_then(Value::as_i64).map(|s| signal_name(s as i32));
            let exit =
                json!({"terminal_id": call_id, "exit_code": raw_output.get("exitCode"), "signal": signal});
            return acp::SessionUpdate::ToolCallUpdate(
                acp::ToolCallUpdate::new(call_id, fields).meta(meta("terminal_exit", exit)),
            );
        }
        let content = if display.is_empty() {
            vec![text(fenced(&output, "console"))]
        } else {
            convert::contents(&display)
        };
        acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(call_id, fields.content(content)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_any_backticks_inside() {
        assert_eq!(fenced("ls\n", "console"), "```console\nls\n```");
        assert_eq!(fenced("a ```` b", ""), "`````\na ```` b\n`````");
    }

    #[test]
    fn the_live_window_keeps_only_the_latest_bytes_on_a_character_boundary() {
        let mut window = Window::default();
        window.push(&"a".repeat(WINDOW_BYTES - 1));
        let shown = window.push("é€").to_string();
        assert!(shown.len() <= WINDOW_BYTES);
        assert!(shown.ends_with("é€"));
    }
}
