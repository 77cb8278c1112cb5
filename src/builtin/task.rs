//! `task` (seed 000 §8.3): start a subagent, check on a background one, or resume one by `task_id`. The
//! arguments are checked here; the running belongs to the session layer behind [`Subagents`], reached through
//! the call's context.
//!
//! Permission: `shell` (the seed's category) for agents that may change things; a `read` for the read-only
//! agents `explore` and `plan`, like a read-only command.
//!
//! Owns the tool's arguments and presentation. Must not create sessions itself.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::tool::subagent::{MAX_SUBAGENT_DEPTH, TaskRequest};
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_opt_str};

pub const ID: &str = "task";

/// Agents whose tools only read: starting one is a read.
pub const READ_ONLY_AGENTS: [&str; 2] = ["explore", "plan"];

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/task.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "Short task description (3-5 words)"},
                "prompt": {"type": "string", "description": "Task prompt: everything the subagent needs to know"},
                "subagent_type": {"type": "string", "description": "Agent type for the subagent (default general)"},
                "task_id": {"type": "string", "description": "Resume an existing task, or check on a background one"},
                "background": {"type": "boolean", "description": "Run in the background and return the task id at once", "default": false}
            },
            "required": ["description", "prompt"]
        }),
        permission: Some(Category::Shell),
        present,
        preview: Some(Arc::new(|ctx, args| {
            Box::pin(async move {
                // A resumed task runs its own agent, whatever `subagent_type` says.
                let resumed = arg_opt_str(&args, "task_id")?
                    .and_then(|id| ctx.subagents.as_ref().and_then(|s| s.agent_of(id.trim())));
                preview(&args, resumed.as_deref())
            })
        })),
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, _cwd: &Path) -> Presentation {
    let description = args.get("description").and_then(Value::as_str).map(str::trim).unwrap_or("");
    let agent = agent_of(args);
    let title = if description.is_empty() { format!("Task ({agent})") } else { description.to_string() };
    Presentation { title, kind: Kind::Think, patterns: vec![agent.to_string()], ..Presentation::default() }
}

fn agent_of(args: &Value) -> &str {
    args.get("subagent_type")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .unwrap_or("general")
}

/// Read-only agents ask as a read; a status check by id starts nothing. `resumed` is the agent of the task
/// `task_id` names.
fn preview(args: &Value, resumed: Option<&str>) -> Result<Preview, ToolError> {
    let checking = args.get("task_id").and_then(Value::as_str).is_some_and(|id| !id.trim().is_empty())
        && args.get("prompt").and_then(Value::as_str).is_none_or(|p| p.trim().is_empty());
    let read_only = READ_ONLY_AGENTS.contains(&resumed.unwrap_or(agent_of(args))) || checking;
    Ok(Preview {
        presentation: present(args, Path::new("")),
        plan: Arc::new(()),
        category: read_only.then_some(Category::Read),
    })
}

/// The call's arguments, checked.
pub fn parse(args: &Value) -> Result<TaskRequest, ToolError> {
    let text = |name: &str| -> Result<String, ToolError> {
        Ok(arg_opt_str(args, name)?.map(str::trim).unwrap_or("").to_string())
    };
    let (description, prompt) = (text("description")?, text("prompt")?);
    let task_id = Some(text("task_id")?).filter(|id| !id.is_empty());
    let subagent_type = Some(text("subagent_type")?).filter(|t| !t.is_empty());
    let background = match args.get("background") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(ToolError::retry(format!("`background` must be true or false, got {other}")));
        }
    };
    if prompt.is_empty() && task_id.is_none() {
        return Err(ToolError::retry(
            "`prompt` must say what the subagent is to do (it may be empty only to check on a `task_id`)",
        ));
    }
    if description.is_empty() && task_id.is_none() {
        return Err(ToolError::retry("`description` must be a short title for the task (3-5 words)"));
    }
    Ok(TaskRequest { description, prompt, subagent_type, task_id, background })
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let request = parse(&args)?;
    if ctx.subagent_depth >= MAX_SUBAGENT_DEPTH {
        return Err(ToolError::retry(format!(
            "Subagents may be nested at most {MAX_SUBAGENT_DEPTH} deep; this one cannot start another. Do the work yourself."
        )));
    }
    let Some(subagents) = ctx.subagents.clone() else {
        return Err(ToolError::execution("subagents are not available in this session"));
    };
    subagents.run(ctx, request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_and_a_status_check_needs_no_prompt() {
        let ok =
            parse(&json!({"description": " Find tests ", "prompt": "look", "background": true})).unwrap();
        assert_eq!(
            ok,
            TaskRequest {
                description: "Find tests".into(),
                prompt: "look".into(),
                subagent_type: None,
                task_id: None,
                background: true
            }
        );
        let check = parse(&json!({"description": "", "prompt": "", "task_id": "sess_1"})).unwrap();
        assert_eq!(check.task_id.as_deref(), Some("sess_1"));
        assert_eq!(
            parse(&json!({"description": "x", "prompt": " "})).unwrap_err(),
            ToolError::retry(
                "`prompt` must say what the subagent is to do (it may be empty only to check on a `task_id`)"
            )
        );
        assert_eq!(
            parse(&json!({"description": "x", "prompt": "p", "background": "yes"})).unwrap_err(),
            ToolError::retry("`background` must be true or false, got \"yes\"")
        );
    }

    #[test]
    fn read_only_agents_and_status_checks_ask_as_reads_and_others_as_shell() {
        let category = |args: Value| preview(&args, None).unwrap().category;
        assert_eq!(
            category(json!({"description": "d", "prompt": "p", "subagent_type": "explore"})),
            Some(Category::Read)
        );
        assert_eq!(category(json!({"description": "d", "prompt": "p"})), None);
        assert_eq!(category(json!({"description": "d", "prompt": "", "task_id": "t"})), Some(Category::Read));
        assert_eq!(category(json!({"description": "d", "prompt": "go on", "task_id": "t"})), None);
        let resumed =
            preview(&json!({"description": "d", "prompt": "go on", "task_id": "t"}), Some("explore"));
        assert_eq!(resumed.unwrap().category, Some(Category::Read));
    }

    #[tokio::test]
    async fn a_call_at_the_depth_limit_is_refused_before_anything_starts() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = crate::tool::tests::context(dir.path(), None);
        ctx.subagent_depth = MAX_SUBAGENT_DEPTH;
        let error = execute(ctx, json!({"description": "d", "prompt": "p"})).await.unwrap_err();
        assert_eq!(
            error,
            ToolError::retry(
                "Subagents may be nested at most 5 deep; this one cannot start another. Do the work yourself."
            )
        );
    }
}
