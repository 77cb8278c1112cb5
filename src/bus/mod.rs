//! The in-process event bus: tools and the turn loop publish what happened; observers (the ACP relay, tests,
//! future plugins) subscribe. Fire-and-forget: publishing never blocks and never fails when nobody listens.
//!
//! Owns the event vocabulary. Must not know who listens.

use std::path::PathBuf;

use serde_json::Value;
use tokio::sync::broadcast;

/// Everything the core announces. Names follow the seed's dotted event names (see [`Event::name`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `tool.execute.before`: permission was granted and the tool is about to run.
    ToolExecuteBefore { session_id: String, call_id: String, tool: String, args: Value },
    /// `tool.execute.after`: the tool finished (successfully or not).
    ToolExecuteAfter { session_id: String, call_id: String, tool: String, success: bool },
    /// `file.modified`: a tool wrote, created, moved or deleted a file.
    FileModified { session_id: String, call_id: String, path: PathBuf, operation: String },
    /// `question.asked`: a tool put a question to the user.
    QuestionAsked { session_id: String, call_id: String, question: String, options: Vec<String> },
    /// `question.replied`: the question was answered (`None`: declined, closed, cancelled or not askable).
    QuestionReplied { session_id: String, call_id: String, answer: Option<String> },
    /// `session.agent.switched`: the session changed agent (mode) by itself (`plan_enter` / `plan_exit`).
    AgentSwitched { session_id: String, agent: String },
    /// `session.todos.updated`: the to-do list was replaced.
    TodosUpdated { session_id: String, todos: Value },
    /// `provider.models`: the provider's model list was fetched (`None`: it could not be).
    ModelsListed { base_url: String, models: Option<Vec<String>> },
    /// `schedule.job.ran`: a scheduled job's turn is over (and saved).
    JobRan { session_id: String, job_id: String },
}

impl Event {
    /// The seed's name for the event.
    pub fn name(&self) -> &'static str {
        match self {
            Event::ToolExecuteBefore { .. } => "tool.execute.before",
            Event::ToolExecuteAfter { .. } => "tool.execute.after",
            Event::FileModified { .. } => "file.modified",
            Event::ModelsListed { .. } => "provider.models",
            Event::QuestionAsked { .. } => "question.asked",
            Event::QuestionReplied { .. } => "question.replied",
            Event::AgentSwitched { .. } => "session.agent.switched",
            Event::TodosUpdated { .. } => "session.todos.updated",
            Event::JobRan { .. } => "schedule.job.ran",
        }
    }
}

/// A cheap, cloneable handle to one broadcast channel.
#[derive(Clone)]
pub struct Bus {
    tx: broadcast::Sender<Event>,
}

impl Default for Bus {
    fn default() -> Self {
        Self::new()
    }
}

impl Bus {
    /// Slow subscribers lose the oldest events rather than blocking publishers.
    const CAPACITY: usize = 1024;

    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(Self::CAPACITY);
        Self { tx }
    }

    pub fn publish(&self, event: Event) {
        tracing::trace!(event = event.name(), "bus");
        // An error only means nobody is subscribed right now.
        let _ = self.tx.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn subscribers_receive_events_published_after_they_subscribe() {
        let bus = Bus::new();
        bus.publish(Event::ToolExecuteAfter {
            session_id: "s".into(),
            call_id: "c0".into(),
            tool: "read".into(),
            success: true,
        });
        let mut rx = bus.subscribe();
        let event = Event::ToolExecuteBefore {
            session_id: "s".into(),
            call_id: "c1".into(),
            tool: "read".into(),
            args: serde_json::json!({"file_path": "/a"}),
        };
        bus.publish(event.clone());
        assert_eq!(rx.recv().await.unwrap(), event);
        assert!(rx.try_recv().is_err());
    }
}
