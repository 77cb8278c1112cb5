//! The `shell_tasks` tool (seed 003): the session's background tasks, one line each; `include_stopped: false`
//! lists only those still running.
//!
//! Owns the listing. Read-only.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::shell::tasks::State;
use crate::tool::{Context, Def, ToolError, ToolOutput};

pub const ID: &str = "shell_tasks";

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/shell_tasks.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "include_stopped": {"type": "boolean", "description": "Also list tasks that have finished (default true)"}
            }
        }),
        permission: Some(Category::Read),
        present: |_, _| Presentation {
            title: "List background tasks".into(),
            kind: Kind::Read,
            ..Presentation::default()
        },
        preview: None,
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let include_stopped = match args.get("include_stopped") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(ToolError::retry(format!("include_stopped must be true or false, got {other}")));
        }
    };
    let all = ctx.tasks.list();
    let stopped = all.iter().filter(|t| !matches!(t.state(), State::Running)).count();
    let tasks: Vec<_> =
        all.into_iter().filter(|t| include_stopped || matches!(t.state(), State::Running)).collect();
    let mut output = if tasks.is_empty() {
        "No background tasks in this session.".to_string()
    } else {
        tasks.iter().map(|t| t.summary()).collect::<Vec<_>>().join("\n")
    };
    if tasks.is_empty() && stopped > 0 && !include_stopped {
        output =
            format!("No running background tasks ({stopped} finished; include_stopped: true lists them).");
    }
    Ok(ToolOutput { output, metadata: json!({"count": tasks.len()}), ..ToolOutput::default() })
}
