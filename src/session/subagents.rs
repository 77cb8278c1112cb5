//! The session side of `task`: a subagent is a session of its own (own id, history, file ledger, tasks),
//! stored with a link to its parent and never listed in the editor's history, whose events reach the user
//! through its parent ([`Relay`]). Its tools and mode are narrowed from its parent's (`agents`), its asks are
//! answered through its parent, its token usage counts towards its parent's, and it runs:
//! - in the foreground: the `task` call waits for its final answer, which is the call's result; cancelling the
//!   parent's turn cancels it, and the parent's turn ends only once the child's has (its processes reaped);
//! - in the background: the call returns its id at once; the parent's model is told on its next request when it
//!   finished; it stops when the parent session closes, not on an ordinary cancel.
//!
//! A later call with `task_id` checks on it (JSON status) or, with a new prompt, resumes it with its context.
//!
//! Owns the children of a session. Must not import `acp`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::agents::{self, AgentDef};
use super::relay::Relay;
use super::settings::{Mode, Settings};
use super::{Session, lock};
use crate::agent::{AgentEvent, Conversation, EventSink, StopReason, SubagentState, TurnError};
use crate::control::Control;
use crate::display::Content;
use crate::llm::{Message, UserPart};
use crate::permission;
use crate::shell::environment::Environment;
use crate::shell::tasks::Tasks;
use crate::store::sessions::{ChildRow, SessionRow};
use crate::tool::subagent::{Subagents, TaskRequest};
use crate::tool::{Context, ToolError, ToolOutput};

/// Where a subagent's work stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Running { background: bool },
    Done { status: &'static str, result: String },
}

/// One subagent of a session.
pub struct Job {
    child: Arc<Session>,
    relay: Arc<Relay>,
    agent: String,
    description: String,
    state: Mutex<State>,
    /// Set to `false` when a run ends; the parent's turn waits for its foreground children.
    running: tokio::sync::watch::Sender<bool>,
}

impl Job {
    fn status(&self) -> Value {
        let mut status =
            json!({"task_id": self.child.id, "description": self.description, "agent": self.agent});
        match lock(&self.state).clone() {
            State::Running { .. } => status["status"] = json!("running"),
            State::Done { status: done, result } => {
                status["status"] = json!(done);
                status["result"] = json!(result);
            }
        }
        status
    }

    fn status_output(&self) -> ToolOutput {
        let status = self.status();
        ToolOutput {
            output: serde_json::to_string_pretty(&status).unwrap_or_default(),
            metadata: status,
            ..ToolOutput::default()
        }
    }

    /// The answer for a call naming this task: its status while it runs or when no new prompt is given.
    fn check(&self, prompt: &str) -> Option<ToolOutput> {
        let running = matches!(*lock(&self.state), State::Running { .. });
        (running || prompt.is_empty()).then(|| self.status_output())
    }

    /// The result of a finished run, for the model and the card.
    fn output(&self, status: &str, result: &str) -> ToolOutput {
        let mut display = vec![Content::Text(self.relay.lines().join("\n"))];
        if !result.is_empty() {
            display.push(Content::Text(result.to_string()));
        }
        let stopped = if status == "cancelled" {
            "The user stopped this subagent before it finished; below is the last thing it said.\n"
        } else {
            ""
        };
        ToolOutput {
            output: format!(
                "task_id: {} (pass it as `task_id` to continue this task)\n{stopped}\n<task_result>\n{result}\n</task_result>",
                self.child.id
            ),
            display,
            metadata: json!({"task_id": self.child.id, "agent": self.agent, "status": status}),
            failed: status != "completed",
            ..ToolOutput::default()
        }
    }
}

/// The subagents of one session, and the reports of background ones not yet told to its model.
#[derive(Default)]
pub struct Children {
    jobs: Mutex<HashMap<String, Arc<Job>>>,
    notes: Mutex<Vec<String>>,
}

impl Children {
    fn get(&self, id: &str) -> Option<Arc<Job>> {
        lock(&self.jobs).get(id).cloned()
    }

    /// Stop every subagent (the parent is closing).
    pub fn close_all(&self) {
        for job in lock(&self.jobs).values() {
            job.child.close();
        }
    }

    /// Wait until no foreground subagent runs (the parent's turn is ending).
    pub async fn settle(&self) {
        let waiting: Vec<_> = lock(&self.jobs)
            .values()
            .filter(|j| matches!(*lock(&j.state), State::Running { background: false }))
            .map(|j| j.running.subscribe())
            .collect();
        for mut running in waiting {
            let _ = running.wait_for(|r| !r).await;
        }
    }
}

/// Runs the `task` calls of one session.
struct Handle {
    session: Weak<Session>,
}

impl Subagents for Handle {
    fn run(&self, ctx: Context, request: TaskRequest) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let session = self.session.clone();
        Box::pin(async move {
            let parent = session.upgrade().ok_or_else(|| ToolError::execution("the session has closed"))?;
            parent.run_task(ctx, request).await
        })
    }

    fn agent_of(&self, task_id: &str) -> Option<String> {
        self.session.upgrade()?.children.get(task_id).map(|job| job.agent.clone())
    }

    fn catalogue(&self) -> String {
        self.session.upgrade().map(|s| agents::catalogue(&s.agents())).unwrap_or_default()
    }

    fn take_notes(&self) -> Vec<String> {
        self.session.upgrade().map(|s| std::mem::take(&mut *lock(&s.children.notes))).unwrap_or_default()
    }
}

/// The last thing the child said: its answer.
fn last_answer(history: &crate::agent::history::History) -> String {
    history
        .messages()
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { text, .. } if !text.trim().is_empty() => Some(text.trim().to_string()),
            _ => None,
        })
        .unwrap_or_default()
}

impl Session {
    /// This session's subagent `id`, or a subagent of one of them.
    pub fn descendant(&self, id: &str) -> Option<Arc<Session>> {
        let children: Vec<Arc<Session>> =
            lock(&self.children.jobs).values().map(|j| j.child.clone()).collect();
        children
            .iter()
            .find(|c| c.id == id)
            .cloned()
            .or_else(|| children.iter().find_map(|c| c.descendant(id)))
    }

    /// Let this session's `task` calls start subagents (once it is shared).
    pub(super) fn enable_subagents(self: &Arc<Self>) {
        let _ = self.subagents.set(Arc::new(Handle { session: Arc::downgrade(self) }));
    }

    /// Every agent this session may start now: its agent files and its configuration's tables.
    fn agents(&self) -> Vec<AgentDef> {
        agents::all(&self.agent_files, &self.config().agents)
    }

    fn agent_named(&self, name: Option<&str>) -> Result<AgentDef, ToolError> {
        let name = name.unwrap_or("general");
        let agents = self.agents();
        agents.iter().find(|a| a.name == name).cloned().ok_or_else(|| {
            let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
            ToolError::retry(format!("Unknown subagent_type `{name}`. Available: {}.", names.join(", ")))
        })
    }

    async fn run_task(self: &Arc<Self>, ctx: Context, request: TaskRequest) -> Result<ToolOutput, ToolError> {
        let job = match &request.task_id {
            Some(id) => {
                let known = match self.children.get(id) {
                    Some(job) => Some(job),
                    None => self.reopen_child(id).await?,
                };
                let job = known.ok_or_else(|| {
                    ToolError::retry(format!(
                        "No task `{id}` in this session. Start a new one without `task_id`."
                    ))
                })?;
                if let Some(status) = job.check(&request.prompt) {
                    return Ok(status);
                }
                job
            }
            None => {
                self.spawn_child(&self.agent_named(request.subagent_type.as_deref())?, &request.description)
            }
        };
        job.relay.retarget(self.sink(), &ctx.call_id, &request.prompt);
        *lock(&job.state) = State::Running { background: request.background };
        job.running.send_replace(true);
        // A foreground child stops with its parent's turn; a background one only when the parent closes.
        let stop = (!request.background).then(|| ctx.cancel.child_token());
        let done = self.start(job.clone(), request.prompt.clone(), stop);
        if request.background {
            return Ok(job.status_output());
        }
        let finished = tokio::select! {
            biased;
            finished = done => finished,
            // The child's own task cancels it and the parent's turn waits for it (`Children::settle`).
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        match finished {
            // Stopped with the parent's turn, or on its own (an editor showing it as a session cancelled it):
            // then the parent's model is told and its turn goes on.
            Ok(("cancelled", _)) if ctx.cancel.is_cancelled() => Err(ToolError::Cancelled),
            Ok((status, result)) => Ok(job.output(status, &result)),
            Err(_) => Err(ToolError::execution("the subagent stopped unexpectedly")),
        }
    }

    /// Run the child's turn on its own task (so the parent's turn ending never tears it down halfway), and
    /// record how it ended.
    fn start(
        self: &Arc<Self>,
        job: Arc<Job>,
        prompt: String,
        stop: Option<CancellationToken>,
    ) -> tokio::sync::oneshot::Receiver<(&'static str, String)> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let parent = Arc::downgrade(self);
        let background = stop.is_none();
        tokio::spawn(async move {
            let blocks = json!([{"type": "text", "text": prompt}]);
            // The prompt opens the child's own session for a client that shows it (others ignore it).
            job.relay
                .emit(AgentEvent::UserMessage { message_id: super::new_id("user"), blocks: blocks.clone() });
            let run = job.child.prompt(vec![UserPart::Text(prompt)], blocks);
            tokio::pin!(run);
            let stop = stop.unwrap_or_default();
            // `run` is polled first, so its turn is registered before a cancel can miss it.
            let outcome: Result<StopReason, TurnError> = tokio::select! {
                biased;
                outcome = &mut run => outcome,
                () = stop.cancelled(), if !background => {
                    job.child.cancel();
                    run.await
                }
            };
            let (status, result) = match outcome {
                Ok(StopReason::Cancelled) => ("cancelled", last_answer(&job.child.history().await)),
                Ok(_) => ("completed", last_answer(&job.child.history().await)),
                Err(error) => ("failed", error.user_message()),
            };
            *lock(&job.state) = State::Done { status, result: result.clone() };
            if background && let Some(parent) = parent.upgrade() {
                lock(&parent.children.notes).push(format!(
                    "<task-notification task_id=\"{}\" status=\"{status}\">\nThe background task \"{}\" ({}) finished. Its result:\n{result}\n</task-notification>",
                    job.child.id, job.description, job.agent
                ));
            }
            let end = match status {
                "completed" => SubagentState::Completed,
                "cancelled" => SubagentState::Cancelled,
                _ => SubagentState::Failed(result.clone()),
            };
            job.relay.finish(
                &match status {
                    "completed" => "✓ finished".to_string(),
                    other => format!("✗ {other}"),
                },
                end,
            );
            job.running.send_replace(false);
            let _ = tx.send((status, result));
        });
        rx
    }

    /// The settings of a child running `agent`: its parent's, narrowed.
    fn child_settings(&self, agent: &AgentDef) -> Settings {
        let mut parent = self.settings();
        // A child of a scheduled job's turn gets no more than that turn's rights.
        if self.perms.is_capped() && matches!(parent.mode, Mode::AcceptEdits | Mode::Yolo) {
            parent.mode = Mode::Build;
        }
        Settings {
            mode: agents::child_mode(parent.mode, agent),
            model: agent.model.clone().unwrap_or_else(|| parent.model.clone()),
            thought_level: parent.thought_level.clone(),
        }
    }

    /// A stored subagent of this session (from an earlier process), live again with its conversation.
    async fn reopen_child(self: &Arc<Self>, id: &str) -> Result<Option<Arc<Job>>, ToolError> {
        let Some(store) = &self.store else { return Ok(None) };
        let failed =
            |e: crate::store::StoreError| ToolError::execution(format!("the task could not be read: {e}"));
        let Some(row) =
            store.children(&self.id).await.map_err(failed)?.into_iter().find(|c| c.session.id == id)
        else {
            return Ok(None);
        };
        let agent = self.agent_named(Some(&row.agent))?;
        let stored = store.messages(id).await.map_err(failed)?;
        let (history, shown) = tokio::task::spawn_blocking(move || crate::agent::journal::rebuild(&stored))
            .await
            .map_err(|e| ToolError::execution(format!("the task could not be read: {e}")))?;
        let title = row.session.title.unwrap_or_default();
        let suffix = format!(" (@{} subagent)", agent.name);
        let description = title.strip_suffix(&suffix).unwrap_or(&title).to_string();
        let answer = last_answer(&history);
        let job = self.adopt(
            &agent,
            id,
            &description,
            Conversation::restored(history, shown),
            row.session.created_at,
        );
        *lock(&job.state) = State::Done { status: "completed", result: answer };
        Ok(Some(job))
    }

    /// A new subagent session under this one, running `agent`.
    fn spawn_child(self: &Arc<Self>, agent: &AgentDef, description: &str) -> Arc<Job> {
        let id = format!("sess_{}", uuid::Uuid::new_v4().simple());
        let settings = self.child_settings(agent);
        let title = format!("{description} (@{} subagent)", agent.name);
        let now = crate::clock::now_millis();
        let depth = self.depth + 1;
        if let Some(store) = &self.store {
            store.create_child_later(ChildRow {
                session: SessionRow {
                    id: id.clone(),
                    cwd: self.cwd.display().to_string(),
                    title: Some(title.clone()),
                    mode: settings.mode.id().into(),
                    model: Some(settings.model.clone()),
                    thought_level: settings.thought_level.clone(),
                    created_at: now,
                    updated_at: now,
                },
                parent_id: self.id.clone(),
                depth,
                agent: agent.name.clone(),
            });
        }
        self.adopt(agent, &id, description, Conversation::default(), now)
    }

    /// A live child session `id` running `agent`, with `conversation`, registered as this session's.
    fn adopt(
        self: &Arc<Self>,
        agent: &AgentDef,
        id: &str,
        description: &str,
        conversation: Conversation,
        created_at: i64,
    ) -> Arc<Job> {
        let id = id.to_string();
        let depth = self.depth + 1;
        let config = self.config();
        let settings = self.child_settings(agent);
        let title = format!("{description} (@{} subagent)", agent.name);
        // What a child of the top-level session lifts (its own calls and its subagents') is kept in that
        // session's journal, so loading it shows those calls again.
        let journal = match &self.store {
            Some(store) if self.depth == 0 => {
                Some(crate::agent::journal::Journal::new(store.clone(), &self.id))
            }
            _ => None,
        };
        let relay = Relay::new(&id, &agent.name, &title, depth, self.perms.approver(), journal);
        let perms = permission::Service::new(
            settings.mode.id(),
            self.perms.remembered().clone(),
            self.perms.config_rules(),
            Some(relay.clone()),
        );
        let environment = Arc::new(Environment::new(&config.env_policy));
        let closed = self.closed.child_token();
        let child = Arc::new(Session {
            id: id.clone(),
            cwd: self.cwd.clone(),
            config: Mutex::new(config.clone()),
            created_at,
            model: Mutex::new(lock(&self.model).clone()),
            registry: Arc::new(self.registry.subset(|tool| agents::child_may_use(agent, depth, tool))),
            perms: Arc::new(perms),
            files: Arc::new(self.files.for_child()),
            tasks: Arc::new(
                Tasks::new(config.data_dir.join("tasks").join(&id)).with_environment(environment.clone()),
            ),
            terminals: self.terminals.clone(),
            // Its own language servers (started only if it edits), stopped when the child closes.
            lsp: Arc::new(crate::lsp::Service::new(config.lsp.clone(), self.launcher.clone(), &self.cwd)),
            launcher: self.launcher.clone(),
            sink: Mutex::new(relay.clone()),
            settings_sink: Mutex::new(Arc::new(Unannounced)),
            control: Arc::new(Control::default()),
            bus: self.bus.clone(),
            store: self.store.clone(),
            settings: Mutex::new(settings),
            title: Mutex::new(Some(title)),
            models: Mutex::new(self.models()),
            models_swapped: Arc::new(tokio::sync::Notify::new()),
            catalogue: self.catalogue.clone(),
            conversation: tokio::sync::Mutex::new(conversation),
            queue: super::queue::Queue::new(closed.clone()),
            // Its file changes belong to the parent's turn (and its checkpoint).
            changes: self.changes.clone(),
            headless: std::sync::atomic::AtomicBool::new(false),
            closed,
            sources: self.sources.clone(),
            trust: self.trust.clone(),
            untrusted: Mutex::new(None),
            trust_asker: Mutex::new(None),
            depth,
            ancestors: std::iter::once(self.id.clone()).chain(self.ancestors.iter().cloned()).collect(),
            instructions: Some(agents::instructions(agent)),
            agent_files: self.agent_files.clone(),
            children: Arc::default(),
            subagents: std::sync::OnceLock::new(),
            // The child uses its parent's MCP tools (those its agent may) and has no servers or commands of its
            // own; it never announces anything to the editor (its events go through the relay).
            mcp: crate::mcp::Servers::new(self.cwd.clone(), Arc::new(|_| {})),
            declared: Mutex::new(Vec::new()),
            catalog: self.catalog.clone(),
            advertised: Mutex::new(None),
            announced: std::sync::atomic::AtomicBool::new(false),
            pending_notices: Mutex::new(Vec::new()),
            reported: Mutex::new(std::collections::HashSet::new()),
            told: Default::default(),
        });
        child.enable_subagents();
        let job = Arc::new(Job {
            child,
            relay,
            agent: agent.name.clone(),
            description: description.to_string(),
            state: Mutex::new(State::Running { background: false }),
            running: tokio::sync::watch::Sender::new(false),
        });
        lock(&self.children.jobs).insert(id, job.clone());
        job
    }

    /// Wait for the foreground subagents of the turn that is ending (they were cancelled with it).
    pub(super) async fn settle_children(&self) {
        self.children.settle().await;
    }
}

/// A subagent's settings are not the editor's to show.
struct Unannounced;

impl super::SettingsSink for Unannounced {
    fn settings_changed(
        &self,
        _mode: Option<super::settings::Mode>,
        _options: &[super::settings::ConfigOption],
    ) {
    }
}
