//! The `shell_tasks` tool (seed 003): the session's background tasks, one line each.
//!
//! Owns the listing. Read-only.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, ToolError, ToolOutput};

pub const ID: &str = "shell_tasks";

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/shell_tasks.md").into(),
        parameters: json!({"type": "object", "properties": {}}),
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

async fn execute(ctx: Context, _args: Value) -> Result<ToolOutput, ToolError> {
    let tasks = ctx.tasks.list();
    let output = if tasks.is_empty() {
        "No background tasks in this session.".to_string()
    } else {
        tasks.iter().map(|t| t.summary()).collect::<Vec<_>>().join("\n")
    };
    Ok(ToolOutput { output, metadata: json!({"count": tasks.len()}), ..ToolOutput::default() })
}
