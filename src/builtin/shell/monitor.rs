//! The `monitor` tool (seed 000, shell category; seed 003's `monitor_command`): start a long-running command as
//! a monitored background task that wakes the model: a note reaches it with its next request once after
//! `check_after_ms` if the command still runs, when its output first matches `pattern`, and when it exits, as
//! `notify` asks.
//!
//! Owns the tool's arguments; running belongs to `tasks`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::bash;
use crate::permission::Category;
use crate::shell::tasks::Notify;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_opt_str, arg_opt_u64, arg_str};

pub const ID: &str = "monitor";
/// When a `scheduled` check happens unless `check_after_ms` says otherwise.
pub const DEFAULT_CHECK_AFTER: Duration = Duration::from_millis(45_000);

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/monitor.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run"},
                "description": {"type": "string", "description": "What the command does, in a few words"},
                "max_duration_ms": {"type": "integer", "description": "Stop the command if it runs longer than this", "minimum": 1},
                "notify": {"type": "string", "enum": ["scheduled", "exit", "pattern", "never"], "description": "When you are woken: scheduled (default: once after check_after_ms if it still runs, and when it exits), exit (when it exits), pattern (when its output first matches `pattern`, and when it exits), never"},
                "check_after_ms": {"type": "integer", "description": "For notify \"scheduled\": when to check on it (default 45000)", "minimum": 1},
                "pattern": {"type": "string", "description": "For notify \"pattern\": a regex to watch the output for"}
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
    notify(&args)?;
    bash::shell_preview(&ctx, &args, &command)
}

/// The wake-ups the arguments ask for.
fn notify(args: &Value) -> Result<Notify, ToolError> {
    let check_after = arg_opt_u64(args, "check_after_ms")?.map(Duration::from_millis);
    let pattern = arg_opt_str(args, "pattern")?.filter(|p| !p.is_empty());
    let mode =
        arg_opt_str(args, "notify")?.unwrap_or(if pattern.is_some() { "pattern" } else { "scheduled" });
    Ok(match mode {
        "scheduled" => Notify {
            on_exit: true,
            check_after: Some(check_after.unwrap_or(DEFAULT_CHECK_AFTER)),
            pattern: None,
        },
        "exit" => Notify::on_exit(),
        "never" => Notify::never(),
        "pattern" => {
            let Some(pattern) = pattern else {
                return Err(ToolError::retry(
                    "notify \"pattern\" needs a `pattern` regex to watch the output for",
                ));
            };
            let regex = regex::Regex::new(pattern)
                .map_err(|e| ToolError::retry(format!("invalid pattern `{pattern}`: {e}")))?;
            Notify { on_exit: true, check_after: None, pattern: Some(regex) }
        }
        other => {
            return Err(ToolError::retry(format!(
                "notify must be \"scheduled\", \"exit\", \"pattern\" or \"never\", got \"{other}\""
            )));
        }
    })
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let command = arg_str(&args, "command")?;
    let limit = arg_opt_u64(&args, "max_duration_ms")?.map(Duration::from_millis);
    bash::start_monitored(&ctx, command, limit, notify(&args)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_defaults_to_a_scheduled_check_and_a_pattern_implies_pattern() {
        let scheduled = notify(&json!({})).unwrap();
        assert_eq!(
            (scheduled.on_exit, scheduled.check_after, scheduled.pattern.is_none()),
            (true, Some(DEFAULT_CHECK_AFTER), true)
        );
        let custom = notify(&json!({"check_after_ms": 500})).unwrap();
        assert_eq!(custom.check_after, Some(Duration::from_millis(500)));
        let watched = notify(&json!({"pattern": "ready"})).unwrap();
        assert_eq!(
            (watched.on_exit, watched.check_after, watched.pattern.map(|p| p.as_str().to_string())),
            (true, None, Some("ready".into()))
        );
        let never = notify(&json!({"notify": "never"})).unwrap();
        assert_eq!(
            (never.on_exit, never.check_after.is_none(), never.pattern.is_none()),
            (false, true, true)
        );
        assert_eq!(
            notify(&json!({"notify": "pattern"})).unwrap_err(),
            ToolError::retry("notify \"pattern\" needs a `pattern` regex to watch the output for")
        );
        assert!(notify(&json!({"notify": "sometimes"})).is_err());
        assert!(notify(&json!({"pattern": "("})).is_err());
    }
}
