//! What the user sees of a subagent, through its parent session: the [`Relay`] is the child's event sink and
//! permission approver.
//! - Every event of the child becomes a line in the parent's `task` card (`✓ Read src/lib.rs`), sent as the
//!   whole list each time, because a tool call's content is replaced, never appended to.
//! - The child's edits and commands, and any call that asks for permission, are *lifted*: shown as top-level tool
//!   calls of the parent session (id `{child}/{call}`, title `[agent] …`, tagged with the `task` call), so diffs
//!   can be reviewed and the ask is answered where the editor shows it (an ask inside a card hung Zed for peers).
//! - Lifted calls are journaled in the top-level session too (as `lifted_start`/`lifted_result`), so loading
//!   that session replays them as they were shown live.
//! - The child's token usage is not its parent's context, so it does not move the parent's context meter; it
//!   is counted as the parent's subagent tokens as each response reports them (`TokensSpent` becomes the
//!   parent's `SubagentUsage`, shown in the usage update's `_meta`) and stored against the parent (see `Turn::usage_also`).
//! - The card is throttled: at most one update per [`CARD_INTERVAL`] per child, the latest state always
//!   delivered (a trailing update once the interval is over; a run's start and end go out at once).
//!
//! - A client that shows subagents as sessions of their own (the `subagents` capability) also gets the child's
//!   own events, wrapped as [`AgentEvent::Child`], and its runs' start and end as [`AgentEvent::Subagent`].
//!
//! Owns the translation. Must not decide anything: permissions are the child's `permission::Service`'s.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::lock;
use crate::agent::journal::Journal;
use crate::agent::{AgentEvent, EventSink, SubagentState, ToolStatus};
use crate::display::Kind;
use crate::permission::{Approver, Ask, Reply};

/// Lines kept in the card; older ones are counted.
pub const SHOWN_LINES: usize = 15;
/// The card of one child is updated at most this often; a change in between is sent when it is over.
pub const CARD_INTERVAL: Duration = Duration::from_millis(100);

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
    /// When the card was last sent.
    sent_at: Option<Instant>,
    /// The card changed since it was last sent.
    dirty: bool,
    /// A trailing update is scheduled.
    due: bool,
}

/// The sink and approver of one child session.
pub struct Relay {
    me: Weak<Relay>,
    child_id: String,
    agent: String,
    /// The child session's title (`{description} (@agent subagent)`).
    title: String,
    depth: u32,
    parent_approver: Option<Arc<dyn Approver>>,
    /// The top-level session's journal, when this child's parent is that session: lifted calls are kept there.
    journal: Option<Journal>,
    state: Mutex<State>,
}

fn is_change(kind: Kind) -> bool {
    matches!(kind, Kind::Edit | Kind::Delete | Kind::Move | Kind::Execute)
}

impl Relay {
    pub fn new(
        child_id: &str,
        agent: &str,
        title: &str,
        depth: u32,
        parent_approver: Option<Arc<dyn Approver>>,
        journal: Option<Journal>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            child_id: child_id.into(),
            agent: agent.into(),
            title: title.into(),
            depth,
            parent_approver,
            journal,
            state: Mutex::new(State {
                target: None,
                lines: Vec::new(),
                lifted: HashSet::new(),
                passthrough: HashSet::new(),
                status: None,
                sent_at: None,
                dirty: false,
                due: false,
            }),
        })
    }

    /// Show progress in the parent's call `call_id` from now on (a new run of `prompt`: the card starts empty).
    pub fn retarget(&self, sink: Arc<dyn EventSink>, call_id: &str, prompt: &str) {
        let mut state = lock(&self.state);
        state.target = Some(Target { sink, call_id: call_id.into() });
        state.lines.clear();
        state.status = None;
        // Announced before the card refers to it.
        self.announce(&state, Some(prompt), SubagentState::Running);
        self.publish(&mut state);
    }

    /// The run ended as `end`: say so as the card's last line (`status`) and send the list once more.
    pub fn finish(&self, status: &str, end: SubagentState) {
        let mut state = lock(&self.state);
        state.status = Some(status.to_string());
        self.publish(&mut state);
        self.announce(&state, None, end);
    }

    /// Tell a client that shows subagents as sessions where this child's run stands.
    fn announce(&self, state: &State, prompt: Option<&str>, run: SubagentState) {
        let Some(target) = state.target.as_ref().filter(|t| t.sink.shows_subagents()) else { return };
        target.sink.emit(AgentEvent::Subagent {
            child_session_id: self.child_id.clone(),
            title: prompt.map(|_| self.title.clone()),
            description: prompt.map(gist),
            state: run,
        });
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

    /// Send the card now.
    fn publish(&self, state: &mut State) {
        state.sent_at = Some(Instant::now());
        state.dirty = false;
        let Some(target) = &state.target else { return };
        target.sink.emit(AgentEvent::SubagentProgress {
            call_id: target.call_id.clone(),
            child_session_id: self.child_id.clone(),
            agent: self.agent.clone(),
            depth: self.depth,
            lines: Self::render(&self.agent, state),
        });
    }

    /// Send the card unless it was sent less than [`CARD_INTERVAL`] ago; then send it when the interval is over.
    fn publish_throttled(&self, state: &mut State) {
        let now = Instant::now();
        let next = state.sent_at.map(|at| at + CARD_INTERVAL).filter(|next| *next > now);
        let (Some(next), Ok(runtime)) = (next, tokio::runtime::Handle::try_current()) else {
            return self.publish(state);
        };
        state.dirty = true;
        if std::mem::replace(&mut state.due, true) {
            return;
        }
        let me = self.me.clone();
        runtime.spawn(async move {
            tokio::time::sleep_until(next).await;
            let Some(relay) = me.upgrade() else { return };
            let mut state = lock(&relay.state);
            state.due = false;
            if state.dirty {
                relay.publish(&mut state);
            }
        });
    }

    /// Keep a lifted event in the top-level session's journal, so loading it shows the call again.
    fn journal_lifted(&self, parent_call_id: &str, event: &AgentEvent) {
        let Some(journal) = &self.journal else { return };
        match event {
            AgentEvent::ToolCallStarted { call_id, tool, presentation, raw_input } => {
                journal.lifted_started(parent_call_id, call_id, tool, presentation, raw_input)
            }
            AgentEvent::ToolCallRevised { call_id, presentation } => {
                journal.lifted_revised(parent_call_id, call_id, presentation)
            }
            AgentEvent::ToolCallFinished { .. } => journal.lifted_finished(parent_call_id, event),
            _ => {}
        }
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
            self.journal_lifted(&target.call_id, &event);
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
            AgentEvent::ToolCallRevised { call_id, mut presentation } => {
                presentation.title = self.title(&presentation.title);
                AgentEvent::ToolCallRevised { call_id: self.lifted_id(&call_id), presentation }
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

/// The first line of a prompt, at most 200 characters: the child's description for the editor.
fn gist(prompt: &str) -> String {
    let line = prompt.trim().lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_string(),
    }
}

/// The id of the child's call an event is about, if it is about one.
fn call_of(event: &AgentEvent) -> Option<&str> {
    match event {
        AgentEvent::ToolCallStarted { call_id, .. }
        | AgentEvent::ToolCallRevised { call_id, .. }
        | AgentEvent::ToolCallRunning { call_id }
        | AgentEvent::ToolCallOutput { call_id, .. }
        | AgentEvent::ToolCallContent { call_id, .. }
        | AgentEvent::ToolCallFinished { call_id, .. } => Some(call_id),
        _ => None,
    }
}

impl EventSink for Relay {
    fn shows_subagents(&self) -> bool {
        lock(&self.state).target.as_ref().is_some_and(|t| t.sink.shows_subagents())
    }

    fn emit(&self, event: AgentEvent) {
        let mut state = lock(&self.state);
        // The child's own session, for a client that shows it; the parent's view below is unchanged.
        if let Some(target) = state.target.as_ref().filter(|t| t.sink.shows_subagents()) {
            target.sink.emit(AgentEvent::Child {
                child_session_id: self.child_id.clone(),
                event: Box::new(event.clone()),
            });
        }
        // A grandchild's top-level call: pass it on (the grandchild's card is a line of this child's card).
        if let AgentEvent::Lifted { event: inner, parent_call_id } = &event {
            if let Some(id) = call_of(inner) {
                state.passthrough.insert(id.to_string());
            }
            self.journal_lifted(parent_call_id, inner);
            if let Some(target) = &state.target {
                target.sink.emit(event);
            }
            return;
        }
        // Tokens the child (or a subagent of its own) spent count towards the parent as they are spent.
        // (Its context figures are its own: not shown.)
        let tokens = match &event {
            AgentEvent::Usage { .. } => return,
            AgentEvent::TokensSpent { tokens } | AgentEvent::SubagentUsage { tokens } => *tokens,
            _ => 0,
        };
        if tokens > 0 {
            if let Some(target) = &state.target {
                target.sink.emit(AgentEvent::SubagentUsage { tokens });
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
            AgentEvent::ToolCallRevised { call_id, presentation } => {
                match state.lines.iter_mut().find(|l| &l.call_id == call_id) {
                    Some(line) if line.title != presentation.title => {
                        line.title = presentation.title.clone();
                        true
                    }
                    _ => false,
                }
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
            self.publish_throttled(&mut state);
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
        let relay = Relay::new("sess_c", "explore", "Look (@explore subagent)", 1, None, None);
        relay.retarget(parent.clone(), "t1", "look");
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

    /// Let tasks woken by the (paused) clock run.
    async fn run_pending() {
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    }

    fn cards(parent: &Recorder) -> Vec<Vec<String>> {
        parent
            .events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::SubagentProgress { lines, .. } => Some(lines.clone()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_chatty_child_updates_the_card_at_most_once_per_interval_and_its_last_state_always_arrives() {
        let parent = Arc::new(Recorder::default());
        let relay = Relay::new("sess_c", "explore", "Look (@explore subagent)", 1, None, None);
        relay.retarget(parent.clone(), "t1", "look");
        // 40 calls started and finished within one interval: the first change goes out at once, the rest wait.
        for i in 0..40 {
            relay.emit(started(&format!("c{i}"), &format!("Read f{i}"), Kind::Read));
            relay.emit(finished(&format!("c{i}")));
        }
        assert_eq!(cards(&parent).len(), 1, "only the card of the run's start went out");
        tokio::time::advance(CARD_INTERVAL - Duration::from_millis(1)).await;
        run_pending().await;
        assert_eq!(cards(&parent).len(), 1, "nothing before the interval is over");
        tokio::time::advance(Duration::from_millis(1)).await;
        run_pending().await;
        let sent = cards(&parent);
        assert_eq!(sent.len(), 2, "one trailing update with everything so far");
        assert_eq!(sent[1][0], "`explore` · 40 tool calls");
        assert_eq!(sent[1].last().unwrap(), "✓ Read f39");

        // A change after a quiet interval goes out at once; the end of the run is never held back.
        tokio::time::advance(CARD_INTERVAL * 3).await;
        relay.emit(started("late", "Read late", Kind::Read));
        assert_eq!(cards(&parent).len(), 3);
        relay.emit(finished("late"));
        relay.finish("✓ finished", SubagentState::Completed);
        let sent = cards(&parent);
        assert_eq!(sent.len(), 4);
        assert_eq!(sent[3][sent[3].len() - 2..], ["✓ Read late".to_string(), "✓ finished".to_string()]);
        // The trailing update scheduled for `late`'s finish finds nothing new to send.
        tokio::time::advance(CARD_INTERVAL).await;
        run_pending().await;
        assert_eq!(cards(&parent).len(), 4);
    }

    #[test]
    fn the_tokens_a_child_spends_reach_the_parent_as_subagent_tokens_and_a_grandchilds_pass_through() {
        let parent = Arc::new(Recorder::default());
        let relay = Relay::new("sess_c", "general", "Look (@general subagent)", 1, None, None);
        relay.retarget(parent.clone(), "t1", "look");
        relay.emit(AgentEvent::Usage { used: 5_000, size: 128_000 });
        relay.emit(AgentEvent::TokensSpent { tokens: 110 });
        relay.emit(AgentEvent::SubagentUsage { tokens: 7 });
        let usage: Vec<AgentEvent> = parent
            .events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| !matches!(e, AgentEvent::SubagentProgress { .. }))
            .cloned()
            .collect();
        assert_eq!(
            usage,
            vec![AgentEvent::SubagentUsage { tokens: 110 }, AgentEvent::SubagentUsage { tokens: 7 }]
        );
    }

    #[test]
    fn changes_are_lifted_to_the_parent_with_their_own_ids_and_reads_are_not() {
        let parent = Arc::new(Recorder::default());
        let relay = Relay::new("sess_c", "general", "Look (@general subagent)", 1, None, None);
        relay.retarget(parent.clone(), "t1", "look");
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
