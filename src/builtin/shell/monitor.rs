//! The `monitor` tool (seed 000, shell category): start a long-running command as a monitored background task;
//! when it exits, a note reaches the model with its next request.
//!
//! Owns the tool's arguments; running belongs to `tasks`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::bash;
use crate::permission::Category;
use crate::shell::tasks::Kind;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_opt_u64, arg_str};

pub const ID: &str = "monitor";

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/monitor.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run"},
                "description": {"type": "string", "description": "What the command does, in a few words"},
                "max_duration_ms": {"type": "integer", "description": "Stop the command if it runs longer than this", "minimum": 1}
            },
            "required": ["command"]
        }),
        permission: Some(Category::Shell),
        present: bash::present,
        preview: Some(Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let command = arg_str(&args, "command")?.to_string();
    if command.trim().is_empty() {
        return Err(ToolError::retry("command must not be empty"));
    }
    bash::shell_preview(&ctx, &args, &command)
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let command = arg_str(&args, "command")?;
    let limit = arg_opt_u64(&args, "max_duration_ms")?.map(Duration::from_millis);
    bash::start_background(&ctx, command, Kind::Monitor, limit)
}
