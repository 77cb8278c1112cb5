//! `cron_create`, `cron_list` and `cron_delete` (seed 003): the model schedules prompts in its own session. The
//! expression is checked before the user is asked; the jobs themselves belong to the session layer, reached
//! through `control::Jobs` (absent when scheduling is turned off).
//!
//! Owns the three tools' arguments and texts.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::control::{Job, Jobs, NewJob};
use crate::display::{Content, Kind, Presentation};
use crate::permission::Category;
use crate::schedule::Cron;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_str};

pub const CREATE: &str = "cron_create";
pub const LIST: &str = "cron_list";
pub const DELETE: &str = "cron_delete";
/// What the permission rules see for these tools: the session's schedule, not a file.
pub const PATTERN: &str = "session:cron";

fn jobs(ctx: &Context) -> Result<Arc<dyn Jobs>, ToolError> {
    ctx.control.jobs().ok_or_else(|| {
        ToolError::execution(
            "scheduled jobs are turned off here (`[cron] enabled = false` in the config, TINYCODE_DISABLE_CRON, or a headless run)",
        )
    })
}

fn flag(args: &Value, name: &str, default: bool) -> Result<bool, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(s == "true"),
        Some(other) => Err(ToolError::retry(format!("`{name}` must be true or false, not {other}."))),
    }
}

fn describe(job: &Job) -> String {
    let kind = match (job.recurring, job.durable) {
        (true, true) => "recurring, kept across restarts",
        (true, false) => "recurring, ends with this session",
        (false, true) => "once, kept across restarts",
        (false, false) => "once, ends with this session",
    };
    let next = job.next_run.as_deref().unwrap_or("never");
    format!("{} `{}` ({kind}; next {next}): {}", job.id, job.cron, job.prompt)
}

pub fn create() -> Def {
    Def {
        id: CREATE.into(),
        description: include_str!("descriptions/cron_create.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "cron": {"type": "string", "description": "5-field cron expression in local time, e.g. \"*/30 * * * *\""},
                "prompt": {"type": "string", "description": "What to do when the job fires"},
                "recurring": {"type": "boolean", "description": "Fire on every match (default true) or once"},
                "durable": {"type": "boolean", "description": "Keep the job across restarts of tinycode (default false)"}
            },
            "required": ["cron", "prompt"]
        }),
        permission: Some(Category::Schedule),
        present: present_create,
        preview: Some(Arc::new(|ctx, args| Box::pin(preview_create(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute_create(ctx, args))),
    }
}

fn present_create(args: &Value, _cwd: &Path) -> Presentation {
    let cron = args.get("cron").and_then(Value::as_str).unwrap_or("?");
    Presentation {
        title: format!("Schedule `{cron}`"),
        kind: Kind::Other,
        patterns: vec![PATTERN.into()],
        content: args
            .get("prompt")
            .and_then(Value::as_str)
            .map(|p| Content::Text(p.to_string()))
            .into_iter()
            .collect(),
        ..Presentation::default()
    }
}

async fn preview_create(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    jobs(&ctx)?;
    let cron = arg_str(&args, "cron")?;
    Cron::parse(cron).map_err(|e| ToolError::retry(format!("Invalid cron expression: {e}.")))?;
    if arg_str(&args, "prompt")?.trim().is_empty() {
        return Err(ToolError::retry("`prompt` is empty: say what the job should do when it fires."));
    }
    let recurring = flag(&args, "recurring", true)?;
    let durable = flag(&args, "durable", false)?;
    let mut presentation = present_create(&args, &ctx.directory);
    let how = match (recurring, durable) {
        (true, true) => "Recurring, kept across restarts of tinycode (expires after 7 days).",
        (true, false) => "Recurring until this session ends (expires after 7 days).",
        (false, true) => "Once, even after a restart of tinycode.",
        (false, false) => "Once, if this session is still open then.",
    };
    presentation.content.push(Content::Text(format!("{how} Runs only while tinycode runs.")));
    Ok(Preview { presentation, plan: Arc::new(()), category: None })
}

async fn execute_create(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let new = NewJob {
        cron: arg_str(&args, "cron")?.to_string(),
        prompt: arg_str(&args, "prompt")?.trim().to_string(),
        recurring: flag(&args, "recurring", true)?,
        durable: flag(&args, "durable", false)?,
    };
    let wanted_durable = new.durable;
    let job = jobs(&ctx)?.create(new).await.map_err(ToolError::retry)?;
    let mut output = format!(
        "Scheduled {}. It runs only while tinycode runs; a firing missed meanwhile is skipped.",
        describe(&job)
    );
    if wanted_durable && !job.durable {
        output.push_str(
            " Durable jobs are turned off in the user's configuration, so this one ends with the session.",
        );
    }
    Ok(ToolOutput { metadata: json!(job), ..ToolOutput::text(output) })
}

pub fn list() -> Def {
    Def {
        id: LIST.into(),
        description: include_str!("descriptions/cron_list.md").into(),
        parameters: json!({"type": "object", "properties": {}}),
        permission: Some(Category::Read),
        present: |_, _| Presentation {
            title: "List scheduled jobs".into(),
            kind: Kind::Read,
            patterns: vec![PATTERN.into()],
            ..Presentation::default()
        },
        preview: None,
        execute: Arc::new(|ctx, _args| {
            Box::pin(async move {
                let jobs = jobs(&ctx)?.list().await;
                let output = if jobs.is_empty() {
                    "No scheduled jobs in this session.".to_string()
                } else {
                    jobs.iter().map(describe).collect::<Vec<_>>().join("\n")
                };
                Ok(ToolOutput { metadata: json!({"jobs": jobs}), ..ToolOutput::text(output) })
            })
        }),
    }
}

pub fn delete() -> Def {
    Def {
        id: DELETE.into(),
        description: include_str!("descriptions/cron_delete.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {"id": {"type": "string", "description": "The job's id, e.g. cron_1a2b3c4d"}},
            "required": ["id"]
        }),
        permission: Some(Category::Edit),
        present: |args, _| Presentation {
            title: format!("Delete scheduled job {}", args.get("id").and_then(Value::as_str).unwrap_or("?")),
            kind: Kind::Delete,
            patterns: vec![PATTERN.into()],
            ..Presentation::default()
        },
        preview: None,
        execute: Arc::new(|ctx, args| {
            Box::pin(async move {
                let id = arg_str(&args, "id")?;
                match jobs(&ctx)?.delete(id).await.map_err(ToolError::execution)? {
                    true => Ok(ToolOutput::text(format!("Deleted {id}; it will not fire again."))),
                    false => Err(ToolError::retry(format!(
                        "There is no job `{id}` in this session; cron_list shows the jobs there are."
                    ))),
                }
            })
        }),
    }
}
