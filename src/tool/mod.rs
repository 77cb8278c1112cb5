//! The tool framework of seed 000 §8.1: [`Def`], the per-call [`Context`], what a call returns
//! ([`ToolOutput`], [`Outcome`]) and the progress it reports. The ordered [`Registry`] and the execution flow
//! live in `registry`, truncation in `truncate`, the input repair pipeline in `repair`, argument reading in
//! `args`.
//!
//! One step is added in front of the permission ask: tools that change files have a `preview` that computes
//! the change in memory, so the ask can show the real diff and a change that cannot apply is reported without
//! asking at all. The computed plan travels to `execute` in [`Context::plan`].
//!
//! Owns how a tool is described, looked up and run. Must not know any particular tool (the built-ins live in
//! `builtin`, which registers them), ACP or the model provider; permission is reached only through
//! `permission::Service`.

pub mod args;
pub mod boundary;
pub mod error;
pub mod invalid;
pub mod registry;
pub mod repair;
pub mod subagent;
pub mod truncate;

pub use args::{arg_opt_str, arg_opt_u64, arg_str};
pub use error::ToolError;
pub use registry::{Registry, preview_and_save};

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::bus::{Bus, Event};
use crate::config::EditMode;
use crate::control;
use crate::display::{Content, Location, Presentation};
use crate::permission::{self, Category};
use crate::shell;
use crate::workspace::{diagnostics, files};
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
    /// How the call is shown: sent once, before any permission ask (a tool whose preview takes long reports
    /// it itself before the work starts, and the registry then sends the preview's result as a revision).
    Presented(Presentation),
    /// The presentation after the preview, for a call that was already presented.
    Revised(Presentation),
    /// Permission was granted; the tool starts now.
    Running,
    /// New output (only the part not reported before).
    Output(String),
    /// Content to show in the call's card from now on (an editor terminal).
    Content(Vec<Content>),
}

/// Where a call reports [`Progress`].
pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// Work that must wait until the call was allowed and run right before the tool starts (the checkpoint's
/// `git status` before a shell command): never for a call the user rejected or a rule (plan mode) denied.
pub type BeforeRun = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

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
    /// Run once the call was allowed, before the tool starts.
    pub before_run: Option<BeforeRun>,
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
    /// Checks files after the file tools write them (language servers), when the user turned that on.
    pub diagnostics: Option<Arc<dyn diagnostics::Checker>>,
    /// Who runs `task` calls; `None` where subagents are not available.
    pub subagents: Option<Arc<dyn subagent::Subagents>>,
    /// How the model edits files: `hashline` tags the lines `read` returns.
    pub edit_mode: EditMode,
}

impl Context {
    /// Resolve a path argument against the session directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        resolve_path(&self.directory, path)
    }

    pub(crate) fn report(&self, progress: Progress) {
        if let Some(report) = &self.progress {
            report(progress);
        }
    }

    /// Announce on the bus that this call changed `path` (`file.modified`), and note the change for the
    /// to-do list's verification nudge.
    pub fn file_modified(&self, path: &Path, operation: &str) {
        self.control.note_edit();
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
    pub(crate) fn error(output: String) -> Self {
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

    pub(crate) fn from_error(error: ToolError) -> Self {
        match error {
            ToolError::Cancelled => Outcome::cancelled(),
            ToolError::Retry(message) => Outcome::error(message),
            ToolError::Execution(message) => Outcome::error(format!("Error: {message}")),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
