//! `todowrite` (seed 000 §8.3): replace the session's to-do list. The session saves it and shows it as the
//! editor's plan (through the hook on [`Control`]). Follows seed 003's rules: each item may carry `activeForm`
//! (shown while it is in progress); a list with more than one item in progress is refused with a correction;
//! a warning when unfinished items disappear; and a nudge to verify when the last item is completed after the
//! session changed files and no item was about verifying.
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
                            "activeForm": {"type": "string", "description": "The step in the present continuous (\"Adding the login form\"), shown while it is in progress"},
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
        format!("todos must be a list of {{content, status: pending|in_progress|done, activeForm, priority: high|normal|low}}: {e}")
    })?;
    if let Some(n) = todos.iter().position(|t| t.content.trim().is_empty()) {
        return Err(format!("item {} has no content", n + 1));
    }
    let running: Vec<&Todo> = todos.iter().filter(|t| t.status == TodoStatus::InProgress).collect();
    if running.len() > 1 {
        let names: Vec<String> = running.iter().map(|t| format!("\"{}\"", t.content)).collect();
        return Err(format!(
            "Only one item may be in_progress at a time, and {} are: {}. Keep the one you are working on now in_progress, set the others to pending (not started yet) or done (finished), and send the whole list again. The list was not changed.",
            running.len(),
            names.join(", ")
        ));
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
            match (&t.active_form, t.status) {
                (Some(active), TodoStatus::InProgress) => format!("{mark} {} ({active})", t.content),
                _ => format!("{mark} {}", t.content),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Words that mark an item as a verification step.
const VERIFYING: [&str; 7] = ["test", "verif", "check", "lint", "build", "run ", "review"];

/// Seed 003's checks on a new list against the one it replaces. `edits`: files the session changed since the
/// list got its first unfinished item.
fn warnings(previous: &[Todo], todos: &[Todo], edits: u64) -> Vec<String> {
    let mut warnings = Vec::new();
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
    let finishing = previous.iter().any(|t| t.status != TodoStatus::Done);
    let all_done = !todos.is_empty() && todos.iter().all(|t| t.status == TodoStatus::Done);
    let verified = todos.iter().any(|t| {
        let text = t.content.to_lowercase();
        VERIFYING.iter().any(|word| text.contains(word))
    });
    if finishing && all_done && edits > 0 && !verified {
        warnings.push(format!(
            "every item is done and you changed {edits} file{} along the way, but no item verified the work. Before you report success, verify it: run the tests, the build or the linter that covers these changes, and fix what fails.",
            if edits == 1 { "" } else { "s" }
        ));
    }
    warnings
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let todos = parse(&args).map_err(ToolError::retry)?;
    let control: &Control = &ctx.control;
    let edits = control.edits_since_list_start();
    let previous = control.set_todos(todos.clone());
    let warnings = warnings(&previous, &todos, edits);
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
        Todo { content: content.into(), status, priority: Priority::Normal, active_form: None }
    }

    #[test]
    fn vanished_unfinished_items_are_warned_about() {
        let before =
            vec![todo("a", TodoStatus::Done), todo("b", TodoStatus::Pending), todo("c", TodoStatus::Pending)];
        let after = vec![todo("c", TodoStatus::InProgress), todo("d", TodoStatus::Pending)];
        assert_eq!(
            warnings(&before, &after, 0),
            vec![
                "unfinished items disappeared: \"b\". If they are done, keep them marked done; if you dropped them, tell the user why.".to_string(),
            ]
        );
        assert_eq!(
            warnings(&after, &[todo("c", TodoStatus::Done), todo("d", TodoStatus::InProgress)], 0),
            Vec::<String>::new()
        );
    }

    #[test]
    fn more_than_one_item_in_progress_is_refused_with_a_correction() {
        let args = json!({"todos": [
            {"content": "a", "status": "in_progress"},
            {"content": "b", "status": "pending"},
            {"content": "c", "status": "in_progress"},
        ]});
        assert_eq!(
            parse(&args).unwrap_err(),
            "Only one item may be in_progress at a time, and 2 are: \"a\", \"c\". Keep the one you are working on now in_progress, set the others to pending (not started yet) or done (finished), and send the whole list again. The list was not changed."
        );
    }

    #[test]
    fn finishing_the_last_item_after_edits_nudges_toward_verification_unless_an_item_verified() {
        let before = vec![todo("Add the form", TodoStatus::Done), todo("Wire it up", TodoStatus::InProgress)];
        let after = vec![todo("Add the form", TodoStatus::Done), todo("Wire it up", TodoStatus::Done)];
        assert_eq!(
            warnings(&before, &after, 3),
            vec![
                "every item is done and you changed 3 files along the way, but no item verified the work. Before you report success, verify it: run the tests, the build or the linter that covers these changes, and fix what fails.".to_string()
            ]
        );
        assert!(warnings(&before, &after, 0).is_empty(), "nothing was changed: nothing to verify");
        assert!(warnings(&after, &after, 3).is_empty(), "only when the last item completes");
        let tested = vec![
            todo("Add the form", TodoStatus::Done),
            todo("Wire it up", TodoStatus::Done),
            todo("Run the tests", TodoStatus::Done),
        ];
        assert!(warnings(&before, &tested, 3).is_empty());
    }

    #[test]
    fn the_active_form_is_shown_while_an_item_is_in_progress() {
        let mut running = todo("Add the form", TodoStatus::InProgress);
        running.active_form = Some("Adding the form".into());
        let mut done = todo("Write docs", TodoStatus::Done);
        done.active_form = Some("Writing docs".into());
        assert_eq!(render(&[running, done]), "[~] Add the form (Adding the form)\n[x] Write docs");
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
