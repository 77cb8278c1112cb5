//! The `kill_shell` tool (seed 003): stop a background task by id, pid or port — SIGTERM to its process group,
//! a poll, then SIGKILL. A port is resolved to the processes listening on it (`shell::ports`), and each to the
//! task it belongs to. A pid or port that is not one of this session's tasks is refused and named: no other
//! process is ever signalled (the user can stop it through `bash`, which asks).
//!
//! Owns the tool's wording; signalling lives in `tasks` and `process`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::shell::capture::describe_exit;
use crate::shell::ports;
use crate::shell::tasks::{Stopped, Task};
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
                "pid": {"type": "integer", "description": "Or the pid of the task's process"},
                "port": {"type": "integer", "description": "Or a TCP port a task listens on (e.g. a dev server's 3000)", "minimum": 1, "maximum": 65535}
            }
        }),
        permission: Some(Category::Shell),
        present: |args, _| {
            let target = args
                .get("task_id")
                .and_then(Value::as_str)
                .map(String::from)
                .or_else(|| args.get("pid").map(|p| format!("pid {p}")))
                .or_else(|| args.get("port").map(|p| format!("the task on port {p}")));
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

/// Stop `task` and say how it went; `via` explains how it was found (a port).
async fn stop(task: &Task, via: &str) -> String {
    match task.stop(GRACE).await {
        Stopped::AlreadyFinished(exit) => {
            let note = describe_exit(&task.command, exit).0.unwrap_or_else(|| "Exit code 0.".into());
            format!("{}{via} had already finished. {note}", task.id)
        }
        Stopped::Terminated => format!("Stopped {} (`{}`){via} with SIGTERM.", task.id, task.command),
        Stopped::Killed => format!(
            "{} (`{}`){via} ignored SIGTERM for {} s and was killed with SIGKILL.",
            task.id,
            task.command,
            GRACE.as_secs()
        ),
    }
}

/// Stop the tasks listening on `port`; refuse (naming them) processes that are not this session's tasks.
async fn by_port(ctx: &Context, port: u64) -> Result<ToolOutput, ToolError> {
    let port = u16::try_from(port)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| ToolError::retry(format!("port must be between 1 and 65535, got {port}")))?;
    let pids = tokio::task::spawn_blocking(move || ports::listeners(port))
        .await
        .map_err(|e| ToolError::execution(e.to_string()))?;
    if pids.is_empty() {
        return Err(ToolError::retry(format!(
            "Nothing is listening on TCP port {port} (that this user can see). Use shell_tasks to list the tasks."
        )));
    }
    let mut tasks: Vec<Arc<Task>> = Vec::new();
    let mut foreign = Vec::new();
    for pid in pids {
        match ctx.tasks.owner_of(pid) {
            Some(task) if !tasks.iter().any(|t| t.id == task.id) => tasks.push(task),
            Some(_) => {}
            None => foreign.push(pid),
        }
    }
    if tasks.is_empty() {
        let named: Vec<String> =
            foreign.iter().map(|pid| format!("pid {pid} (`{}`)", ports::command_line(*pid))).collect();
        return Err(ToolError::retry(format!(
            "Port {port} is held by {}, which is not a task of this session, so nothing was signalled. If it must stop, stop it with bash (for example `kill {}`); the user will be asked.",
            named.join(", "),
            foreign[0]
        )));
    }
    let mut lines = Vec::new();
    for task in &tasks {
        lines.push(stop(task, &format!(", listening on port {port},")).await);
    }
    if !foreign.is_empty() {
        lines.push(format!(
            "Also listening on port {port}, not signalled (not tasks of this session): {}.",
            foreign.iter().map(|p| format!("pid {p}")).collect::<Vec<_>>().join(", ")
        ));
    }
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    Ok(ToolOutput {
        output: lines.join("\n"),
        metadata: json!({"taskIds": ids, "port": port}),
        ..ToolOutput::default()
    })
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let key = match (arg_opt_str(&args, "task_id")?, arg_opt_u64(&args, "pid")?, arg_opt_u64(&args, "port")?)
    {
        (Some(id), _, _) => id.to_string(),
        (None, Some(pid), _) => pid.to_string(),
        (None, None, Some(port)) => return by_port(&ctx, port).await,
        (None, None, None) => {
            return Err(ToolError::retry("give the task_id, pid or port of the task to stop"));
        }
    };
    let Some(task) = ctx.tasks.find(&key) else {
        return Err(ToolError::retry(format!(
            "{key} is not a task of this session, so it was not signalled. Use shell_tasks to list the tasks."
        )));
    };
    let output = stop(&task, "").await;
    Ok(ToolOutput { output, metadata: json!({"taskId": task.id}), ..ToolOutput::default() })
}
