//! Running prompts in a session: a prompt waits in line behind the running turn (the user is told so), a
//! steering message (`/steer TEXT`, or a prompt the client marked) goes into the running turn instead, slash
//! commands are answered without the model, and every model turn is bracketed by the checkpoint recorder.
//!
//! Owns the path from a prompt to a turn. The line itself is `queue`; checkpoints are `checkpoints`.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Session;
use super::queue::Fate;
use super::saving::Unsaved;
use super::settings::{Mode, Settings};
use crate::agent::event::CompactionStatus;
use crate::agent::journal::Journal;
use crate::agent::{AgentEvent, Conversation, Steer, StopReason, Turn, TurnError};
use crate::config::Config;
use crate::llm::{ModelClient, UserPart};
use crate::lsp;

/// How a prompt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub stop: StopReason,
    /// It was a steering message, delivered into the running turn (which goes on).
    pub steered: bool,
    /// What the database had not taken by then (the user was told).
    pub unsaved: Option<Unsaved>,
}

impl Answer {
    fn ended(stop: StopReason) -> Self {
        Self { stop, steered: false, unsaved: None }
    }
}

/// Why a `sleep` woke, for the model.
const STEERED: &str = "the user sent a message for this turn; it comes with your next step";
const QUEUED: &str = "the user sent a new prompt, which runs when this turn ends; wrap up";

/// The text of `/steer TEXT`, as the prompt to steer with.
pub fn steer_command(input: &[UserPart]) -> Option<Vec<UserPart>> {
    let [UserPart::Text(text)] = input else { return None };
    let rest = text.trim_start().strip_prefix("/steer")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim();
    (!rest.is_empty()).then(|| vec![UserPart::Text(rest.to_string())])
}

/// The first line of the text the editor was shown (a scheduled job's banner), short.
fn shown_text(blocks: &Value) -> String {
    let text = blocks.get(0).and_then(|b| b.get("text")).and_then(Value::as_str).unwrap_or_default();
    gist(&[UserPart::Text(text.to_string())])
}

/// The first line of a prompt, short, for notices and the checkpoint list.
pub fn gist(input: &[UserPart]) -> String {
    super::derive_title(input).unwrap_or_else(|| "(no text)".into())
}

impl Session {
    /// Run one prompt and return its stop reason (see [`Session::submit`]).
    pub async fn prompt(&self, input: Vec<UserPart>, blocks: Value) -> Result<StopReason, TurnError> {
        Ok(self.submit(input, blocks, false).await?.stop)
    }

    /// Run one prompt. While a turn runs, the prompt waits for it (and the user is told); a steering message
    /// (`steer`, or `/steer TEXT`) goes into the running turn instead. `blocks` is the prompt as the editor sent
    /// it, kept for replay. Before it is answered, the user is told what could not be saved.
    pub async fn submit(
        &self,
        input: Vec<UserPart>,
        blocks: Value,
        steer: bool,
    ) -> Result<Answer, TurnError> {
        let answer = self.run_prompt(input, blocks, steer).await;
        let unsaved = self.report_saving().await;
        answer.map(|answer| Answer { unsaved, ..answer })
    }

    async fn run_prompt(
        &self,
        input: Vec<UserPart>,
        blocks: Value,
        steer: bool,
    ) -> Result<Answer, TurnError> {
        if let Some(parts) = steer_command(&input) {
            return self.steer(Steer { parts, blocks }).await;
        }
        if steer {
            return self.steer(Steer { parts: input, blocks }).await;
        }
        self.queued(input, blocks, false).await.map(Answer::ended)
    }

    /// Give `steer` to the running turn; with no turn running (or when the turn ends before taking it), it
    /// runs as a prompt of its own.
    async fn steer(&self, steer: Steer) -> Result<Answer, TurnError> {
        let gist = gist(&steer.parts);
        let fate = match self.queue.offer(steer) {
            Ok(fate) => fate,
            Err(steer) => return self.queued(steer.parts, steer.blocks, false).await.map(Answer::ended),
        };
        self.sink().emit(AgentEvent::Aside {
            message_id: super::new_id("msg"),
            text: format!("\n\n_Steering: “{gist}” reaches the running turn at its next step._\n\n"),
            meta: json!({"steering": {"pending": true}}),
        });
        self.control.wake(STEERED);
        match fate.await {
            Ok(Fate::Delivered) => Ok(Answer { stop: StopReason::EndTurn, steered: true, unsaved: None }),
            Ok(Fate::Missed(steer)) => self.queued(steer.parts, steer.blocks, false).await.map(Answer::ended),
            Ok(Fate::Cancelled) | Err(_) => Ok(Answer::ended(StopReason::Cancelled)),
        }
    }

    /// Wait in line, then run the prompt. `show`: the editor has not shown it (a scheduled job), so the turn
    /// starts by showing it as the user's message.
    pub(super) async fn queued(
        &self,
        input: Vec<UserPart>,
        blocks: Value,
        show: bool,
    ) -> Result<StopReason, TurnError> {
        let label = if show { shown_text(&blocks) } else { gist(&input) };
        let ticket = self.queue.join();
        if ticket.ahead > 0 {
            self.announce_queued(&label, ticket.ahead);
            self.control.wake(QUEUED);
        }
        let mut conversation = self.conversation.lock().await;
        let _running = self.queue.start();
        if ticket.cancel.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        let cancel = ticket.cancel.child_token();
        if show {
            self.sink()
                .emit(AgentEvent::UserMessage { message_id: super::new_id("user"), blocks: blocks.clone() });
        }
        self.apply_trust();
        self.refresh_extensions().await;
        // A scheduled job's turn (`show`) gets the default mode's rights at most, whatever the session's mode.
        let _rights = show.then(|| self.perms.cap());
        let result = self.dispatch(&mut conversation, input, blocks, &cancel, &label).await;
        // A cancelled turn ends once its foreground subagents have stopped (their processes reaped).
        self.settle_children().await;
        // Text the sink may still hold goes out before the prompt is answered.
        self.sink().flush();
        debug_assert_eq!(conversation.history.check(), Ok(()));
        result
    }

    /// Tell the user their prompt waits for the running turn (with `_meta.tinycode.queued` for clients that
    /// show it their own way).
    fn announce_queued(&self, label: &str, ahead: usize) {
        let behind = match ahead {
            1 => "the running turn".to_string(),
            n => format!("the running turn and {} queued before it", n - 1),
        };
        let text = format!(
            "\n\n_Queued: “{label}” runs after {behind}. Send `/steer …` to add to the running turn instead._\n\n"
        );
        self.sink().emit(AgentEvent::Aside {
            message_id: super::new_id("msg"),
            text,
            meta: json!({"queued": {"position": ahead}}),
        });
    }

    pub(super) fn turn<'a>(
        &'a self,
        config: &'a Config,
        model: &'a dyn ModelClient,
        settings: &Settings,
        cancel: CancellationToken,
    ) -> Turn<'a> {
        self.lsp.configure(config.lsp.clone());
        let diagnostics = self.lsp.enabled().then(|| {
            Arc::new(lsp::Diagnostics(self.lsp.clone())) as Arc<dyn crate::workspace::diagnostics::Checker>
        });
        let hidden_tools =
            if diagnostics.is_some() { Vec::new() } else { vec![crate::builtin::diagnostics::ID] };
        let info = self.model_info(&settings.model);
        Turn {
            session_id: &self.id,
            files: self.files.clone(),
            tasks: self.tasks.clone(),
            terminals: self.terminals.clone(),
            cwd: std::sync::RwLock::new(self.workdir()),
            config,
            model,
            model_name: settings.model.clone(),
            reasoning_effort: settings.reasoning_effort(),
            context_window: config.context_window.unwrap_or(info.context),
            images: info.images,
            plan_mode: settings.mode == Mode::Plan,
            registry: &self.registry,
            sink: self.sink(),
            perms: Some(self.perms.clone()),
            bus: &self.bus,
            journal: self.journal(),
            cancel,
            control: self.control.clone(),
            switcher: Some(self),
            steering: Some(&self.queue),
            changes: Some(self.changes.clone()),
            diagnostics,
            hidden_tools,
            depth: self.depth,
            subagents: self.subagents.get().cloned(),
            instructions: self.instructions.clone(),
            usage_also: match &self.store {
                Some(store) => self.ancestors.iter().map(|id| Journal::new(store.clone(), id)).collect(),
                None => Vec::new(),
            },
            mcp: Some(self.mcp.clone()),
            extras: Arc::new(self.extras(config)),
        }
    }

    pub(super) fn journal(&self) -> Option<Journal> {
        self.store.as_ref().map(|s| Journal::new(s.clone(), &self.id))
    }

    pub(super) async fn compact_command(
        &self,
        turn: Turn<'_>,
        conversation: &mut Conversation,
        cancel: &CancellationToken,
    ) -> StopReason {
        let reply = match turn.compact(conversation, 0).await {
            Some(CompactionStatus::Completed) => {
                "Older messages were summarised; the conversation goes on from the summary."
            }
            Some(_) => "Compacting failed; the conversation is unchanged.",
            None => "There is nothing to compact yet.",
        };
        self.reply(reply);
        if cancel.is_cancelled() { StopReason::Cancelled } else { StopReason::EndTurn }
    }

    /// Cancel the running turn and every prompt queued behind it.
    pub fn cancel(&self) {
        self.queue.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lone_steer_command_with_text_steers() {
        let text = |t: &str| vec![UserPart::Text(t.into())];
        assert_eq!(steer_command(&text("/steer  use the other API ")), Some(text("use the other API")));
        assert_eq!(steer_command(&text("/steer\nmulti\nline")), Some(text("multi\nline")));
        assert_eq!(steer_command(&text("/steer")), None);
        assert_eq!(steer_command(&text("/steering wheel")), None);
        assert_eq!(steer_command(&text("please /steer x")), None);
    }
}
