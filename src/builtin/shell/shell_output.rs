//! The `shell_output` tool (seed 003): a background task's output, after an optional wait for its exit or for a
//! pattern, tail-bounded at 30,000 characters and fenced as untrusted text, saying which condition ended the
//! wait. Seed 003's old names (`bash_output`, `task_output` with its `wait: "exit"`, `monitor_events`) reach it.
//!
//! Owns waiting and reporting. Never signals the task.

use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json::{Value, json};

use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::shell::fence;
use crate::shell::tasks::{State, Task};
use crate::tool::{Context, Def, ToolError, ToolOutput, arg_opt_str, arg_opt_u64, arg_str};

pub const ID: &str = "shell_output";
/// Characters of output shown.
pub const MAX_OUTPUT_CHARS: usize = 30_000;
const DEFAULT_WAIT_MS: u64 = 30_000;
const MAX_WAIT_MS: u64 = 600_000;

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/shell_output.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The task, e.g. task_1"},
                "wait": {"type": "string", "enum": ["none", "exit", "pattern"], "description": "What to wait for (default none)"},
                "pattern": {"type": "string", "description": "Regex to wait for when wait is \"pattern\""},
                "timeout": {"type": "integer", "description": "Longest wait in milliseconds (default 30000, max 600000)", "minimum": 1}
            },
            "required": ["task_id"]
        }),
        permission: Some(Category::Read),
        present: |args, _| Presentation {
            title: format!("Output of {}", args.get("task_id").and_then(Value::as_str).unwrap_or("task")),
            kind: Kind::Read,
            ..Presentation::default()
        },
        preview: None,
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

/// Which condition ended the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    NoWait,
    Exit,
    Pattern,
    Timeout,
}

async fn wait_for_pattern(task: &Task, pattern: &Regex) -> Ended {
    let mut changes = task.output_changes();
    loop {
        if pattern.is_match(&task.tail(usize::MAX)) {
            return Ended::Pattern;
        }
        if matches!(task.state(), State::Exited(_)) {
            return Ended::Exit;
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return Ended::Exit },
            _ = task.exited() => {}
        }
    }
}

fn header(task: &Task) -> String {
    format!("{}\nLog: {}", task.summary(), task.log.display())
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let key = arg_str(&args, "task_id")?;
    let Some(task) = ctx.tasks.find(key) else {
        return Err(ToolError::retry(format!(
            "No task with id {key} in this session. Use shell_tasks to list the tasks."
        )));
    };
    let wait = arg_opt_str(&args, "wait")?.unwrap_or("none");
    let limit = Duration::from_millis(
        arg_opt_u64(&args, "timeout")?.unwrap_or(DEFAULT_WAIT_MS).clamp(1, MAX_WAIT_MS),
    );
    let ended = match wait {
        "none" => Ended::NoWait,
        "exit" => match tokio::time::timeout(limit, task.exited()).await {
            Ok(_) => Ended::Exit,
            Err(_) => Ended::Timeout,
        },
        "pattern" => {
            let Some(pattern) = arg_opt_str(&args, "pattern")? else {
                return Err(ToolError::retry("wait \"pattern\" needs a `pattern` regex"));
            };
            let pattern =
                Regex::new(pattern).map_err(|e| ToolError::retry(format!("invalid pattern: {e}")))?;
            tokio::time::timeout(limit, wait_for_pattern(&task, &pattern)).await.unwrap_or(Ended::Timeout)
        }
        other => {
            return Err(ToolError::retry(format!(
                "wait must be \"none\", \"exit\" or \"pattern\", got \"{other}\""
            )));
        }
    };
    let running = matches!(task.state(), State::Running);
    let ended_text = match ended {
        Ended::NoWait => "no wait requested".to_string(),
        Ended::Exit => "the task exited".to_string(),
        Ended::Pattern => "the pattern appeared in the output".to_string(),
        Ended::Timeout => format!("timed out after {} ms", limit.as_millis()),
    };
    let body = if task.tail(1).is_empty() {
        "(no output yet)".to_string()
    } else {
        task.fenced_tail(MAX_OUTPUT_CHARS)
    };
    let marker = if running { "[still running]" } else { "[finished]" };
    Ok(ToolOutput {
        output: format!(
            "{}\n{}\n\n{}\n{marker}\nWait ended: {ended_text}.",
            header(&task),
            fence::NOTE,
            body
        ),
        metadata: json!({"taskId": task.id, "running": running, "waitEnded": ended_text}),
        bounded: true,
        ..ToolOutput::default()
    })
}
