//! `plan_enter` and `plan_exit` (seed 000 §8.3): ask under their own permission category and, once approved,
//! record a pending switch of agent. The session applies it after the current tool round (the turn calls back
//! into it), so the rest of the turn and the next turns run under the new mode's rules and prompt.
//!
//! Owns the two tools. The switch itself is applied by the agent and session layers.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use super::todowrite::render;
use crate::display::{Content, Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput};

pub const ENTER: &str = "plan_enter";
pub const EXIT: &str = "plan_exit";
const PLAN_AGENT: &str = "plan";
const BUILD_AGENT: &str = "build";

fn agent(ctx: &Context) -> String {
    ctx.perms.as_ref().map(|p| p.agent()).unwrap_or_else(|| BUILD_AGENT.into())
}

fn enter_presentation() -> Presentation {
    Presentation { title: "Switch to plan mode".into(), kind: Kind::SwitchMode, ..Presentation::default() }
}

pub fn enter() -> Def {
    Def {
        id: ENTER.into(),
        description: include_str!("descriptions/plan_enter.md").into(),
        parameters: json!({"type": "object", "properties": {}}),
        permission: Some(Category::PlanEnter),
        present: |_, _| enter_presentation(),
        preview: Some(Arc::new(|ctx, _args| {
            Box::pin(async move {
                if agent(&ctx) == PLAN_AGENT {
                    return Err(ToolError::retry("The session is already in plan mode."));
                }
                Ok(Preview { presentation: enter_presentation(), plan: Arc::new(()), category: None })
            })
        })),
        execute: Arc::new(|ctx, _args| {
            Box::pin(async move {
                ctx.control.request_switch(PLAN_AGENT);
                Ok(ToolOutput::text(
                    "Plan mode starts after this step: read, search and plan; edits and commands that change anything will be refused. Call plan_exit with the plan when it is ready.",
                ))
            })
        }),
    }
}

/// The plan the user approves: the model's text, else the to-do list.
fn plan_text(ctx: &Context, args: &Value) -> String {
    match args.get("plan").and_then(Value::as_str).map(str::trim).filter(|p| !p.is_empty()) {
        Some(plan) => plan.to_string(),
        None => {
            let todos = ctx.control.todos();
            if todos.is_empty() { "(no plan was written)".into() } else { render(&todos) }
        }
    }
}

fn exit_presentation(plan: String) -> Presentation {
    Presentation {
        title: "Leave plan mode and start building".into(),
        kind: Kind::SwitchMode,
        content: vec![Content::Text(plan)],
        ..Presentation::default()
    }
}

pub fn exit() -> Def {
    Def {
        id: EXIT.into(),
        description: include_str!("descriptions/plan_exit.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {"plan": {"type": "string", "description": "The plan to approve, in Markdown"}}
        }),
        permission: Some(Category::PlanExit),
        present: |args: &Value, _cwd: &Path| {
            let plan = args.get("plan").and_then(Value::as_str).unwrap_or_default().to_string();
            exit_presentation(plan)
        },
        preview: Some(Arc::new(|ctx, args| {
            Box::pin(async move {
                if agent(&ctx) != PLAN_AGENT {
                    return Err(ToolError::retry(
                        "The session is not in plan mode; there is nothing to exit.",
                    ));
                }
                let presentation = exit_presentation(plan_text(&ctx, &args));
                Ok(Preview { presentation, plan: Arc::new(()), category: None })
            })
        })),
        execute: Arc::new(|ctx, _args| {
            Box::pin(async move {
                ctx.control.request_switch(BUILD_AGENT);
                Ok(ToolOutput::text(
                    "The user approved the plan. Build mode starts after this step: carry out the plan, keeping the to-do list current.",
                ))
            })
        }),
    }
}
