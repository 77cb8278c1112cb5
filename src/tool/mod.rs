//! The tool framework of seed 000 §8.1: [`Def`], the ordered thread-safe [`Registry`], the per-call
//! [`Context`], and the execution flow (lookup → permission → `tool.execute.before` → execute → error or
//! after-hook → `tool.execute.after` → truncation preview).
//!
//! One step is added in front of the permission ask: tools that change files have a `preview` that computes
//! the change in memory, so the ask can show the real diff and a change that cannot apply is reported without
//! asking at all. The computed plan travels to `execute` in [`Context::plan`].
//!
//! Owns how a tool is described, looked up and run. Each built-in tool lives in its own file named after it.
//! Must not know about ACP or the model provider; permission is reached only through `permission::Service`.

pub mod apply_patch;
pub mod atomic;
pub mod control;
pub mod edit;
pub mod files;
pub mod format;
pub mod glob;
pub mod grep;
pub mod input;
pub mod invalid;
pub mod plan_switch;
pub mod question;
pub mod read;
pub mod secrets;
pub mod shell;
pub mod todowrite;
pub mod truncate;
pub mod walk;
pub mod write;

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::bus::{Bus, Event};
use crate::display::{Content, Location, Presentation};
use crate::permission::{self, Ask, Category, Verdict};

/// Why a tool failed, and therefore who handles it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The model can fix this by changing its arguments (missing file, bad regex, ...). The message goes
    /// back to the model as the tool result; the turn goes on.
    #[error("{0}")]
    Retry(String),
    /// The tool broke for a reason the model cannot fix (I/O failure, ...). The model is told, the user sees
    /// a failed tool call; the turn goes on.
    #[error("{0}")]
    Execution(String),
    /// The turn must stop now (the user cancelled). The agent records a cancelled result and ends the turn.
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    pub fn retry(message: impl Into<String>) -> Self {
        ToolError::Retry(message.into())
    }

    pub fn execution(message: impl Into<String>) -> Self {
        ToolError::Execution(message.into())
    }
}

/// What a successful tool returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// The text the model sees.
    pub output: String,
    /// Content for the user's tool call card (text, diffs). Empty means "show `output`".
    pub display: Vec<Content>,
    /// Files the call touched; editors use them to follow along.
    pub locations: Vec<Location>,
    /// Structured result for the editor (`rawOutput`).
    pub metadata: Value,
    /// The tool bounded its own output (read, images); the registry must not truncate it again.
    pub bounded: bool,
    /// The call failed but has a full result (a command's non-zero exit): shown as failed, output kept.
    pub failed: bool,
    /// End the turn after this tool round, showing this message to the user (a question the editor cannot
    /// ask; the answer comes as the next prompt).
    pub end_turn: Option<String>,
}

impl ToolOutput {
    pub fn text(output: impl Into<String>) -> Self {
        Self { output: output.into(), ..Self::default() }
    }
}

/// A post-execution modifier applied to every successful output (seed 000 `AfterHook`).
pub type AfterHook = Arc<dyn Fn(&str, &mut ToolOutput) + Send + Sync>;

/// The handler of a tool.
pub type ExecuteFn =
    Arc<dyn Fn(Context, Value) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync>;

/// Describes a call before it runs: title, kind, locations, permission patterns. Pure and cheap.
pub type PresentFn = fn(&Value, &Path) -> Presentation;

/// What a preview computed: how to show the call (with the real diff) and the plan `execute` carries out.
pub struct Preview {
    pub presentation: Presentation,
    pub plan: Arc<dyn Any + Send + Sync>,
    /// The permission category for this call when it differs from the tool's (a read-only command is a read,
    /// a destructive one asks under `destructive-shell`).
    pub category: Option<Category>,
}

/// Computes a change in memory before the permission ask. Errors go to the model without asking.
pub type PreviewFn =
    Arc<dyn Fn(Context, Value) -> BoxFuture<'static, Result<Preview, ToolError>> + Send + Sync>;

/// One tool (seed 000 `Def`).
pub struct Def {
    pub id: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
    /// The permission category; `None` means the registry never asks.
    pub permission: Option<Category>,
    pub present: PresentFn,
    /// For tools that change files: compute the change before the ask (see the module docs).
    pub preview: Option<PreviewFn>,
    pub execute: ExecuteFn,
}

impl std::fmt::Debug for Def {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Def")
            .field("id", &self.id)
            .field("permission", &self.permission)
            .finish_non_exhaustive()
    }
}

/// Progress a running tool reports to the user while it works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// How the call is shown: sent once, before any permission ask.
    Presented(Presentation),
    /// Permission was granted; the tool starts now.
    Running,
    /// New output (only the part not reported before).
    Output(String),
    /// Content to show in the call's card from now on (an editor terminal).
    Content(Vec<Content>),
}

/// Where a call reports [`Progress`].
pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// The per-call context (seed 000 `Context`). Created fresh for every call.
#[derive(Clone)]
pub struct Context {
    pub session_id: String,
    pub call_id: String,
    /// The session's working directory; relative paths resolve against it.
    pub directory: PathBuf,
    pub perms: Option<Arc<permission::Service>>,
    pub bus: Bus,
    pub subagent_depth: u32,
    pub after_hook: Option<AfterHook>,
    /// Fires when the turn is cancelled; long-running tools must stop promptly.
    pub cancel: CancellationToken,
    /// Where full outputs are saved when the preview had to cut them.
    pub output_dir: PathBuf,
    /// Reports progress to the user; `None` when nobody watches.
    pub progress: Option<ProgressFn>,
    /// The session's file access (editor or disk, ledger, locks, boundary).
    pub files: Arc<files::Files>,
    /// The plan computed by the tool's preview, if it has one.
    pub plan: Option<Arc<dyn Any + Send + Sync>>,
    /// The session's background tasks.
    pub tasks: Arc<shell::tasks::Tasks>,
    /// The editor's terminals, when commands should run there.
    pub terminals: Option<Arc<dyn shell::terminal::ClientTerminals>>,
    /// The session's to-do list, pending mode switch and question seam.
    pub control: Arc<control::Control>,
}

impl Context {
    /// Resolve a path argument against the session directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        resolve_path(&self.directory, path)
    }

    fn report(&self, progress: Progress) {
        if let Some(report) = &self.progress {
            report(progress);
        }
    }

    /// Announce on the bus that this call changed `path` (`file.modified`).
    pub fn file_modified(&self, path: &Path, operation: &str) {
        self.bus.publish(Event::FileModified {
            session_id: self.session_id.clone(),
            call_id: self.call_id.clone(),
            path: path.to_path_buf(),
            operation: operation.into(),
        });
    }

    /// The preview's plan, as the type the tool stored.
    pub fn plan<T: Any + Send + Sync>(&self) -> Result<Arc<T>, ToolError> {
        self.plan
            .clone()
            .and_then(|plan| plan.downcast::<T>().ok())
            .ok_or_else(|| ToolError::execution("internal error: the change was not prepared"))
    }
}

/// Resolve `path` against `base` and normalise `.` and `..` lexically.
pub fn resolve_path(base: &Path, path: &str) -> PathBuf {
    let joined = base.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The result of running one call through the flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// What the model sees.
    pub output: String,
    pub is_error: bool,
    pub display: Vec<Content>,
    pub locations: Vec<Location>,
    pub metadata: Value,
    /// The turn must end as cancelled.
    pub cancelled: bool,
    /// The turn must end after this round, with this message to the user.
    pub end_turn: Option<String>,
}

impl Outcome {
    fn error(output: String) -> Self {
        Self {
            output,
            is_error: true,
            display: Vec::new(),
            locations: Vec::new(),
            metadata: Value::Null,
            cancelled: false,
            end_turn: None,
        }
    }

    pub fn cancelled() -> Self {
        Self { cancelled: true, ..Self::error("Cancelled by the user before the tool finished.".into()) }
    }

    fn from_error(error: ToolError) -> Self {
        match error {
            ToolError::Cancelled => Outcome::cancelled(),
            ToolError::Retry(message) => Outcome::error(message),
            ToolError::Execution(message) => Outcome::error(format!("Error: {message}")),
        }
    }
}

/// The ordered, thread-safe set of tools.
#[derive(Default)]
pub struct Registry {
    defs: RwLock<Vec<Arc<Def>>>,
}

impl Registry {
    /// A registry with every built-in tool of this build.
    pub fn builtins() -> Self {
        let registry = Registry::default();
        registry.register(read::def());
        registry.register(write::def());
        registry.register(edit::def());
        registry.register(apply_patch::def());
        registry.register(shell::bash::def());
        registry.register(glob::def());
        registry.register(grep::def());
        registry.register(shell::monitor::def());
        registry.register(shell::shell_output::def());
        registry.register(shell::shell_tasks::def());
        registry.register(shell::kill_shell::def());
        registry.register(todowrite::def());
        registry.register(question::def());
        registry.register(plan_switch::enter());
        registry.register(plan_switch::exit());
        registry.register(invalid::def());
        registry
    }

    fn read_defs(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Def>>> {
        match self.defs.read() {
            Ok(defs) => defs,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Add a tool; a tool with the same id is replaced in place, keeping its position.
    pub fn register(&self, def: Def) {
        let mut defs = match self.defs.write() {
            Ok(defs) => defs,
            Err(poisoned) => poisoned.into_inner(),
        };
        let def = Arc::new(def);
        match defs.iter().position(|d| d.id == def.id) {
            Some(i) => defs[i] = def,
            None => defs.push(def),
        }
    }

    /// Exact lookup.
    pub fn get(&self, id: &str) -> Option<Arc<Def>> {
        self.read_defs().iter().find(|d| d.id == id).cloned()
    }

    /// Lookup that forgives surrounding whitespace and case (`" Read"` → `read`), as models get these wrong.
    pub fn resolve(&self, name: &str) -> Option<Arc<Def>> {
        self.get(name).or_else(|| {
            let wanted = name.trim().to_lowercase();
            self.read_defs().iter().find(|d| d.id == wanted).cloned()
        })
    }

    /// The tools offered to the model, in registration order. `invalid` is never offered.
    pub fn model_tools(&self) -> Vec<Arc<Def>> {
        self.read_defs().iter().filter(|d| d.id != invalid::ID).cloned().collect()
    }

    /// Run one call through the seed's execution flow.
    pub async fn execute(&self, name: &str, mut ctx: Context, args: Value) -> Outcome {
        let Some(def) = self.resolve(name) else {
            ctx.report(Progress::Presented(Presentation {
                title: format!("Unknown tool `{name}`"),
                ..Presentation::default()
            }));
            let names: Vec<String> = self.model_tools().iter().map(|d| d.id.clone()).collect();
            return Outcome::error(format!("Unknown tool `{name}`. Available tools: {}.", names.join(", ")));
        };
        let mut presentation = (def.present)(&args, &ctx.directory);
        let mut category = def.permission;
        if let Some(preview) = &def.preview {
            let previewed = tokio::select! {
                biased;
                previewed = preview(ctx.clone(), args.clone()) => previewed,
                () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
            };
            match previewed {
                Ok(Preview { presentation: shown, plan, category: chosen }) => {
                    presentation = shown;
                    ctx.plan = Some(plan);
                    category = chosen.or(category);
                }
                Err(error) => {
                    ctx.report(Progress::Presented(presentation));
                    return Outcome::from_error(error);
                }
            }
        }
        ctx.report(Progress::Presented(presentation.clone()));
        if let (Some(perms), Some(category)) = (&ctx.perms, category) {
            let ask = Ask {
                session_id: ctx.session_id.clone(),
                call_id: ctx.call_id.clone(),
                tool: def.id.clone(),
                category,
                presentation: presentation.clone(),
                raw_input: args.clone(),
            };
            let verdict = tokio::select! {
                verdict = perms.check(&ask) => verdict,
                () = ctx.cancel.cancelled() => Verdict::Cancelled,
            };
            match verdict {
                Verdict::Allow => {}
                Verdict::Denied { rule, why } => {
                    return Outcome::error(format!(
                        "Permission denied by rule {{permission: \"{}\", pattern: \"{}\", action: deny}}. {why}",
                        rule.permission, rule.pattern
                    ));
                }
                Verdict::Rejected => {
                    return Outcome::error(
                        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
                            .into(),
                    );
                }
                Verdict::Cancelled => return Outcome::cancelled(),
            }
        }
        ctx.report(Progress::Running);
        ctx.bus.publish(Event::ToolExecuteBefore {
            session_id: ctx.session_id.clone(),
            call_id: ctx.call_id.clone(),
            tool: def.id.clone(),
            args: args.clone(),
        });
        let after = |success: bool| Event::ToolExecuteAfter {
            session_id: ctx.session_id.clone(),
            call_id: ctx.call_id.clone(),
            tool: def.id.clone(),
            success,
        };
        // Poll the tool first so a tool that handles cancellation itself (killing processes, keeping partial
        // output) gets to finish that work; the token branch only wins while the tool is still pending.
        let result = tokio::select! {
            biased;
            result = (def.execute)(ctx.clone(), args) => result,
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        };
        let mut output = match result {
            Err(error) => {
                ctx.bus.publish(after(false));
                return Outcome::from_error(error);
            }
            Ok(output) => output,
        };
        if let Some(hook) = &ctx.after_hook {
            hook(&def.id, &mut output);
        }
        ctx.bus.publish(after(true));
        let text = if output.bounded { output.output } else { preview_and_save(&ctx, output.output).await };
        let locations = if output.locations.is_empty() { presentation.locations } else { output.locations };
        Outcome {
            output: text,
            is_error: output.failed,
            display: output.display,
            locations,
            metadata: output.metadata,
            cancelled: false,
            end_turn: output.end_turn,
        }
    }
}

/// Apply the head+tail preview; when it cuts, save the full text and say where.
async fn preview_and_save(ctx: &Context, text: String) -> String {
    let Some(preview) = truncate::preview(&text) else {
        return text;
    };
    let safe_id: String = ctx
        .call_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    let path = ctx.output_dir.join(format!("tool_{safe_id}_{}.txt", uuid::Uuid::new_v4().simple()));
    let saved = async {
        tokio::fs::create_dir_all(&ctx.output_dir).await?;
        tokio::fs::write(&path, text.as_bytes()).await
    }
    .await;
    match saved {
        Ok(()) => format!(
            "{preview}\n\nThe output was truncated. Full output saved to: {}\nUse grep on that file, or read it with offset/limit, to see the rest.",
            path.display()
        ),
        Err(e) => {
            tracing::warn!(error = %e, path = %path.display(), "could not save full tool output");
            format!("{preview}\n\nThe output was truncated (the full output could not be saved: {e}).")
        }
    }
}

/// `path` relative to the session directory when it is inside it, for titles and summaries.
pub fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// The 1-based line holding byte `offset` of `text`.
pub fn line_of(text: &str, offset: usize) -> u32 {
    let offset = offset.min(text.len());
    u32::try_from(text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1).unwrap_or(u32::MAX)
}

/// The first 1-based line where `old` and `new` differ (1 for a new file).
pub fn first_changed_line(old: Option<&str>, new: &str) -> u32 {
    let Some(old) = old else { return 1 };
    let same = old.split('\n').zip(new.split('\n')).take_while(|(a, b)| a == b).count();
    u32::try_from(same + 1).unwrap_or(u32::MAX)
}

/// Refuse writes that would put a new secret into a file.
pub fn veto_secrets(path: &Path, old: &str, new: &str) -> Result<(), ToolError> {
    let kinds = secrets::introduced(old, new);
    if kinds.is_empty() {
        return Ok(());
    }
    Err(ToolError::retry(format!(
        "Refusing to write {}: the new content contains what looks like a {}. Secrets must not be written into files by the agent; reference an environment variable instead and let the user add the value.",
        path.display(),
        kinds.join(" and a ")
    )))
}

/// The path a file-changing tool may write: resolved, inside the workspace, not a directory.
pub async fn writable(ctx: &Context, raw: &str) -> Result<PathBuf, ToolError> {
    let path = ctx.files.check_boundary(&ctx.resolve(raw))?;
    if tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_dir()) {
        return Err(ToolError::retry(format!("{} is a directory, not a file.", path.display())));
    }
    Ok(path)
}

/// Check, right before writing, that `path` still holds what the preview saw (the user may take a while to
/// approve, and the file may change meanwhile).
pub async fn unchanged_since_preview(
    ctx: &Context,
    path: &Path,
    seen: Option<&str>,
) -> Result<(), ToolError> {
    let now = ctx.files.read_text(path).await?;
    if now.as_deref() == seen {
        return Ok(());
    }
    Err(ToolError::retry(format!(
        "{} changed while the change was waiting for approval. Read it again and redo the change.",
        path.display()
    )))
}

/// Read a required string argument.
pub fn arg_str<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ToolError::retry(format!("`{name}` must be a string, got {other}"))),
        None => Err(ToolError::retry(format!("missing required argument `{name}`"))),
    }
}

/// Read an optional string argument (`null` counts as absent).
pub fn arg_opt_str<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ToolError::retry(format!("`{name}` must be a string, got {other}"))),
    }
}

/// Read an optional non-negative integer argument; numeric strings are accepted.
pub fn arg_opt_u64(args: &Value, name: &str) -> Result<Option<u64>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as u64))
            .map(Some)
            .ok_or_else(|| ToolError::retry(format!("`{name}` must be a non-negative integer, got {n}"))),
        Some(Value::String(s)) => {
            s.trim().parse::<u64>().map(Some).map_err(|_| {
                ToolError::retry(format!("`{name}` must be a non-negative integer, got \"{s}\""))
            })
        }
        Some(other) => Err(ToolError::retry(format!("`{name}` must be a non-negative integer, got {other}"))),
    }
}

#[cfg(test)]
mod tests;
