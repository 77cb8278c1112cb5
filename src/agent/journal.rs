//! The conversation on disk: each completed event of a turn (the prompt, a model response, a tool call starting,
//! its result, a compaction summary, a background-task note) is written as one stored message, in its own
//! transaction, as it happens. From the stored messages the model history is rebuilt on load, and the events
//! an editor needs to redraw the whole conversation are produced for `session/load`.
//!
//! Owns the mapping between the agent's types and stored parts. The SQL belongs to `store`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::event::{AgentEvent, CompactionStatus, ToolStatus};
use super::history::History;
use crate::display::{Content, Presentation};
use crate::llm::{Message, Reasoning, ReasoningField, ToolCall, UserPart};
use crate::store::Store;
use crate::store::messages::StoredMessage;

/// Tool output longer than this is trimmed when a session is replayed, so the editor's panel stays fast.
pub const REPLAY_OUTPUT_BYTES: usize = 16 * 1024;
/// Diffs larger than this (old plus new) are replayed as a note instead.
pub const REPLAY_DIFF_BYTES: usize = 512 * 1024;

/// Writes a session's events to the store. Never fatal: a write the database refuses is held by the store and
/// retried in order (the session tells the user at the end of the turn); the turn goes on.
#[derive(Clone)]
pub struct Journal {
    store: Store,
    session_id: String,
    /// The hash of the content (a diff) each started call last presented, by its UI id: a result that shows
    /// the same content stores [`PRESENTED`] instead of a second copy.
    presented: Arc<Mutex<HashMap<String, u64>>>,
}

/// Stored as a result's display when it is the content the call presented (replay takes it from there).
const PRESENTED: &str = "presented";

/// The hash of `content` as stored, computed without building the JSON text.
fn content_hash(content: &[Content]) -> Option<u64> {
    struct Hashing(std::collections::hash_map::DefaultHasher);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            std::hash::Hasher::write(&mut self.0, bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    if content.is_empty() {
        return None;
    }
    let mut hashing = Hashing(Default::default());
    serde_json::to_writer(&mut hashing, content).ok()?;
    Some(std::hash::Hasher::finish(&hashing.0))
}

fn part(kind: &str, data: Value) -> (String, Value) {
    (kind.to_string(), data)
}

impl Journal {
    pub fn new(store: Store, session_id: &str) -> Self {
        Self { store, session_id: session_id.to_string(), presented: Arc::default() }
    }

    /// Queue a message: written in order, without waiting (so synchronous callers can journal too).
    fn write(&self, role: &str, parts: Vec<(String, Value)>) {
        self.store.append_later(&self.session_id, role, parts, crate::clock::now_millis());
    }

    /// Wait until everything queued so far is committed (before each model request, so a crash while the
    /// model streams loses nothing that had completed).
    pub async fn settle(&self) {
        if let Err(e) = self.store.flush().await {
            tracing::error!(error = %e, "the conversation could not be saved");
        }
    }

    /// The user's prompt: what the editor sent (for replay) and what the model sees.
    pub fn user(&self, message_id: &str, blocks: &Value, parts: &[UserPart]) {
        let mut stored = vec![part("input", json!({"messageId": message_id, "blocks": blocks}))];
        stored.extend(parts.iter().map(|p| match p {
            UserPart::Text(text) => part("text", json!({"text": text})),
            UserPart::Image { mime, data } => part("image", json!({"mime": mime, "data": data})),
        }));
        self.write("user", stored);
    }

    /// A model response (possibly partial, when cancelled or cut off).
    pub fn assistant(
        &self,
        message_id: &str,
        thought_id: &str,
        text: &str,
        reasoning: &Option<Reasoning>,
        calls: &[ToolCall],
    ) {
        let mut stored = Vec::new();
        if let Some(reasoning) = reasoning {
            stored.push(part(
                "reasoning",
                json!({
                    "messageId": thought_id, "field": reasoning.field.key(), "text": reasoning.text,
                    "replay": reasoning.replay, "origin": reasoning.origin,
                }),
            ));
        }
        if !text.is_empty() {
            stored.push(part("text", json!({"messageId": message_id, "text": text})));
        }
        if !calls.is_empty() {
            let calls: Vec<Value> =
                calls.iter().map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments})).collect();
            stored.push(part("tool_calls", Value::Array(calls)));
        }
        self.write("assistant", stored);
    }

    pub fn tool_started(
        &self,
        call_id: &str,
        ui_id: &str,
        tool: &str,
        presentation: &Presentation,
        raw_input: &Value,
    ) {
        self.remember_presented(ui_id, presentation);
        let data = json!({"callId": call_id, "uiId": ui_id, "tool": tool, "presentation": presentation, "rawInput": raw_input});
        self.write("tool_start", vec![part("tool_start", data)]);
    }

    /// The presentation a slow preview produced for a call already started.
    pub fn tool_revised(&self, ui_id: &str, presentation: &Presentation) {
        self.remember_presented(ui_id, presentation);
        let data = json!({"uiId": ui_id, "presentation": presentation});
        self.write("tool_revise", vec![part("tool_revise", data)]);
    }

    fn remember_presented(&self, ui_id: &str, presentation: &Presentation) {
        let mut presented = self.presented.lock().unwrap_or_else(|p| p.into_inner());
        match content_hash(&presentation.content) {
            Some(hash) => presented.insert(ui_id.to_string(), hash),
            None => presented.remove(ui_id),
        };
    }

    #[allow(clippy::too_many_arguments)]
    pub fn tool_finished(&self, call_id: &str, ui_id: &str, content: &str, failed: bool, event: &AgentEvent) {
        let presented = self.presented.lock().unwrap_or_else(|p| p.into_inner()).remove(ui_id);
        let (display, locations, raw_output) = match event {
            AgentEvent::ToolCallFinished { display, locations, raw_output, .. } => {
                // The diff the call presented is stored once: the result refers to it.
                let same = presented.is_some() && presented == content_hash(display);
                (if same { json!(PRESENTED) } else { json!(display) }, json!(locations), raw_output.clone())
            }
            _ => (json!([]), json!([]), Value::Null),
        };
        let data = json!({
            "callId": call_id, "uiId": ui_id, "content": content, "failed": failed,
            "display": display, "locations": locations, "rawOutput": raw_output,
        });
        self.write("tool", vec![part("tool_result", data)]);
    }

    /// A subagent's call shown at the top level of this session (`call_id` is its lifted id), under the `task`
    /// call `parent_call_id`.
    pub fn lifted_started(
        &self,
        parent_call_id: &str,
        call_id: &str,
        tool: &str,
        presentation: &Presentation,
        raw_input: &Value,
    ) {
        let data = json!({"parentCallId": parent_call_id, "uiId": call_id, "tool": tool, "presentation": presentation, "rawInput": raw_input});
        self.write("lifted", vec![part("lifted_start", data)]);
    }

    /// The presentation a slow preview produced for a lifted call.
    pub fn lifted_revised(&self, parent_call_id: &str, call_id: &str, presentation: &Presentation) {
        let data = json!({"parentCallId": parent_call_id, "uiId": call_id, "presentation": presentation});
        self.write("lifted", vec![part("lifted_revise", data)]);
    }

    /// How a lifted call ended (`event` is its `ToolCallFinished`).
    pub fn lifted_finished(&self, parent_call_id: &str, event: &AgentEvent) {
        let AgentEvent::ToolCallFinished { call_id, status, output, display, locations, raw_output } = event
        else {
            return;
        };
        let data = json!({
            "parentCallId": parent_call_id, "uiId": call_id, "content": output,
            "failed": *status == ToolStatus::Failed, "display": display, "locations": locations,
            "rawOutput": raw_output,
        });
        self.write("lifted", vec![part("lifted_result", data)]);
    }

    /// One response's token usage.
    pub fn usage(&self, model: &str, usage: &crate::llm::Usage) {
        self.usage_via(model, usage, None);
    }

    /// Token usage of a response, made by the subagent `via` when set (it counts towards this session's total,
    /// not towards its context).
    pub fn usage_via(&self, model: &str, usage: &crate::llm::Usage, via: Option<&str>) {
        let (session, model, at) = (self.session_id.clone(), model.to_string(), crate::clock::now_millis());
        let via = via.map(str::to_string);
        let tokens = [usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.reasoning_tokens]
            .map(|t| t as i64);
        self.store.submit("token usage", move |c| {
            c.execute(
                "INSERT INTO usage (session_id, model, input_tokens, output_tokens, cached_tokens, reasoning_tokens, created_at, via) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                rusqlite::params![session, model, tokens[0], tokens[1], tokens[2], tokens[3], at, via],
            )
            .map(|_| ())
        });
    }

    /// A compaction: `keep` is how many of the newest history messages stay after the summary.
    pub fn summary(&self, text: &str, keep: usize) {
        self.write("summary", vec![part("summary", json!({"text": text, "keep": keep}))]);
    }

    /// A note for the model (a background task finished).
    pub fn note(&self, text: &str) {
        self.write("note", vec![part("note", json!({"text": text}))]);
    }
}

fn text_of(data: &Value, key: &str) -> String {
    data.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The model history and the ids of tool calls already shown, rebuilt from stored messages.
pub fn rebuild(messages: &[StoredMessage]) -> (History, HashSet<String>) {
    let mut history = History::default();
    let mut shown = HashSet::new();
    for message in messages {
        for (kind, data) in &message.parts {
            match kind.as_str() {
                "tool_start" => {
                    shown.insert(text_of(data, "uiId"));
                }
                "tool_result" => history.push(Message::Tool {
                    call_id: text_of(data, "callId"),
                    content: text_of(data, "content"),
                }),
                "summary" => {
                    let keep = data.get("keep").and_then(Value::as_u64).unwrap_or(0) as usize;
                    history.compact(&text_of(data, "text"), keep);
                }
                "note" => history.push_user(vec![UserPart::Text(text_of(data, "text"))]),
                _ => {}
            }
        }
        match message.role.as_str() {
            "user" => history.push_user(user_parts(&message.parts)),
            "assistant" => history.push(assistant(&message.parts)),
            _ => {}
        }
    }
    history.close_open_calls();
    (history, shown)
}

fn user_parts(parts: &[(String, Value)]) -> Vec<UserPart> {
    parts
        .iter()
        .filter_map(|(kind, data)| match kind.as_str() {
            "text" => Some(UserPart::Text(text_of(data, "text"))),
            "image" => Some(UserPart::Image { mime: text_of(data, "mime"), data: text_of(data, "data") }),
            _ => None,
        })
        .collect()
}

fn assistant(parts: &[(String, Value)]) -> Message {
    let mut text = String::new();
    let mut reasoning = None;
    let mut tool_calls = Vec::new();
    for (kind, data) in parts {
        match kind.as_str() {
            "text" => text = text_of(data, "text"),
            "reasoning" => {
                reasoning = Some(Reasoning {
                    field: ReasoningField::from_key(&text_of(data, "field")),
                    text: text_of(data, "text"),
                    replay: data.get("replay").filter(|r| !r.is_null()).cloned(),
                    origin: data.get("origin").and_then(Value::as_str).map(String::from),
                });
            }
            "tool_calls" => {
                tool_calls = data
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| ToolCall {
                        id: text_of(c, "id"),
                        name: text_of(c, "name"),
                        arguments: text_of(c, "arguments"),
                    })
                    .collect()
            }
            _ => {}
        }
    }
    Message::Assistant { text, reasoning, tool_calls }
}

/// Shorten a tool output for replay: head and tail around a note.
fn trim_for_replay(text: &str) -> String {
    if text.len() <= REPLAY_OUTPUT_BYTES {
        return text.to_string();
    }
    let head = crate::tool::truncate::floor_char_boundary(text, REPLAY_OUTPUT_BYTES * 3 / 4);
    let mut tail_start = text.len() - REPLAY_OUTPUT_BYTES / 4;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{head}\n... [{} bytes not shown when reopening the conversation] ...\n{}",
        text.len() - head.len() - (text.len() - tail_start),
        &text[tail_start..]
    )
}

fn replay_display(display: Vec<Content>) -> Vec<Content> {
    display
        .into_iter()
        .map(|item| match item {
            Content::Diff { path, old_text, new_text }
                if old_text.as_ref().map_or(0, String::len) + new_text.len() > REPLAY_DIFF_BYTES =>
            {
                Content::Text(format!(
                    "(a {} KB change to {} is not shown when reopening the conversation)",
                    (old_text.map_or(0, |t| t.len()) + new_text.len()) / 1024,
                    path.display()
                ))
            }
            Content::Text(text) => Content::Text(trim_for_replay(&text)),
            Content::Image { data, mime_type } if data.len() > REPLAY_DIFF_BYTES => Content::Text(format!(
                "(a {} KB {mime_type} image is not shown when reopening the conversation)",
                data.len() * 3 / 4 / 1024
            )),
            other => other,
        })
        .collect()
}

/// The events that redraw a stored conversation: every user, thought and agent message chunk with its id,
/// each tool call followed by its final update, and compactions.
pub fn replay(messages: &[StoredMessage]) -> Vec<AgentEvent> {
    let mut events = Vec::new();
    let mut finished: HashMap<String, bool> = HashMap::new();
    let mut started: Vec<(String, Option<String>)> = Vec::new();
    // What each call last presented, for results stored as [`PRESENTED`].
    let mut presented: HashMap<String, Vec<Content>> = HashMap::new();
    for message in messages {
        for (kind, data) in &message.parts {
            match kind.as_str() {
                "input" => events.push(AgentEvent::UserMessage {
                    message_id: text_of(data, "messageId"),
                    blocks: data["blocks"].clone(),
                }),
                // Reasoning with nothing to show (redacted or encrypted only) is kept for the model, not replayed.
                "reasoning" if !text_of(data, "text").is_empty() => events.push(AgentEvent::ThoughtChunk {
                    message_id: text_of(data, "messageId"),
                    text: text_of(data, "text"),
                }),
                "text" if message.role == "assistant" => events.push(AgentEvent::MessageChunk {
                    message_id: text_of(data, "messageId"),
                    text: text_of(data, "text"),
                }),
                "tool_start" | "lifted_start" => {
                    let ui_id = text_of(data, "uiId");
                    started.push((ui_id.clone(), lifted_under(kind, data)));
                    let presentation: Presentation =
                        serde_json::from_value(data["presentation"].clone()).unwrap_or_default();
                    presented.insert(ui_id.clone(), presentation.content.clone());
                    let event = AgentEvent::ToolCallStarted {
                        call_id: ui_id,
                        tool: text_of(data, "tool"),
                        presentation,
                        raw_input: data["rawInput"].clone(),
                    };
                    events.push(lifted(lifted_under(kind, data), event));
                }
                "tool_revise" | "lifted_revise" => {
                    let presentation: Presentation =
                        serde_json::from_value(data["presentation"].clone()).unwrap_or_default();
                    presented.insert(text_of(data, "uiId"), presentation.content.clone());
                    let event = AgentEvent::ToolCallRevised { call_id: text_of(data, "uiId"), presentation };
                    events.push(lifted(lifted_under(kind, data), event));
                }
                "tool_result" | "lifted_result" => {
                    let ui_id = text_of(data, "uiId");
                    finished.insert(ui_id.clone(), true);
                    let display: Vec<Content> = if data["display"] == PRESENTED {
                        presented.remove(&ui_id).unwrap_or_default()
                    } else {
                        serde_json::from_value(data["display"].clone()).unwrap_or_default()
                    };
                    let under = lifted_under(kind, data);
                    events.push(lifted(
                        under,
                        AgentEvent::ToolCallFinished {
                            call_id: ui_id,
                            status: if data["failed"] == true {
                                ToolStatus::Failed
                            } else {
                                ToolStatus::Completed
                            },
                            output: trim_for_replay(&text_of(data, "content")),
                            display: replay_display(display),
                            locations: serde_json::from_value(data["locations"].clone()).unwrap_or_default(),
                            raw_output: data["rawOutput"].clone(),
                        },
                    ));
                }
                "summary" => events.push(AgentEvent::Compaction {
                    compaction_id: format!("compaction_{}", events.len()),
                    status: CompactionStatus::Completed,
                    summary: Some(text_of(data, "text")),
                }),
                // Background-task notes were for the model; the editor never showed them.
                _ => {}
            }
        }
    }
    // Calls that never finished (the process died) are shown as failed.
    for (ui_id, under) in started.into_iter().filter(|(id, _)| !finished.contains_key(id)) {
        events.push(lifted(
            under,
            AgentEvent::ToolCallFinished {
                call_id: ui_id,
                status: ToolStatus::Failed,
                output: "Interrupted: tinycode stopped before this tool call finished.".into(),
                display: Vec::new(),
                locations: Vec::new(),
                raw_output: Value::Null,
            },
        ));
    }
    events
}

/// The `task` call a stored lifted part belongs to (`None` for this session's own calls).
fn lifted_under(kind: &str, data: &Value) -> Option<String> {
    kind.starts_with("lifted_").then(|| text_of(data, "parentCallId"))
}

/// `event` as shown: at the top level, tagged with its `task` call when a subagent made it.
fn lifted(under: Option<String>, event: AgentEvent) -> AgentEvent {
    match under {
        Some(parent_call_id) => AgentEvent::Lifted { parent_call_id, event: Box::new(event) },
        None => event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::Presentation;

    fn stored(role: &str, parts: Vec<(String, Value)>) -> StoredMessage {
        StoredMessage { role: role.into(), parts, created_at: 1 }
    }

    fn user(text: &str) -> StoredMessage {
        stored(
            "user",
            vec![
                part("input", json!({"messageId": "user_1", "blocks": [{"type": "text", "text": text}]})),
                part("text", json!({"text": text})),
            ],
        )
    }

    fn calls(ids: &[&str]) -> StoredMessage {
        let calls: Vec<Value> =
            ids.iter().map(|id| json!({"id": id, "name": "read", "arguments": "{}"})).collect();
        stored("assistant", vec![part("tool_calls", Value::Array(calls))])
    }

    fn started(id: &str) -> StoredMessage {
        let presentation =
            serde_json::to_value(Presentation { title: "Read".into(), ..Presentation::default() });
        let data = json!({"callId": id, "uiId": id, "tool": "read", "presentation": presentation.unwrap_or_default(), "rawInput": {}});
        stored("tool_start", vec![part("tool_start", data)])
    }

    fn result(id: &str, content: &str) -> StoredMessage {
        let data = json!({"callId": id, "uiId": id, "content": content, "failed": false, "display": [], "locations": [], "rawOutput": null});
        stored("tool", vec![part("tool_result", data)])
    }

    #[test]
    fn a_crash_between_a_call_and_its_result_leaves_a_valid_history_even_after_more_turns() {
        let messages = vec![
            user("one"),
            calls(&["a", "b"]),
            started("a"),
            result("a", "A"),
            started("b"),
            // The process died here; after a restart the user went on.
            user("two"),
            stored("assistant", vec![part("text", json!({"messageId": "m", "text": "ok"}))]),
        ];
        let (history, shown) = rebuild(&messages);
        assert_eq!(history.check(), Ok(()));
        assert_eq!(history.messages().len(), 6);
        assert!(
            matches!(&history.messages()[3], Message::Tool { call_id, content } if call_id == "b" && content == super::super::history::MISSING_RESULT)
        );
        assert_eq!(shown, HashSet::from(["a".to_string(), "b".to_string()]));

        let finals: Vec<(String, ToolStatus)> = replay(&messages)
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::ToolCallFinished { call_id, status, .. } => Some((call_id, status)),
                _ => None,
            })
            .collect();
        assert_eq!(
            finals,
            vec![("a".to_string(), ToolStatus::Completed), ("b".to_string(), ToolStatus::Failed)]
        );
    }

    #[test]
    fn reasoning_to_send_back_survives_a_restart_and_only_shown_reasoning_is_replayed() {
        let thinking = |text: &str| {
            json!({"messageId": "t", "field": "thinking", "text": text, "origin": "anthropic/claude-sonnet-4-5",
                   "replay": [{"type": "redacted_thinking", "data": "abc"}]})
        };
        let messages = vec![
            user("one"),
            stored(
                "assistant",
                vec![part("reasoning", thinking("")), part("text", json!({"messageId": "m", "text": "a"}))],
            ),
            user("two"),
            stored(
                "assistant",
                vec![
                    part("reasoning", thinking("hmm")),
                    part("text", json!({"messageId": "n", "text": "b"})),
                ],
            ),
        ];
        let (history, _) = rebuild(&messages);
        let Message::Assistant { reasoning: Some(reasoning), .. } = &history.messages()[1] else {
            panic!("{history:?}")
        };
        assert_eq!(
            reasoning,
            &Reasoning {
                field: ReasoningField::Thinking,
                text: String::new(),
                replay: Some(json!([{"type": "redacted_thinking", "data": "abc"}])),
                origin: Some("anthropic/claude-sonnet-4-5".into()),
            }
        );
        let thoughts: Vec<String> = replay(&messages)
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::ThoughtChunk { text, .. } => Some(text),
                _ => None,
            })
            .collect();
        assert_eq!(thoughts, vec!["hmm".to_string()]);
    }

    #[test]
    fn a_summary_replaces_older_history_on_rebuild_and_shows_as_a_compaction_on_replay() {
        let messages = vec![
            user("one"),
            stored("assistant", vec![part("text", json!({"messageId": "m1", "text": "first"}))]),
            user("two"),
            stored("summary", vec![part("summary", json!({"text": "they said one", "keep": 1}))]),
            stored("assistant", vec![part("text", json!({"messageId": "m2", "text": "second"}))]),
        ];
        let (history, _) = rebuild(&messages);
        let kinds: Vec<&str> = history
            .messages()
            .iter()
            .map(|m| match m {
                Message::User(parts) => match &parts[0] {
                    UserPart::Text(t) if t.starts_with("<conversation-summary>") => "summary",
                    _ => "user",
                },
                Message::Assistant { .. } => "assistant",
                Message::Tool { .. } => "tool",
            })
            .collect();
        assert_eq!(kinds, vec!["summary", "user", "assistant"]);
        let compactions = replay(&messages)
            .into_iter()
            .filter(|e| matches!(e, AgentEvent::Compaction { summary: Some(s), .. } if s == "they said one"))
            .count();
        assert_eq!(compactions, 1);
    }

    #[tokio::test]
    async fn a_result_showing_the_diff_the_call_presented_stores_it_once_and_replays_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let row = crate::store::sessions::SessionRow {
            id: "s".into(),
            cwd: "/w".into(),
            title: None,
            mode: "build".into(),
            model: None,
            thought_level: None,
            created_at: 1,
            updated_at: 1,
        };
        store.create_session(row).await.unwrap();
        let journal = Journal::new(store.clone(), "s");
        let diff = |new: &str| {
            vec![Content::Diff { path: "/w/a".into(), old_text: Some("a".into()), new_text: new.into() }]
        };
        let presentation =
            Presentation { title: "Edit a".into(), content: diff("b"), ..Presentation::default() };
        let finished = |call_id: &str, display| AgentEvent::ToolCallFinished {
            call_id: call_id.into(),
            status: ToolStatus::Completed,
            output: "Edited".into(),
            display,
            locations: Vec::new(),
            raw_output: Value::Null,
        };
        journal.tool_started("c1", "ui", "edit", &presentation, &json!({}));
        journal.tool_finished("c1", "ui", "Edited", false, &finished("ui", diff("b")));
        // A formatter changed the result: both are kept.
        journal.tool_started("c2", "ui2", "edit", &presentation, &json!({}));
        journal.tool_finished("c2", "ui2", "Edited", false, &finished("ui2", diff("formatted")));
        journal.settle().await;
        let messages = store.messages("s").await.unwrap();
        let displays: Vec<&Value> = messages
            .iter()
            .flat_map(|m| &m.parts)
            .filter(|(k, _)| k == "tool_result")
            .map(|(_, d)| &d["display"])
            .collect();
        assert_eq!(displays, vec![&json!("presented"), &json!(diff("formatted"))]);
        let replayed: Vec<(String, Vec<Content>)> = replay(&messages)
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::ToolCallFinished { call_id, display, .. } => Some((call_id, display)),
                _ => None,
            })
            .collect();
        assert_eq!(replayed, vec![("ui".to_string(), diff("b")), ("ui2".to_string(), diff("formatted"))]);
    }

    #[test]
    fn replay_trims_huge_outputs_to_head_and_tail_and_replaces_huge_diffs_by_a_note() {
        let long: String = (0..5_000).map(|i| format!("line {i}\n")).collect();
        let trimmed = trim_for_replay(&long);
        assert!(trimmed.len() < REPLAY_OUTPUT_BYTES + 200, "{}", trimmed.len());
        assert!(trimmed.starts_with("line 0\nline 1\n"));
        assert!(trimmed.ends_with("line 4999\n"));
        assert!(trimmed.contains("bytes not shown when reopening the conversation"));
        assert_eq!(trim_for_replay("short"), "short");

        let huge =
            Content::Diff { path: "/w/big.txt".into(), old_text: None, new_text: "x".repeat(600 * 1024) };
        let small =
            Content::Diff { path: "/w/a.txt".into(), old_text: Some("a".into()), new_text: "b".into() };
        assert_eq!(
            replay_display(vec![huge, small.clone()]),
            vec![
                Content::Text(
                    "(a 600 KB change to /w/big.txt is not shown when reopening the conversation)".into()
                ),
                small
            ]
        );
    }

    #[test]
    fn lifted_calls_replay_tagged_with_their_task_call_and_one_left_unfinished_shows_as_failed() {
        let presentation =
            json!(Presentation { title: "[general] Create a.txt".into(), ..Presentation::default() });
        let lifted_start = |id: &str| {
            let data = json!({"parentCallId": "t1", "uiId": id, "tool": "write", "presentation": presentation, "rawInput": {}});
            stored("lifted", vec![part("lifted_start", data)])
        };
        let lifted_result = json!({"parentCallId": "t1", "uiId": "sess_c/w1", "content": "ok", "failed": false,
            "display": [], "locations": [], "rawOutput": null});
        let messages = vec![
            user("one"),
            calls(&["t1"]),
            started("t1"),
            lifted_start("sess_c/w1"),
            stored("lifted", vec![part("lifted_result", lifted_result)]),
            lifted_start("sess_c/w2"),
            result("t1", "done"),
        ];
        let (history, shown) = rebuild(&messages);
        assert_eq!(history.messages().len(), 3, "lifted calls are not the model's");
        assert_eq!(shown, HashSet::from(["t1".to_string()]));
        let shape: Vec<(Option<String>, String, &str)> = replay(&messages)
            .into_iter()
            .filter_map(|e| {
                let (under, inner) = match e {
                    AgentEvent::Lifted { parent_call_id, event } => (Some(parent_call_id), *event),
                    other => (None, other),
                };
                match inner {
                    AgentEvent::ToolCallStarted { call_id, .. } => Some((under, call_id, "started")),
                    AgentEvent::ToolCallFinished { call_id, status: ToolStatus::Completed, .. } => {
                        Some((under, call_id, "completed"))
                    }
                    AgentEvent::ToolCallFinished { call_id, .. } => Some((under, call_id, "failed")),
                    _ => None,
                }
            })
            .collect();
        let t1 = Some("t1".to_string());
        assert_eq!(
            shape,
            vec![
                (None, "t1".into(), "started"),
                (t1.clone(), "sess_c/w1".into(), "started"),
                (t1.clone(), "sess_c/w1".into(), "completed"),
                (t1.clone(), "sess_c/w2".into(), "started"),
                (None, "t1".into(), "completed"),
                (t1, "sess_c/w2".into(), "failed"),
            ]
        );
    }

    #[test]
    fn background_task_notes_reach_the_model_but_are_not_replayed() {
        let messages = vec![
            user("start it"),
            stored("note", vec![part("note", json!({"text": "<background-tasks>done</background-tasks>"}))]),
        ];
        let (history, _) = rebuild(&messages);
        assert_eq!(history.messages().len(), 2);
        assert!(replay(&messages).iter().all(|e| !matches!(e, AgentEvent::MessageChunk { .. })));
    }
}
