//! The `kill_shell` tool (seed 003): stop a background task by id or pid — SIGTERM to its process group, a poll,
//! then SIGKILL. A pid that is not one of this session's tasks is refused: no other process group is ever
//! signalled.
//!
//! Owns the tool's wording; signalling lives in `tasks` and `process`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::shell::capture::describe_exit;
use crate::shell::tasks::Stopped;
use crate::tool::{Context, Def, ToolError, ToolOutput, arg_opt_str, arg_opt_u64};

pub const ID: &str = "kill_shell";
/// How long a task gets to exit after SIGTERM.
pub const GRACE: Duration = Duration::from_secs(2);

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/kill_shell.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The task to stop, e.g. task_1"},
                "pid": {"type": "integer", "description": "Or the pid of the task's process"}
            }
        }),
        permission: Some(Category::Shell),
        present: |args, _| {
            let target = args
                .get("task_id")
                .and_then(Value::as_str)
                .map(String::from)
                .or_else(|| args.get("pid").map(|p| format!("pid {p}")));
            Presentation {
                title: format!("Stop {}", target.unwrap_or_else(|| "task".into())),
                kind: Kind::Execute,
                patterns: vec!["kill_shell".into()],
                ..Presentation::default()
            }
        },
        preview: None,
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let key = match (arg_opt_str(&args, "task_id")?, arg_opt_u64(&args, "pid")?) {
        (Some(id), _) => id.to_string(),
        (None, Some(pid)) => pid.to_string(),
        (None, None) => return Err(ToolError::retry("give the task_id (or pid) of the task to stop")),
    };
    let Some(task) = ctx.tasks.find(&key) else {
        return Err(ToolError::retry(format!(
            "{key} is not a task of this session, so it was not signalled. Use shell_tasks to list the tasks."
        )));
    };
    let output = match task.stop(GRACE).await {
        Stopped::AlreadyFinished(exit) => {
            let note = describe_exit(&task.command, exit).0.unwrap_or_else(|| "Exit code 0.".into());
            format!("{} had already finished. {note}", task.id)
        }
        Stopped::Terminated => format!("Stopped {} (`{}`) with SIGTERM.", task.id, task.command),
        Stopped::Killed => format!(
            "{} (`{}`) ignored SIGTERM for {} s and was killed with SIGKILL.",
            task.id,
            task.command,
            GRACE.as_secs()
        ),
    };
    Ok(ToolOutput { output, metadata: json!({"taskId": task.id}), ..ToolOutput::default() })
}
