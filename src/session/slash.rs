//! Running what a prompt invokes (see `commands`): built-ins answered here (`/help`, `/mcp`, `/skills`,
//! `/permissions`, `/model`, `/mode`, `/compact`) or turned into a prompt (`/init`); custom commands expanded
//! (arguments, then each `` !`cmd` `` shell line run only after its own ask, then `@path` files inlined); skills
//! and MCP prompts turned into the user message. Everything else goes to the model as typed.
//!
//! Shell lines are fail-closed: a project command's lines run only when the project is trusted for them (they
//! are part of the trust question as `commands.NAME`), and every line, the user's own included, asks first with
//! no "always". A project command's `model` is ignored and its `agent` is honoured only for `plan` (the project
//! cannot pick who gets the code or loosen the mode); the user's own commands may set both.
//!
//! Owns that execution. Routing belongs to `commands`, the turn to `agent`.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::commands::{self, Builtin, Invocation, builtin, expand, permissions};
use super::settings::{MODE_OPTION, MODEL_OPTION, Mode};
use super::{Session, lock};
use crate::agent::event::ToolStatus;
use crate::agent::{AgentEvent, AgentSwitcher, Conversation, StopReason, TurnError};
use crate::config::Config;
use crate::display::{Content, Kind, Presentation};
use crate::extensions::{CustomCommand, Scope, arguments, commands as files};
use crate::llm::UserPart;
use crate::permission::{Ask, Category, Verdict};
use crate::shell::classify::{Class, Host, classify};

const INIT: &str = include_str!("commands/init.md");
/// Longest a command's shell line may run.
const SHELL_LINE_TIMEOUT: Duration = Duration::from_secs(60);
/// Output of a shell line kept for the prompt.
const SHELL_LINE_BYTES: usize = 32 * 1024;

/// `input` with its first text replaced by `text` (mentions and other blocks stay).
fn replaced(mut input: Vec<UserPart>, text: String) -> Vec<UserPart> {
    match input.first_mut() {
        Some(UserPart::Text(first)) => *first = text,
        _ => input.insert(0, UserPart::Text(text)),
    }
    input
}

impl Session {
    /// Route one prompt: a slash command, or a turn of the model.
    pub(super) async fn dispatch(
        &self,
        conversation: &mut Conversation,
        input: Vec<UserPart>,
        blocks: Value,
        cancel: &CancellationToken,
        label: &str,
    ) -> Result<StopReason, TurnError> {
        let invocation = commands::split(&input).and_then(|(name, args)| {
            commands::resolve(&name, args, &self.catalog(), &self.mcp.prompt_commands())
        });
        if !matches!(invocation, Some(Invocation::Builtin(b, _)) if b != Builtin::Init) {
            self.name_from(&input);
        }
        let text = match invocation {
            None => return self.run(conversation, input, blocks, None, cancel, label).await,
            Some(Invocation::Builtin(builtin, args)) => {
                return self.builtin(conversation, (builtin, args), (input, blocks), cancel, label).await;
            }
            Some(Invocation::Custom(command, args)) => {
                let text = self.expand_command(&command, &args, cancel).await;
                if cancel.is_cancelled() {
                    return Ok(StopReason::Cancelled);
                }
                let model = self.command_settings(&command);
                return self.run(conversation, replaced(input, text), blocks, model, cancel, label).await;
            }
            Some(Invocation::Skill(skill, args)) => crate::extensions::skills::activate(&skill, &args),
            Some(Invocation::Prompt(prompt, args)) => self.mcp.prompt_text(&prompt, &args, cancel).await,
        };
        match text {
            Ok(text) => self.run(conversation, replaced(input, text), blocks, None, cancel, label).await,
            Err(e) => {
                self.reply(&e);
                Ok(StopReason::EndTurn)
            }
        }
    }

    /// A turn of the model on `input` (with another model for this turn, if given), its file changes saved as
    /// a checkpoint named `label`.
    async fn run(
        &self,
        conversation: &mut Conversation,
        input: Vec<UserPart>,
        blocks: Value,
        model: Option<String>,
        cancel: &CancellationToken,
        label: &str,
    ) -> Result<StopReason, TurnError> {
        let (config, client) = (self.config(), lock(&self.model).clone());
        let mut settings = self.settings();
        if let Some(model) = model {
            settings.model = model;
        }
        let turn = self.turn(&config, client.as_ref(), &settings, cancel.clone());
        // A subagent's changes are recorded in its parent's turn.
        let top = self.depth == 0;
        if top {
            self.changes.begin();
        }
        let result = turn.run(conversation, input, blocks).await;
        if top {
            self.save_checkpoint(label).await;
        }
        result
    }

    async fn builtin(
        &self,
        conversation: &mut Conversation,
        (builtin, args): (Builtin, String),
        (input, blocks): (Vec<UserPart>, Value),
        cancel: &CancellationToken,
        label: &str,
    ) -> Result<StopReason, TurnError> {
        let reply = match builtin {
            Builtin::Compact => {
                let (config, client) = (self.config(), lock(&self.model).clone());
                let turn = self.turn(&config, client.as_ref(), &self.settings(), cancel.clone());
                return Ok(self.compact_command(turn, conversation, cancel).await);
            }
            Builtin::Init => {
                let text =
                    if args.is_empty() { INIT.to_string() } else { format!("{INIT}\nFocus on: {args}") };
                return self.run(conversation, replaced(input, text), blocks, None, cancel, label).await;
            }
            Builtin::Permissions => {
                let args: Vec<String> = args.split_whitespace().map(String::from).collect();
                permissions::permissions(self.perms.remembered(), &args).await
            }
            Builtin::Help => self.help(),
            Builtin::Mcp => builtin::mcp(&self.mcp.statuses()),
            Builtin::Skills => builtin::skills(&self.catalog()),
            Builtin::Model => self.switch_model(&args),
            Builtin::Mode => self.switch_mode(&args),
            Builtin::Checkpoints => self.checkpoints_command().await,
            Builtin::Undo => return Ok(self.restore_command(None, conversation, cancel).await),
            Builtin::Restore => return Ok(self.restore_command(Some(args), conversation, cancel).await),
            // A steering message with text never gets here (it goes to the running turn).
            Builtin::Steer => {
                "Usage: `/steer TEXT` adds TEXT to the running turn without stopping it.".into()
            }
        };
        self.reply(&reply);
        Ok(StopReason::EndTurn)
    }

    fn help(&self) -> String {
        let config = self.config();
        let settings = self.settings();
        builtin::help(&builtin::Help {
            commands: &self.commands(),
            mode: settings.mode,
            model: &settings.model,
            base_url: config.provider().map(|p| p.base_url.as_str()).unwrap_or("(no provider configured)"),
            servers: &self.mcp.statuses(),
            skills: self.catalog().skills.len(),
            user_config: self
                .sources
                .user_config_home
                .as_ref()
                .map(|h| h.join("tinycode").join("config.toml")),
            project_config: Config::project_file(&self.cwd),
        })
    }

    fn switch_model(&self, name: &str) -> String {
        if name.is_empty() {
            return builtin::models(&self.settings().model, &self.model_ids());
        }
        match self.set_option(MODEL_OPTION, name) {
            Ok(_) => {
                self.announce_settings(false);
                format!("The model is now `{name}`.")
            }
            Err(e) => format!("{e}\n\n{}", builtin::models(&self.settings().model, &self.model_ids())),
        }
    }

    fn switch_mode(&self, name: &str) -> String {
        let Some(mode) = Mode::parse(name) else {
            let unknown =
                if name.is_empty() { String::new() } else { format!("There is no mode `{name}`.\n\n") };
            return format!("{unknown}{}", builtin::modes(self.settings().mode));
        };
        match self.set_option(MODE_OPTION, mode.id()) {
            Ok(_) => {
                self.announce_settings(true);
                format!("The mode is now `{}`: {}.", mode.id(), mode.description())
            }
            Err(e) => e,
        }
    }

    /// Apply a command's `agent` and return its `model`, within what its origin may choose.
    fn command_settings(&self, command: &CustomCommand) -> Option<String> {
        let own = command.origin.scope == Scope::User;
        if let Some(mode) = command.agent.as_deref().and_then(Mode::parse)
            && (own || mode == Mode::Plan)
            && mode != self.settings().mode
        {
            self.switch_agent(mode.id());
        }
        if !own && command.model.is_some() {
            tracing::info!(command = %command.name, "a project command's `model` is ignored");
        }
        command.model.clone().filter(|_| own)
    }

    /// The prompt a custom command makes.
    async fn expand_command(
        &self,
        command: &CustomCommand,
        args: &str,
        cancel: &CancellationToken,
    ) -> String {
        let text = arguments::expand(&command.body, args, command.origin.style());
        let lines = files::shell_lines(&text);
        let mut outputs = Vec::new();
        for line in &lines {
            if cancel.is_cancelled() {
                break;
            }
            outputs.push(self.shell_line(command, line, cancel).await);
        }
        let mut outputs = outputs.into_iter();
        let text = files::replace_shell_lines(&text, |line| {
            outputs.next().unwrap_or_else(|| format!("[`{line}` was not run: the prompt was cancelled]"))
        });
        let project = crate::extensions::project_root(&self.cwd);
        let inlined = expand::inline_files(&text, &self.cwd, &project);
        for (path, refusal) in &inlined.refused {
            self.refused_file(path, &refusal.to_string(), false);
        }
        inlined.text
    }

    /// Are the shell lines of the project's command `name` covered by the user's trust? Checked afresh.
    fn project_lines_trusted(&self, name: &str) -> bool {
        match Config::load(&self.sources, &self.cwd, &self.trust) {
            Ok(loaded) => {
                loaded.untrusted.is_none_or(|r| !r.wants.iter().any(|w| w.key == format!("commands.{name}")))
            }
            Err(_) => false,
        }
    }

    /// Run one shell line of `command` after asking; returns what replaces it in the prompt.
    async fn shell_line(&self, command: &CustomCommand, line: &str, cancel: &CancellationToken) -> String {
        if command.origin.scope == Scope::Project && !self.project_lines_trusted(&command.name) {
            return format!(
                "[`{line}` was not run: shell lines in the project's commands run only once you trust the project]"
            );
        }
        let call_id = format!("cmd_{}", uuid::Uuid::new_v4().simple());
        let category = match classify(line, &Host::new(&self.cwd)) {
            Class::ReadOnly => Category::Read,
            Class::Normal => Category::Shell,
            Class::Destructive(_) => Category::DestructiveShell,
            Class::Secret(_) => Category::SecretShell,
        };
        let presentation = Presentation {
            title: format!("/{} runs `{line}`", command.name),
            kind: Kind::Execute,
            locations: Vec::new(),
            patterns: crate::builtin::shell::bash::patterns(line),
            content: vec![Content::Text(format!("```sh\n{line}\n```"))],
        };
        let raw_input = json!({"command": line});
        self.sink().emit(AgentEvent::ToolCallStarted {
            call_id: call_id.clone(),
            tool: "bash".into(),
            presentation: presentation.clone(),
            raw_input: raw_input.clone(),
        });
        let ask = Ask {
            session_id: self.id.clone(),
            call_id: call_id.clone(),
            tool: "bash".into(),
            category,
            presentation,
            raw_input,
            protected: None,
        };
        let why = format!(
            "The command `/{}` runs this shell line; its output goes into your prompt.",
            command.name
        );
        let verdict = tokio::select! {
            verdict = self.perms.confirm(&ask, &why) => verdict,
            () = cancel.cancelled() => Verdict::Cancelled,
        };
        let (status, output, replacement) = match verdict {
            Verdict::Allow => {
                self.sink().emit(AgentEvent::ToolCallRunning { call_id: call_id.clone() });
                let (output, ok) = run_line(line, &self.cwd, self.tasks.environment(), cancel).await;
                let status = if ok { ToolStatus::Completed } else { ToolStatus::Failed };
                (status, output.clone(), output)
            }
            Verdict::Denied { why, .. } => {
                let text = format!("Not run: {why}");
                (
                    ToolStatus::Failed,
                    text.clone(),
                    format!("[`{line}` was not run: a permission rule denies it]"),
                )
            }
            Verdict::Rejected | Verdict::Cancelled => (
                ToolStatus::Failed,
                "Not run: you declined it.".to_string(),
                format!("[`{line}` was not run: the user declined it]"),
            ),
        };
        self.sink().emit(AgentEvent::ToolCallFinished {
            call_id,
            status,
            output: output.clone(),
            display: Vec::new(),
            locations: Vec::new(),
            raw_output: json!({"output": output}),
        });
        replacement
    }
}

/// Run `line` in `cwd` (its own process group), with a time limit; returns its output and whether it succeeded.
async fn run_line(
    line: &str,
    cwd: &std::path::Path,
    env: &crate::shell::environment::Environment,
    cancel: &CancellationToken,
) -> (String, bool) {
    let (mut child, group) = match crate::shell::process::spawn(line, cwd, env) {
        Ok(spawned) => spawned,
        Err(e) => return (format!("[`{line}` could not be started: {e}]"), false),
    };
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let collect = async {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let read_out = async {
            if let Some(pipe) = stdout.as_mut() {
                let _ = pipe.read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(pipe) = stderr.as_mut() {
                let _ = pipe.read_to_end(&mut err).await;
            }
        };
        tokio::join!(read_out, read_err);
        let status = group.wait(&mut child).await.ok();
        (out, err, status)
    };
    let (out, err, status) = tokio::select! {
        done = tokio::time::timeout(SHELL_LINE_TIMEOUT, collect) => match done {
            Ok(done) => done,
            Err(_) => return (format!("[`{line}` did not finish within {} s and was stopped]", SHELL_LINE_TIMEOUT.as_secs()), false),
        },
        () = cancel.cancelled() => return (format!("[`{line}` was stopped: the prompt was cancelled]"), false),
    };
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if !err.is_empty() {
        text.push_str(&String::from_utf8_lossy(&err));
    }
    let mut text = crate::tool::truncate::floor_char_boundary(text.trim_end(), SHELL_LINE_BYTES).to_string();
    let ok = status.is_some_and(|s| s.success());
    if let Some(code) = status.and_then(|s| s.code()).filter(|c| *c != 0) {
        text.push_str(&format!("\n(exit status {code})"));
    }
    (text, ok)
}
