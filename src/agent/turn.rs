//! One prompt turn: call the model, run the tool calls it asks for, feed the results back, and repeat until
//! the model answers without tool calls, the request cap is reached, the output limit stops it, or the user
//! cancels. Each completed event is journaled as it happens; token usage is reported after every response;
//! the history is compacted when it nears the context window (and once more if the provider says it overflowed).
//!
//! Owns the loop and the history invariant during a turn. Must not know about ACP; everything the user sees
//! leaves through [`EventSink`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::compaction;
use super::event::{AgentEvent, CompactionStatus, EventSink, ToolStatus};
use super::history::History;
use super::journal::Journal;
use super::steer::Steering;
use super::system_prompt;
use crate::bus::{Bus, Event};
use crate::config::Config;
use crate::control::{Control, Worktree};
use crate::display::{Location, Presentation};
use crate::llm::{
    Delta, FinishReason, LlmError, Message, ModelClient, Request, Response, ToolCall, ToolSpec, UserPart,
};
use crate::permission::{self, Category};
use crate::shell::classify::{Class, Host, classify};
use crate::shell::tasks::Tasks;
use crate::shell::terminal::ClientTerminals;
use crate::tool::subagent::Subagents;
use crate::tool::{self, Context, Progress, Registry};
use crate::workspace::changes::Recorder;
use crate::workspace::diagnostics::Checker;
use crate::workspace::files::Files;

/// Why a turn ended normally. Mirrors ACP's stop reasons without depending on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

/// Why a turn could not finish. Handled by the ACP layer, which answers the prompt with an error carrying
/// [`TurnError::user_message`]; the session stays usable for the next prompt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Llm(#[from] LlmError),
}

impl TurnError {
    pub fn user_message(&self) -> String {
        match self {
            TurnError::Llm(e) => e.user_message(),
        }
    }

    /// The user must sign in (no key, or the key was refused): the editor should show its sign-in flow.
    pub fn needs_sign_in(&self) -> bool {
        match self {
            TurnError::Llm(e) => e.needs_sign_in(),
        }
    }
}

/// What a model that cannot see gets in place of an image.
pub const IMAGE_LEFT_OUT: &str = "[an image was left out here: this model cannot see images]";

/// What the user is told when an image is left out.
pub fn blind_note(model: &str) -> String {
    format!(
        "The model `{model}` does not take images, so the image was left out. To send images, pick a model that \
         can see them."
    )
}

/// A session's conversation plus the tool call ids already shown to the user (they must be unique per session).
#[derive(Debug, Default)]
pub struct Conversation {
    pub history: History,
    shown_ids: HashSet<String>,
}

impl Conversation {
    /// A conversation restored from storage.
    pub fn restored(history: History, shown_ids: HashSet<String>) -> Self {
        Self { history, shown_ids }
    }

    /// An id for the user-facing tool call: the provider's id unless the session already used it.
    fn ui_call_id(&mut self, provider_id: &str) -> String {
        let mut id = provider_id.to_string();
        let mut n = 1;
        while self.shown_ids.contains(&id) {
            n += 1;
            id = format!("{provider_id}-{n}");
        }
        self.shown_ids.insert(id.clone());
        id
    }
}

/// Everything one turn needs.
pub struct Turn<'a> {
    pub session_id: &'a str,
    pub files: Arc<Files>,
    pub tasks: Arc<Tasks>,
    pub terminals: Option<Arc<dyn ClientTerminals>>,
    /// Where the tools work: the session's directory, or its worktree (changes after a tool round that moved).
    pub cwd: RwLock<PathBuf>,
    pub config: &'a Config,
    pub model: &'a dyn ModelClient,
    pub model_name: String,
    pub reasoning_effort: Option<String>,
    pub context_window: u64,
    /// The model takes images (otherwise they are left out, and the user is told).
    pub images: bool,
    /// The session is in plan mode: the system prompt says so.
    pub plan_mode: bool,
    pub registry: &'a Registry,
    pub sink: Arc<dyn EventSink>,
    pub perms: Option<Arc<permission::Service>>,
    pub bus: &'a Bus,
    pub journal: Option<Journal>,
    pub cancel: CancellationToken,
    /// The session's to-do list, pending mode switch and question seam, shared with the tools.
    pub control: Arc<Control>,
    /// Applies a switch of agent that `plan_enter` / `plan_exit` requested.
    pub switcher: Option<&'a dyn AgentSwitcher>,
    /// Steering messages the user sent while the turn runs.
    pub steering: Option<&'a dyn Steering>,
    /// Records what the turn changes (writes go through `files`; shell commands are bracketed here).
    pub changes: Option<Arc<Recorder>>,
    /// Checks files after the file tools write them (language servers), when the user turned that on.
    pub diagnostics: Option<Arc<dyn Checker>>,
    /// Registered tools not offered in this session (a feature the user has not turned on).
    pub hidden_tools: Vec<&'static str>,
    /// How deep this session is nested below the user's (0 for the user's own session).
    pub depth: u32,
    /// Runs the `task` calls of this session.
    pub subagents: Option<Arc<dyn Subagents>>,
    /// A subagent's own instructions, added to the system prompt.
    pub instructions: Option<String>,
    /// The journals of the sessions above a subagent: its token usage counts towards theirs too.
    pub usage_also: Vec<Journal>,
    /// The session's MCP servers: waited for (up to their start-up timeout) and synced into `registry` before
    /// every model request.
    pub mcp: Option<Arc<crate::mcp::Servers>>,
    /// Instruction files and skills for the system prompt.
    pub extras: Arc<system_prompt::Extras>,
}

/// The session side of what tools ask to change about the session: the agent (mode) — change the rules, save
/// the choice, tell the editor — and the worktree the tools work in.
pub trait AgentSwitcher: Send + Sync {
    fn switch_agent(&self, agent: &str);
    /// Move the session's tools into `worktree` (`None`: back to the session's directory); returns where
    /// they work now.
    fn switch_worktree(&self, worktree: Option<&Worktree>) -> PathBuf;
}

/// The tool whose description lists the agents it may start.
const TASK_TOOL: &str = "task";

fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// Make provider ids unique within one response (some local servers repeat `call_0`).
fn dedupe_ids(calls: &mut [ToolCall]) {
    let mut seen = HashSet::new();
    for call in calls.iter_mut() {
        let base = call.id.clone();
        let mut n = 1;
        while !seen.insert(call.id.clone()) {
            n += 1;
            call.id = format!("{base}_{n}");
        }
    }
}

/// What one model request produced.
enum Step {
    Response(Response),
    Cancelled,
    /// The provider says the context overflowed (nothing was shown yet).
    Overflow(LlmError),
}

impl Turn<'_> {
    /// The tools offered for this session's edit mode, with the descriptions the user's files override.
    fn tool_specs(&self) -> Vec<ToolSpec> {
        let descriptions = &self.config.tool_descriptions;
        self.registry
            .offered(self.config.edit_mode_for(&self.model_name))
            .iter()
            .filter(|d| !self.hidden_tools.contains(&d.id.as_str()))
            .map(|d| {
                let mut description = descriptions.get(&d.id).unwrap_or(&d.description).clone();
                // The agents `task` may start depend on the session (its configuration, its project).
                if d.id == TASK_TOOL
                    && let Some(subagents) = &self.subagents
                {
                    description.push_str(&subagents.catalogue());
                }
                ToolSpec { name: d.id.clone(), description, parameters: d.parameters.clone() }
            })
            .collect()
    }

    /// The system prompt for the mode, with a subagent's own instructions at the end.
    fn system_prompt(&self, plan_mode: bool) -> String {
        let mut system = system_prompt::build(&self.cwd(), SystemTime::now(), plan_mode, &self.extras);
        if let Some(instructions) = &self.instructions {
            system.push_str("\n\n");
            system.push_str(instructions);
        }
        system
    }

    fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// Where the tools work now.
    pub fn cwd(&self) -> PathBuf {
        match self.cwd.read() {
            Ok(cwd) => cwd.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Run the turn for `input` (the prompt as the editor sent it is `blocks`) on `conversation`.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        input: Vec<UserPart>,
        blocks: Value,
    ) -> Result<StopReason, TurnError> {
        let input = self.without_images(input);
        if let Some(journal) = self.journal() {
            journal.user(&new_id("user"), &blocks, &input);
        }
        conversation.history.push_user(input);
        let mut plan = self.plan_mode;
        let mut system = self.system_prompt(plan);
        let mut requests = 0;
        let mut compacted_on_overflow = false;
        loop {
            if self.cancel.is_cancelled() {
                return Ok(StopReason::Cancelled);
            }
            if requests == self.config.max_turn_requests {
                return Ok(StopReason::MaxTurnRequests);
            }
            requests += 1;
            self.deliver_steers(&mut conversation.history);
            self.deliver_notes(&mut conversation.history);
            // Servers still starting are waited for; tools that changed since the last request join or leave now.
            if let Some(mcp) = &self.mcp {
                mcp.settled(&self.cancel).await;
                mcp.sync(self.registry).await;
                if self.cancel.is_cancelled() {
                    return Ok(StopReason::Cancelled);
                }
            }
            let tools = self.tool_specs();
            let mut request = self.request(&system, &tools, &conversation.history);
            if compaction::needed(
                compaction::request_tokens(&request),
                self.context_window,
                self.config.max_output_tokens,
            ) {
                self.compact(conversation, self.keep_budget(&system, &tools)).await;
                request = self.request(&system, &tools, &conversation.history);
            }
            if let Some(journal) = self.journal() {
                journal.settle().await;
            }
            let mut response = match self.call_model(&request, &mut conversation.history).await? {
                Step::Response(response) => response,
                Step::Cancelled => return Ok(StopReason::Cancelled),
                Step::Overflow(error) if !compacted_on_overflow => {
                    compacted_on_overflow = true;
                    requests -= 1;
                    if self.compact(conversation, self.keep_budget(&system, &tools)).await
                        == Some(CompactionStatus::Completed)
                    {
                        continue;
                    }
                    return Err(error.into());
                }
                Step::Overflow(error) => return Err(error.into()),
            };
            dedupe_ids(&mut response.tool_calls);
            if let Some(stop) = self.record_response(&response, &mut conversation.history) {
                return Ok(stop);
            }
            // Only the last call can have been cut off by the output limit; the ones before it are complete.
            let cut_off = response.finish == FinishReason::Length;
            let last = response.tool_calls.len().saturating_sub(1);
            let mut end_with = None;
            let offered: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            for (i, call) in response.tool_calls.iter().enumerate() {
                let (content, end_turn) =
                    self.run_call(conversation, call, cut_off && i == last, &offered).await;
                conversation.history.push(Message::Tool { call_id: call.id.clone(), content });
                end_with = end_with.or(end_turn);
            }
            let switched = self.control.take_switch();
            let moved = self.control.take_worktree_change();
            if let Some(agent) = &switched {
                plan = agent == "plan";
                if let Some(switcher) = self.switcher {
                    switcher.switch_agent(agent);
                }
            }
            if let Some(worktree) = moved.as_ref() {
                self.switch_worktree(worktree.as_ref());
            }
            if switched.is_some() || moved.is_some() {
                system = self.system_prompt(plan);
            }
            if self.cancel.is_cancelled() {
                return Ok(StopReason::Cancelled);
            }
            if let Some(message) = end_with {
                self.say(&message, &mut conversation.history);
                return Ok(StopReason::EndTurn);
            }
        }
    }

    /// Apply a move into or out of a worktree: the rest of the turn works there (and its prompt says so).
    fn switch_worktree(&self, worktree: Option<&Worktree>) {
        let Some(switcher) = self.switcher else { return };
        let root = switcher.switch_worktree(worktree);
        match self.cwd.write() {
            Ok(mut cwd) => *cwd = root,
            Err(poisoned) => *poisoned.into_inner() = root,
        }
    }

    /// Steering messages the user sent since the last request join the history (and the journal) now.
    fn deliver_steers(&self, history: &mut History) {
        let Some(steering) = self.steering else { return };
        for steer in steering.take() {
            if let Some(journal) = self.journal() {
                journal.user(&new_id("user"), &steer.blocks, &steer.parts);
            }
            history.push_user(steer.parts);
        }
    }

    /// A message from the agent itself (a question the editor could not ask): shown, saved and remembered.
    fn say(&self, text: &str, history: &mut History) {
        let message_id = new_id("msg");
        self.sink.emit(AgentEvent::MessageChunk { message_id: message_id.clone(), text: text.to_string() });
        if let Some(journal) = self.journal() {
            journal.assistant(&message_id, &new_id("thought"), text, &None, &[]);
        }
        history.push(Message::Assistant { text: text.to_string(), reasoning: None, tool_calls: Vec::new() });
    }

    /// A prompt's images, for a model that cannot see: left out, and the user told so (never silently dropped).
    fn without_images(&self, input: Vec<UserPart>) -> Vec<UserPart> {
        if self.images || !input.iter().any(|p| matches!(p, UserPart::Image { .. })) {
            return input;
        }
        self.sink.emit(AgentEvent::MessageChunk {
            message_id: new_id("msg"),
            text: format!("{}\n\n", blind_note(&self.model_name)),
        });
        input
            .into_iter()
            .map(|part| match part {
                UserPart::Image { .. } => UserPart::Text(IMAGE_LEFT_OUT.into()),
                text => text,
            })
            .collect()
    }

    fn request(&self, system: &str, tools: &[ToolSpec], history: &History) -> Request {
        let mut messages = history.messages().to_vec();
        if !self.images {
            // Images a tool returned (data URIs) cannot reach a model that cannot see.
            for message in &mut messages {
                if let Message::Tool { content, .. } = message
                    && crate::llm::tool_content::has_images(content)
                {
                    *content = crate::llm::tool_content::replace_images(content, IMAGE_LEFT_OUT);
                }
            }
        }
        Request {
            model: self.model_name.clone(),
            system: system.to_string(),
            messages,
            tools: tools.to_vec(),
            max_output_tokens: self.config.max_output_tokens,
            reasoning_effort: self.reasoning_effort.clone(),
        }
    }

    /// Tokens the newest messages may keep through a compaction: a share of the window, less what the system
    /// prompt and the tools take in every request.
    fn keep_budget(&self, system: &str, tools: &[ToolSpec]) -> u64 {
        let fixed = compaction::request_tokens(&self.request(system, tools, &History::default()));
        ((self.context_window as f64 * compaction::KEEP) as u64).saturating_sub(fixed)
    }

    /// Background tasks that finished since the last request are told to the model.
    fn deliver_notes(&self, history: &mut History) {
        let notes = self.tasks.take_notes();
        let finished = self.subagents.as_ref().map(|s| s.take_notes()).unwrap_or_default();
        let mut blocks = Vec::new();
        if !notes.is_empty() {
            blocks.push(format!("<background-tasks>\n{}\n</background-tasks>", notes.join("\n\n")));
        }
        blocks.extend(finished);
        if blocks.is_empty() {
            return;
        }
        let text = blocks.join("\n\n");
        if let Some(journal) = self.journal() {
            journal.note(&text);
        }
        history.push_user(vec![UserPart::Text(text)]);
    }

    /// Summarise older history, keeping the newest messages within `keep_tokens`. Returns how it ended, or
    /// `None` when there was nothing to summarise.
    pub async fn compact(
        &self,
        conversation: &mut Conversation,
        keep_tokens: u64,
    ) -> Option<CompactionStatus> {
        let keep = compaction::keep_count(&conversation.history, keep_tokens)?;
        let compaction_id = new_id("compaction");
        self.sink.emit(AgentEvent::Compaction {
            compaction_id: compaction_id.clone(),
            status: CompactionStatus::Started,
            summary: None,
        });
        let messages = conversation.history.messages();
        let older = &messages[..messages.len() - keep];
        match compaction::summarise(self.model, &self.model_name, older, &self.cancel).await {
            Ok(summary) if !summary.is_empty() => {
                conversation.history.compact(&summary, keep);
                if let Some(journal) = self.journal() {
                    journal.summary(&summary, keep);
                }
                self.sink.emit(AgentEvent::Compaction {
                    compaction_id,
                    status: CompactionStatus::Completed,
                    summary: Some(summary),
                });
                Some(CompactionStatus::Completed)
            }
            other => {
                if let Err(e) = other {
                    tracing::warn!(error = %e, "compaction failed");
                }
                self.sink.emit(AgentEvent::Compaction {
                    compaction_id,
                    status: CompactionStatus::Failed,
                    summary: None,
                });
                Some(CompactionStatus::Failed)
            }
        }
    }

    /// Stream one model response. Whatever text already reached the user is kept (and saved) even when the
    /// request ends early.
    async fn call_model(&self, request: &Request, history: &mut History) -> Result<Step, TurnError> {
        let message_id = new_id("msg");
        let thought_id = new_id("thought");
        let notice_id = new_id("thought");
        let shown = Mutex::new(String::new());
        let sink = self.sink.clone();
        let on_delta = |delta: Delta| match delta {
            // Retries are told as a thought of their own, so a long wait is never silent.
            Delta::Notice(text) => sink
                .emit(AgentEvent::ThoughtChunk { message_id: notice_id.clone(), text: format!("{text}\n") }),
            Delta::Text(text) => {
                if let Ok(mut shown) = shown.lock() {
                    shown.push_str(&text);
                }
                sink.emit(AgentEvent::MessageChunk { message_id: message_id.clone(), text });
            }
            Delta::Reasoning(text) => {
                sink.emit(AgentEvent::ThoughtChunk { message_id: thought_id.clone(), text })
            }
        };
        let result = self.model.stream(request, &on_delta, &self.cancel).await;
        self.sink.flush();
        let partial = shown.into_inner().unwrap_or_default();
        let keep_partial = |history: &mut History| {
            if !partial.is_empty() {
                if let Some(journal) = self.journal() {
                    journal.assistant(&message_id, &thought_id, &partial, &None, &[]);
                }
                history.push(Message::Assistant {
                    text: partial.clone(),
                    reasoning: None,
                    tool_calls: Vec::new(),
                });
            }
        };
        match result {
            Ok(mut response) => {
                if response.text.is_empty()
                    && let Some(refusal) = &response.refusal
                {
                    self.sink.emit(AgentEvent::MessageChunk {
                        message_id: message_id.clone(),
                        text: refusal.clone(),
                    });
                    response.text = refusal.clone();
                }
                dedupe_ids(&mut response.tool_calls);
                if let Some(journal) = self.journal() {
                    journal.assistant(
                        &message_id,
                        &thought_id,
                        &response.text,
                        &response.reasoning,
                        &response.tool_calls,
                    );
                }
                self.report_usage(request, &response);
                Ok(Step::Response(response))
            }
            Err(LlmError::Cancelled) => {
                keep_partial(history);
                Ok(Step::Cancelled)
            }
            Err(error @ LlmError::ContextOverflow { .. }) if partial.is_empty() => Ok(Step::Overflow(error)),
            Err(error) => {
                keep_partial(history);
                Err(error.into())
            }
        }
    }

    /// Tell the editor how full the context is: the provider's count when it sent one, else an estimate.
    fn report_usage(&self, request: &Request, response: &Response) {
        let used = match response.usage {
            Some(usage) => {
                if let Some(journal) = self.journal() {
                    journal.usage(&self.model_name, &usage);
                }
                for ancestor in &self.usage_also {
                    ancestor.usage_via(&self.model_name, &usage, Some(self.session_id));
                }
                self.sink.emit(AgentEvent::TokensSpent { tokens: usage.input_tokens + usage.output_tokens });
                usage.input_tokens + usage.output_tokens
            }
            None => compaction::request_tokens(request) + compaction::estimate_tokens(response.text.len()),
        };
        self.sink.emit(AgentEvent::Usage { used, size: self.context_window });
    }

    /// Add the response to the history; returns the stop reason when the turn ends here.
    fn record_response(&self, response: &Response, history: &mut History) -> Option<StopReason> {
        history.push(Message::Assistant {
            text: response.text.clone(),
            reasoning: response.reasoning.clone(),
            tool_calls: response.tool_calls.clone(),
        });
        if response.finish == FinishReason::ContentFilter
            || (response.refusal.is_some() && response.tool_calls.is_empty())
        {
            return Some(StopReason::Refusal);
        }
        if response.tool_calls.is_empty() {
            return Some(if response.finish == FinishReason::Length {
                StopReason::MaxTokens
            } else {
                StopReason::EndTurn
            });
        }
        None
    }

    fn context(&self, ui_id: &str, call_id: &str, tool: &str, args: &Value) -> Context {
        let sink = self.sink.clone();
        let journal = self.journal.clone();
        let (ui, provider_id, tool, raw_input) =
            (ui_id.to_string(), call_id.to_string(), tool.to_string(), args.clone());
        Context {
            session_id: self.session_id.to_string(),
            call_id: ui_id.to_string(),
            directory: self.cwd(),
            perms: self.perms.clone(),
            bus: self.bus.clone(),
            subagent_depth: self.depth,
            after_hook: None,
            before_run: None,
            cancel: self.cancel.clone(),
            output_dir: self.config.data_dir.join("tool-output"),
            files: self.files.clone(),
            plan: None,
            tasks: self.tasks.clone(),
            terminals: self.terminals.clone(),
            control: self.control.clone(),
            diagnostics: self.diagnostics.clone(),
            subagents: self.subagents.clone(),
            edit_mode: self.config.edit_mode_for(&self.model_name),
            progress: Some(Arc::new(move |progress| {
                sink.emit(match progress {
                    Progress::Presented(presentation) => {
                        if let Some(journal) = &journal {
                            journal.tool_started(&provider_id, &ui, &tool, &presentation, &raw_input);
                        }
                        AgentEvent::ToolCallStarted {
                            call_id: ui.clone(),
                            tool: tool.clone(),
                            presentation,
                            raw_input: raw_input.clone(),
                        }
                    }
                    Progress::Revised(presentation) => {
                        if let Some(journal) = &journal {
                            journal.tool_revised(&ui, &presentation);
                        }
                        AgentEvent::ToolCallRevised { call_id: ui.clone(), presentation }
                    }
                    Progress::Running => AgentEvent::ToolCallRunning { call_id: ui.clone() },
                    Progress::Output(text) => AgentEvent::ToolCallOutput { call_id: ui.clone(), text },
                    Progress::Content(content) => {
                        AgentEvent::ToolCallContent { call_id: ui.clone(), content }
                    }
                })
            })),
        }
    }

    /// Run one tool call through the input repair pipeline and the registry; return the result text for the
    /// model (with the repair note in front) and a message to end the turn with. The user's display shows the
    /// tool's own output. `offered` are the tools the request offered (an unknown tool's error lists them).
    async fn run_call(
        &self,
        conversation: &mut Conversation,
        call: &ToolCall,
        cut_off: bool,
        offered: &[String],
    ) -> (String, Option<String>) {
        if self.cancel.is_cancelled() {
            return (tool::Outcome::cancelled().output, None);
        }
        let prepared = tool::repair::prepare(self.registry, &call.name, &call.arguments, cut_off);
        let ui_id = conversation.ui_call_id(&call.id);
        let mut modified = self.bus.subscribe();
        let mut context = self.context(&ui_id, &call.id, &prepared.tool, &prepared.args);
        let shell = self.shell_changes(&prepared.tool, &prepared.args);
        if let (Some(changes), Some(label)) = (&self.changes, &shell) {
            // Git's view of the dirty files is taken only once the call was allowed (never for a rejected call
            // or in plan mode), right before the command starts.
            let (changes, directory, label) = (changes.clone(), context.directory.clone(), label.clone());
            context.before_run = Some(Arc::new(move || {
                let (changes, directory, label) = (changes.clone(), directory.clone(), label.clone());
                Box::pin(async move { changes.before_command(&directory, &label).await })
            }));
        }
        let mut outcome =
            self.registry.execute_offered(&prepared.tool, context, prepared.args, offered).await;
        if let (Some(changes), Some(_)) = (&self.changes, &shell) {
            changes.after_command().await;
        }
        // Files the call modified (bus `file.modified`) are locations the editor can follow.
        while let Ok(event) = modified.try_recv() {
            if let Event::FileModified { call_id, path, .. } = event
                && call_id == ui_id
                && !outcome.locations.iter().any(|l| l.path == path)
            {
                outcome.locations.push(Location::new(path));
            }
        }
        if outcome.cancelled {
            // A cancelled ask (or one the client failed to answer) ends the whole turn, not just this call.
            self.cancel.cancel();
        }
        let for_model = tool::repair::with_note(&prepared.fixes, outcome.output.clone());
        let raw_output =
            if outcome.metadata.is_null() { json!({"output": outcome.output}) } else { outcome.metadata };
        let finished = AgentEvent::ToolCallFinished {
            call_id: ui_id.clone(),
            status: if outcome.is_error { ToolStatus::Failed } else { ToolStatus::Completed },
            output: outcome.output,
            display: outcome.display,
            locations: outcome.locations,
            raw_output,
        };
        if let Some(journal) = self.journal() {
            journal.tool_finished(&call.id, &ui_id, &for_model, outcome.is_error, &finished);
        }
        self.sink.emit(finished);
        (for_model, outcome.end_turn)
    }
}

impl Turn<'_> {
    /// For a shell-category call whose changes are recorded: how the checkpoint names it. Read-only commands
    /// change nothing and are left out (`git status` costs time in a big repository).
    fn shell_changes(&self, tool: &str, args: &Value) -> Option<String> {
        let changes = self.changes.as_ref()?;
        let def = self.registry.resolve(tool)?;
        if def.permission != Some(Category::Shell) {
            return None;
        }
        let command = args.get("command").and_then(Value::as_str);
        if command.is_some_and(|c| classify(c, &Host::new(&self.cwd())) == Class::ReadOnly) {
            return None;
        }
        let command = command.unwrap_or(&def.id);
        let mut label: String = command.lines().next().unwrap_or_default().chars().take(80).collect();
        if label.len() < command.len() {
            label.push('…');
        }
        if def.id == "monitor" || args.get("background").and_then(Value::as_bool) == Some(true) {
            changes.note(format!("what `{label}` changes in the background after its call returned"));
        }
        Some(label)
    }
}

/// The presentation a call had before it was run (for callers that need it without running).
pub fn presentation_of(registry: &Registry, tool: &str, args: &Value, cwd: &Path) -> Presentation {
    registry.resolve(tool).map(|d| (d.present)(args, cwd)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_provider_ids_get_unique_suffixes_within_a_response_and_a_session() {
        let call = |id: &str| ToolCall { id: id.into(), name: "read".into(), arguments: "{}".into() };
        let mut calls = vec![call("call_0"), call("call_0"), call("call_1")];
        dedupe_ids(&mut calls);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, vec!["call_0", "call_0_2", "call_1"]);

        let mut conversation = Conversation::default();
        assert_eq!(conversation.ui_call_id("call_0"), "call_0");
        assert_eq!(conversation.ui_call_id("call_0"), "call_0-2");
        assert_eq!(conversation.ui_call_id("call_0"), "call_0-3");
    }
}
