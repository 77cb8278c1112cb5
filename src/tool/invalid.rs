//! The `invalid` tool (seed 000 §8.3, §8.6): where calls with unrepairable arguments or unknown names are
//! routed, so the model gets a tool result it can learn from. Never offered to the model; always an error.
//!
//! Owns the wording of that correction. Must not touch the filesystem.

use serde_json::{Value, json};

use super::{Context, Def, ToolError, ToolOutput};
use crate::display::{Kind, Presentation};
use crate::permission::Category;

pub const ID: &str = "invalid";

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: "Internal: reports a malformed tool call back to the model.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "error": {"type": "string"},
                "original_name": {"type": "string"},
                "original_args": {"type": "string"}
            },
            "required": ["error", "original_name"]
        }),
        permission: Some(Category::Read),
        present,
        preview: None,
        execute: std::sync::Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, _cwd: &std::path::Path) -> Presentation {
    let name = args.get("original_name").and_then(Value::as_str).unwrap_or("?");
    Presentation { title: format!("Invalid call to `{name}`"), kind: Kind::Other, ..Presentation::default() }
}

/// The arguments for routing a bad call here.
pub fn args(original_name: &str, error: &str, original_args: &str) -> Value {
    json!({"error": error, "original_name": original_name, "original_args": original_args})
}

async fn execute(_ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let name = args.get("original_name").and_then(Value::as_str).unwrap_or("?");
    let error = args.get("error").and_then(Value::as_str).unwrap_or("unknown error");
    Err(ToolError::retry(format!(
        "The arguments provided to the tool `{name}` are invalid: {error}\nPlease resend the call with a single valid JSON object as its arguments."
    )))
}
