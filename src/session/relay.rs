//! What the user sees of a subagent, through its parent session: the [`Relay`] is the child's event sink and
//! permission approver.
//! - Every event of the child becomes a line in the parent's `task` card (`✓ Read src/lib.rs`), sent as the
//!   whole list each time, because a tool call's content is replaced, never appended to.
//! - The child's edits and commands, and any call that asks for permission, are *lifted*: shown as top-level tool
//!   calls of the parent session (id `{child}/{call}`, title `[agent] …`, tagged with the `task` call), so diffs
//!   can be reviewed and the ask is answered where the editor shows it (an ask inside a card hung Zed for peers).
//! - The child's token usage is not its parent's context, so it is not shown as the parent's meter (it is
//!   stored against the parent instead, see `Turn::usage_also`).
//!
//! Owns the translation. Must not decide anything: permissions are the child's `permission::Service`'s.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use super::lock;
use crate::agent::{AgentEvent, EventSink, ToolStatus};
use crate::display::Kind;
use crate::permission::{Approver, Ask, Reply};

/// Lines kept in the card; older ones are counted.
pub const SHOWN_LINES: usize = 15;

const RUNNING: &str = "…";
const DONE: &str = "✓";
const FAILED: &str = "✗";

/// One line of the card: a child's tool call.
struct Line {
    call_id: String,
    mark: &'static str,
    title: String,
}

/// Where the child's progress goes now (retargeted on each `task` call that runs it).
struct Target {
    sink: Arc<dyn EventSink>,
    call_id: String,
}

struct State {
    target: Option<Target>,
    lines: Vec<Line>,
    /// Child calls shown at the top level of the parent.
    lifted: HashSet<String>,
    /// Calls lifted by a grandchild (already top-level ids): passed through unchanged.
    passthrough: HashSet<String>,
    /// The last line said when the child is done.
    status: Option<String>,
}

/// The sink and approver of one child session.
pub struct Relay {
    child_id: String,
    agent: String,
    depth: u32,
    parent_approver: Option<Arc<dyn Approver>>,
    state: Mutex<State>,
}

fn is_change(kind: Kind) -> bool {
    matches!(kind, Kind::Edit | Kind::Delete | Kind::Move | Kind::Execute)
}

impl Relay {
    pub fn new(child_id: &str, agent: &str, depth: u32, parent_approver: Option<Arc<dyn Approver>>) -> Self {
        Self {
            child_id: child_id.into(),
            agent: agent.into(),
            depth,
            parent_approver,
            state: Mutex::new(State {
                target: None,
                lines: Vec::new(),
                lifted: HashSet::new(),
                passthrough: HashSet::new(),
                status: None,
            }),
        }
    }

    /// Show progress in the parent's call `call_id` from now on (a new run: the card starts empty).
    pub fn retarget(&self, sink: Arc<dyn EventSink>, call_id: &str) {
        let mut state = lock(&self.state);
        state.target = Some(Target { sink, call_id: call_id.into() });
        state.lines.clear();
        state.status = None;
        self.publish(&state);
    }

    /// The run ended: say so as the card's last line and send the list once more.
    pub fn finish(&self, status: &str) {
        let mut state = lock(&self.state);
        state.status = Some(status.to_string());
        self.publish(&state);
    }

    /// The card as it stands.
    pub fn lines(&self) -> Vec<String> {
        Self::render(&self.agent, &lock(&self.state))
    }

    fn render(agent: &str, state: &State) -> Vec<String> {
        let n = state.lines.len();
        let mut out = vec![format!("`{agent}` · {n} tool call{}", if n == 1 { "" } else { "s" })];
        if n > SHOWN_LINES {
            out.push(format!("(+{} earlier)", n - SHOWN_LINES));
        }
        out.extend(
            state.lines[n.saturating_sub(SHOWN_LINES)..].iter().map(|l| format!("{} {}", l.mark, l.title)),
        );
        out.extend(state.status.clone());
        out
    }

    fn publish(&self, state: &State) {
        let Some(target) = &state.target else { return };
        target.sink.emit(AgentEvent::SubagentProgress {
            call_id: target.call_id.clone(),
            child_session_id: self.child_id.clone(),
            agent: self.agent.clone(),
            depth: self.depth,
            lines: Self::render(&self.agent, state),
        });
    }

    fn lifted_id(&self, call_id: &str) -> String {
        format!("{}/{call_id}", self.child_id)
    }

    fn title(&self, title: &str) -> String {
        format!("[{}] {title}", self.agent)
    }

    /// Show `event` (about the child's call `call_id`) at the top level of the parent.
    fn lift(&self, state: &State, event: AgentEvent) {
        if let Some(target) = &state.target {
            target
                .sink
                .emit(AgentEvent::Lifted { parent_call_id: target.call_id.clone(), event: Box::new(event) });
        }
    }

    /// The same event with the child's call id replaced by its top-level id.
    fn renamed(&self, event: AgentEvent) -> AgentEvent {
        match event {
            AgentEvent::ToolCallStarted { call_id, tool, mut presentation, raw_input } => {
                presentation.title = self.title(&presentation.title);
                AgentEvent::ToolCallStarted {
                    call_id: self.lifted_id(&call_id),
                    tool,
                    presentation,
                    raw_input,
                }
            }
            AgentEvent::ToolCallRunning { call_id } => {
                AgentEvent::ToolCallRunning { call_id: self.lifted_id(&call_id) }
            }
            AgentEvent::ToolCallOutput { call_id, text } => {
                AgentEvent::ToolCallOutput { call_id: self.lifted_id(&call_id), text }
            }
            AgentEvent::ToolCallContent { call_id, content } => {
                AgentEvent::ToolCallContent { call_id: self.lifted_id(&call_id), content }
            }
            AgentEvent::ToolCallFinished { call_id, status, output, display, locations, raw_output } => {
                AgentEvent::ToolCallFinished {
                    call_id: self.lifted_id(&call_id),
                    status,
                    output,
                    display,
                    locations,
                    raw_output,
                }
            }
            other => other,
        }
    }

    fn set_mark(state: &mut State, call_id: &str, mark: &'static str) -> bool {
        match state.lines.iter_mut().find(|l| l.call_id == call_id) {
            Some(line) => {
                line.mark = mark;
                true
            }
            None => false,
        }
    }
}

/// The id of the child's call an event is about, if it is about one.
fn call_of(event: &AgentEvent) -> Option<&str> {
    match event {
        AgentEvent::ToolCallStarted { call_id, .. }
        | AgentEvent::ToolCallRunning { call_id }
        | AgentEvent::ToolCallOutput { call_id, .. }
        | AgentEvent::ToolCallContent { call_id, .. }
        | AgentEvent::ToolCallFinished { call_id, .. } => Some(call_id),
        _ => None,
    }
}

impl EventSink for Relay {
    fn emit(&self, event: AgentEvent) {
        let mut state = lock(&self.state);
        // A grandchild's top-level call: pass it on (the grandchild's card is a line of this child's card).
        if let AgentEvent::Lifted { event: inner, .. } = &event {
            if let Some(id) = call_of(inner) {
                state.passthrough.insert(id.to_string());
            }
            if let Some(target) = &state.target {
                target.sink.emit(event);
            }
            return;
        }
        let lifted = call_of(&event).is_some_and(|id| state.lifted.contains(id));
        let changed = match &event {
            AgentEvent::ToolCallStarted { call_id, presentation, .. } => {
                if is_change(presentation.kind) {
                    state.lifted.insert(call_id.clone());
                }
                state.lines.push(Line {
                    call_id: call_id.clone(),
                    mark: RUNNING,
                    title: presentation.title.clone(),
                });
                true
            }
            AgentEvent::ToolCallFinished { call_id, status, .. } => {
                let mark = if *status == ToolStatus::Completed { DONE } else { FAILED };
                Self::set_mark(&mut state, call_id, mark)
            }
            _ => false,
        };
        if lifted
            || matches!(&event, AgentEvent::ToolCallStarted { call_id, .. } if state.lifted.contains(call_id))
        {
            let renamed = self.renamed(event);
            self.lift(&state, renamed);
        }
        if changed {
            self.publish(&state);
        }
    }
}

impl Approver for Relay {
    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let Some(parent) = self.parent_approver.clone() else { return Reply::RejectOnce };
            let mut lifted = ask.clone();
            {
                let mut state = lock(&self.state);
                if !state.passthrough.contains(&ask.call_id) {
                    // Asks are answered at the top level of the parent: the call must be shown there first.
                    if state.lifted.insert(ask.call_id.clone()) {
                        let started = AgentEvent::ToolCallStarted {
                            call_id: ask.call_id.clone(),
                            tool: ask.tool.clone(),
                            presentation: ask.presentation.clone(),
                            raw_input: ask.raw_input.clone(),
                        };
                        let renamed = self.renamed(started);
                        self.lift(&state, renamed);
                    }
                    lifted.call_id = self.lifted_id(&ask.call_id);
                    lifted.presentation.title = self.title(&ask.presentation.title);
                }
            }
            parent.ask(&lifted).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::event::Recorder;
    use crate::display::Presentation;

    fn started(id: &str, title: &str, kind: Kind) -> AgentEvent {
        AgentEvent::ToolCallStarted {
            call_id: id.into(),
            tool: "t".into(),
            presentation: Presentation { title: title.into(), kind, ..Presentation::default() },
            raw_input: serde_json::Value::Null,
        }
    }

    fn finished(id: &str) -> AgentEvent {
        AgentEvent::ToolCallFinished {
            call_id: id.into(),
            status: ToolStatus::Completed,
            output: String::new(),
            display: Vec::new(),
            locations: Vec::new(),
            raw_output: serde_json::Value::Null,
        }
    }

    #[test]
    fn the_card_keeps_the_latest_lines_and_counts_the_earlier_ones() {
        let parent = Arc::new(Recorder::default());
        let relay = Relay::new("sess_c", "explore", 1, None);
        relay.retarget(parent.clone(), "t1");
        for i in 0..17 {
            relay.emit(started(&format!("c{i}"), &format!("Read f{i}"), Kind::Read));
            relay.emit(finished(&format!("c{i}")));
        }
        relay.emit(started("c17", "Read last", Kind::Read));
        let lines = relay.lines();
        assert_eq!(lines.len(), 17);
        assert_eq!(lines[0], "`explore` · 18 tool calls");
        assert_eq!(lines[1], "(+3 earlier)");
        assert_eq!(lines[2], "✓ Read f3");
        assert_eq!(lines[16], "… Read last");
        assert!(
            parent.events.lock().unwrap().iter().all(|e| matches!(e, AgentEvent::SubagentProgress { .. }))
        );
    }

    #[test]
    fn changes_are_lifted_to_the_parent_with_their_own_ids_and_reads_are_not() {
        let parent = Arc::new(Recorder::default());
        let relay = Relay::new("sess_c", "general", 1, None);
        relay.retarget(parent.clone(), "t1");
        relay.emit(started("r", "Read a", Kind::Read));
        relay.emit(started("w", "Write b", Kind::Edit));
        relay.emit(finished("w"));
        let lifted: Vec<AgentEvent> = parent
            .events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Lifted { parent_call_id, event } if parent_call_id == "t1" => {
                    Some((**event).clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(lifted.len(), 2);
        assert!(matches!(&lifted[0], AgentEvent::ToolCallStarted { call_id, presentation, .. }
            if call_id == "sess_c/w" && presentation.title == "[general] Write b"));
        assert!(matches!(&lifted[1], AgentEvent::ToolCallFinished { call_id, .. } if call_id == "sess_c/w"));
    }
}
