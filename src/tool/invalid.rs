//! The `invalid` tool (seed 000 §8.3, §8.6): where the input repair pipeline routes calls that cannot run
//! (unrepairable arguments, a call cut off by the output limit, required arguments still missing), so the
//! user sees a failed call and the model a tool result it can learn from. Never offered to the model; always
//! an error.
//!
//! Owns how such a call is shown and answered; the wording of each correction is the pipeline's
//! (`tool::repair`). Must not touch the filesystem.

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

/// The arguments for routing a bad call here: `error` is the whole message for the model.
pub fn args(original_name: &str, error: &str, original_args: &str) -> Value {
    json!({"error": error, "original_name": original_name, "original_args": original_args})
}

async fn execute(_ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let error = args.get("error").and_then(Value::as_str).unwrap_or("The tool call was invalid.");
    Err(ToolError::retry(error))
}
