//! The `sleep` tool (seed 003): wait without a shell process, waking early when the user sends something or a
//! background task exits. Shows a once-a-second progress tick; a wait longer than [`MAX_SECONDS`] (or the
//! session's shorter limit, [`crate::control::Control::limit_sleep`], set by harnesses) is cut and the result says
//! what is left.
//!
//! Owns the waiting. The wake-up signals come from `control` (the user) and `shell::tasks` (task exits).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::display::{Kind, Presentation};
use crate::shell::tasks::State;
use crate::tool::{Context, Def, Progress, ToolError, ToolOutput, arg_opt_str};

pub const ID: &str = "sleep";
/// The longest one sleep lasts.
pub const MAX_SECONDS: u64 = 600;
const LONGEST: Duration = Duration::from_secs(MAX_SECONDS);

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/sleep.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "seconds": {"type": "integer", "minimum": 1, "description": "How long to wait, 1 to 600 seconds"},
                "reason": {"type": "string", "description": "What you are waiting for (shown to the user)"}
            },
            "required": ["seconds"]
        }),
        permission: None,
        present,
        preview: None,
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, _cwd: &Path) -> Presentation {
    let seconds = args.get("seconds").and_then(Value::as_u64).unwrap_or(0);
    let reason = args.get("reason").and_then(Value::as_str).map(str::trim).filter(|r| !r.is_empty());
    Presentation {
        title: match reason {
            Some(reason) => format!("Wait {seconds} s: {reason}"),
            None => format!("Wait {seconds} s"),
        },
        kind: Kind::Think,
        ..Presentation::default()
    }
}

fn seconds(args: &Value) -> Result<u64, ToolError> {
    let value =
        args.get("seconds").ok_or_else(|| ToolError::retry("`seconds` is required: how long to wait."))?;
    let seconds = value.as_u64().or_else(|| value.as_f64().filter(|f| *f >= 1.0).map(|f| f.round() as u64));
    seconds.filter(|s| *s >= 1).ok_or_else(|| {
        ToolError::retry(format!("`seconds` must be a whole number of seconds, at least 1 (got {value})."))
    })
}

/// The tasks of the session that are running now, by id.
fn running_tasks(ctx: &Context) -> Vec<String> {
    ctx.tasks.list().iter().filter(|t| t.state() == State::Running).map(|t| t.id.clone()).collect()
}

/// Which of `before` exited, described for the model.
fn exited(ctx: &Context, before: &[String]) -> String {
    let names: Vec<String> = ctx
        .tasks
        .list()
        .iter()
        .filter(|t| before.contains(&t.id) && t.state() != State::Running)
        .map(|t| format!("{} (`{}`)", t.id, t.command))
        .collect();
    match names.as_slice() {
        [] => "a background task exited".into(),
        [one] => format!("background task {one} exited; shell_output shows what it printed"),
        many => format!("background tasks {} exited; shell_output shows what they printed", many.join(", ")),
    }
}

/// `duration` as the tool says it: whole seconds, or to the millisecond under a harness's shorter limit.
fn shown(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.3} s", duration.as_secs_f64())
    }
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let requested = seconds(&args)?;
    let _ = arg_opt_str(&args, "reason")?;
    let limit = ctx.control.longest_sleep().map_or(LONGEST, |limit| limit.min(LONGEST));
    let asked = Duration::from_secs(requested);
    let planned = asked.min(limit);
    let mut wakes = ctx.control.wakes();
    wakes.borrow_and_update();
    let mut exits = ctx.tasks.exits();
    exits.borrow_and_update();
    let tasks = running_tasks(&ctx);
    let start = tokio::time::Instant::now();
    let deadline = start + planned;
    let mut ticks = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    let woke = loop {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            Ok(()) = wakes.changed() => break Some(wakes.borrow_and_update().1.to_string()),
            Ok(()) = exits.changed() => break Some(exited(&ctx, &tasks)),
            () = tokio::time::sleep_until(deadline) => break None,
            _ = ticks.tick() => {
                let slept = start.elapsed().as_secs();
                ctx.report(Progress::Output(format!("{slept} s of {}", shown(planned))));
            }
        }
    };
    let slept = start.elapsed().as_secs();
    let output = match &woke {
        Some(why) => format!("Woke after {slept} s of {}: {why}.", shown(planned)),
        None if asked > planned => format!(
            "Slept {}, the longest one sleep lasts; {} of the {requested} s asked for remain: call sleep again to keep waiting.",
            shown(planned),
            shown(asked - planned)
        ),
        None => format!("Slept {}.", shown(planned)),
    };
    Ok(ToolOutput {
        metadata: json!({"requested": requested, "slept": slept, "woke": woke}),
        ..ToolOutput::text(output)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::tests::context;

    #[tokio::test(start_paused = true)]
    async fn a_sleep_runs_its_time_and_a_long_one_is_cut_with_what_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let out = execute(context(dir.path(), None), json!({"seconds": 30})).await.unwrap();
        assert_eq!(out.output, "Slept 30 s.");
        let out = execute(context(dir.path(), None), json!({"seconds": 900})).await.unwrap();
        assert_eq!(
            out.output,
            "Slept 600 s, the longest one sleep lasts; 300 s of the 900 s asked for remain: call sleep again to keep waiting."
        );
        let err = execute(context(dir.path(), None), json!({"seconds": 0})).await.unwrap_err();
        assert_eq!(err, ToolError::retry("`seconds` must be a whole number of seconds, at least 1 (got 0)."));
    }

    #[tokio::test(start_paused = true)]
    async fn a_message_from_the_user_wakes_a_sleep_early_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path(), None);
        let control = ctx.control.clone();
        let sleeping = tokio::spawn(execute(ctx, json!({"seconds": 60})));
        tokio::time::sleep(Duration::from_secs(12)).await;
        control.wake("the user sent a message for this turn; it comes with your next step");
        let out = sleeping.await.unwrap().unwrap();
        assert_eq!(
            out.output,
            "Woke after 12 s of 60 s: the user sent a message for this turn; it comes with your next step."
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_sleep_stops_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path(), None);
        let cancel = ctx.cancel.clone();
        let sleeping = tokio::spawn(execute(ctx, json!({"seconds": 60})));
        tokio::time::sleep(Duration::from_secs(3)).await;
        cancel.cancel();
        assert_eq!(sleeping.await.unwrap().unwrap_err(), ToolError::Cancelled);
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_limit_cuts_a_sleep_below_the_tools_own() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path(), None);
        ctx.control.limit_sleep(Duration::from_millis(10));
        let start = tokio::time::Instant::now();
        let out = execute(ctx, json!({"seconds": 30})).await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        assert_eq!(
            out.output,
            "Slept 0.010 s, the longest one sleep lasts; 29.990 s of the 30 s asked for remain: call sleep again to keep waiting."
        );
        let ctx = context(dir.path(), None);
        ctx.control.limit_sleep(Duration::from_secs(3600));
        let out = execute(ctx, json!({"seconds": 900})).await.unwrap();
        assert_eq!(
            out.output,
            "Slept 600 s, the longest one sleep lasts; 300 s of the 900 s asked for remain: call sleep again to keep waiting."
        );
    }
}
