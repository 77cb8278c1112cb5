//! `todowrite` (seed 000 §8.3): replace the session's to-do list. The session saves it and shows it as the
//! editor's plan (through the hook on [`Control`]). Follows seed 003's rules: a warning when more than one
//! item is in progress, and when unfinished items disappear.
//!
//! Owns the tool and its checks. The list itself lives in [`Control`].

use std::path::Path;

use serde_json::{Value, json};

use crate::control::{Control, Todo, TodoStatus};
use crate::display::{Content, Kind, Presentation};
use crate::permission::{Category, TODOS_PATTERN as PATTERN};
use crate::tool::{Context, Def, ToolError, ToolOutput};

pub const ID: &str = "todowrite";

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/todowrite.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete list, in order",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "The step, in the imperative"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "done"]},
                            "priority": {"type": "string", "enum": ["high", "normal", "low"]}
                        },
                        "required": ["content", "status"]
                    }
                }
            },
            "required": ["todos"]
        }),
        permission: Some(Category::Edit),
        present,
        preview: None,
        execute: std::sync::Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn parse(args: &Value) -> Result<Vec<Todo>, String> {
    let items = args.get("todos").cloned().unwrap_or(Value::Null);
    let todos: Vec<Todo> = serde_json::from_value(items).map_err(|e| {
        format!("todos must be a list of {{content, status: pending|in_progress|done, priority: high|normal|low}}: {e}")
    })?;
    if let Some(n) = todos.iter().position(|t| t.content.trim().is_empty()) {
        return Err(format!("item {} has no content", n + 1));
    }
    Ok(todos)
}

fn present(args: &Value, _cwd: &Path) -> Presentation {
    let title = match parse(args) {
        Ok(todos) => {
            let done = todos.iter().filter(|t| t.status == TodoStatus::Done).count();
            format!("Update the plan ({done} of {} done)", todos.len())
        }
        Err(_) => "Update the plan".to_string(),
    };
    Presentation { title, kind: Kind::Think, patterns: vec![PATTERN.into()], ..Presentation::default() }
}

/// The list as the model and the card show it.
pub fn render(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "(the to-do list is empty)".into();
    }
    todos
        .iter()
        .map(|t| {
            let mark = match t.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Done => "[x]",
            };
            format!("{mark} {}", t.content)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Seed 003's checks on a new list against the one it replaces.
fn warnings(previous: &[Todo], todos: &[Todo]) -> Vec<String> {
    let mut warnings = Vec::new();
    let running = todos.iter().filter(|t| t.status == TodoStatus::InProgress).count();
    if running > 1 {
        warnings.push(format!(
            "{running} items are in_progress; keep exactly one in progress and finish it before starting the next."
        ));
    }
    let dropped: Vec<&str> = previous
        .iter()
        .filter(|old| old.status != TodoStatus::Done && !todos.iter().any(|t| t.content == old.content))
        .map(|old| old.content.as_str())
        .collect();
    if !dropped.is_empty() {
        warnings.push(format!(
            "unfinished items disappeared: {}. If they are done, keep them marked done; if you dropped them, tell the user why.",
            dropped.iter().map(|d| format!("\"{d}\"")).collect::<Vec<_>>().join(", ")
        ));
    }
    warnings
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let todos = parse(&args).map_err(ToolError::retry)?;
    let control: &Control = &ctx.control;
    let previous = control.set_todos(todos.clone());
    let warnings = warnings(&previous, &todos);
    let mut output = format!("The to-do list now reads:\n{}", render(&todos));
    for warning in &warnings {
        output.push_str(&format!("\nWarning: {warning}"));
    }
    Ok(ToolOutput {
        display: vec![Content::Text(render(&todos))],
        metadata: json!({"todos": todos, "warnings": warnings}),
        ..ToolOutput::text(output)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Priority;

    fn todo(content: &str, status: TodoStatus) -> Todo {
        Todo { content: content.into(), status, priority: Priority::Normal }
    }

    #[test]
    fn two_items_in_progress_and_vanished_unfinished_items_are_warned_about() {
        let before =
            vec![todo("a", TodoStatus::Done), todo("b", TodoStatus::Pending), todo("c", TodoStatus::Pending)];
        let after = vec![todo("c", TodoStatus::InProgress), todo("d", TodoStatus::InProgress)];
        assert_eq!(
            warnings(&before, &after),
            vec![
                "2 items are in_progress; keep exactly one in progress and finish it before starting the next.".to_string(),
                "unfinished items disappeared: \"b\". If they are done, keep them marked done; if you dropped them, tell the user why.".to_string(),
            ]
        );
        assert_eq!(
            warnings(&after, &[todo("c", TodoStatus::Done), todo("d", TodoStatus::InProgress)]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn bad_lists_are_explained_to_the_model() {
        assert!(
            parse(&json!({"todos": [{"content": "x", "status": "started"}]}))
                .unwrap_err()
                .contains("pending|in_progress|done")
        );
        assert_eq!(
            parse(&json!({"todos": [{"content": " ", "status": "pending"}]})).unwrap_err(),
            "item 1 has no content"
        );
        assert_eq!(parse(&json!({"todos": []})).unwrap(), vec![]);
    }
}
