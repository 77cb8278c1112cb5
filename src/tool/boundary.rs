//! The tool boundary: a panic in a tool's code becomes that call's error instead of taking the turn (and the
//! request that runs it) down, and a call's arguments are bounded in size before any tool sees them.
//!
//! Owns catching panics of tool code and the argument-size bound. Must not know any particular tool.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde_json::Value;

use super::ToolError;

/// The largest arguments a call may carry, as JSON: 1 MiB. Models write at most a few hundred KB in one
/// response, so only a runaway or hostile stream gets here; the tools' own work (a fuzzy edit over the file,
/// a diff for the ask) grows with the arguments, so they are bounded before any of it starts.
pub const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// How much of a panic's message the model and the logs see.
const MAX_PANIC_MESSAGE_CHARS: usize = 300;

/// Run tool code; a panic becomes [`ToolError::Execution`] for this call alone.
pub async fn guard<T>(work: impl Future<Output = Result<T, ToolError>>) -> Result<T, ToolError> {
    match AssertUnwindSafe(work).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => Err(crashed(payload.as_ref())),
    }
}

/// Run synchronous tool code (how a call is presented); a panic becomes [`ToolError::Execution`].
pub fn guard_sync<T>(work: impl FnOnce() -> T) -> Result<T, ToolError> {
    std::panic::catch_unwind(AssertUnwindSafe(work)).map_err(|payload| crashed(payload.as_ref()))
}

fn crashed(payload: &(dyn Any + Send)) -> ToolError {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    let mut short: String = message.chars().take(MAX_PANIC_MESSAGE_CHARS).collect();
    if short.len() < message.len() {
        short.push('…');
    }
    tracing::error!(panic = %short, "a tool crashed; the call fails and the turn goes on");
    ToolError::execution(format!("the tool crashed: {short}"))
}

/// Refuse arguments larger than [`MAX_ARGUMENT_BYTES`] with an error the model can act on.
pub fn check_size(args: &Value) -> Result<(), ToolError> {
    let size = json_size(args);
    if size <= MAX_ARGUMENT_BYTES {
        return Ok(());
    }
    Err(ToolError::retry(format!(
        "The arguments of this call are {} KB; the limit is {} KB. Split the work into smaller calls (several edits instead of one large write, a narrower pattern).",
        size / 1024,
        MAX_ARGUMENT_BYTES / 1024
    )))
}

/// The length of `value` as compact JSON, without building the text.
fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_panicking_future_becomes_an_execution_error_with_a_short_message() {
        let long = "x".repeat(10_000);
        let result: Result<(), ToolError> = guard(async move { panic!("matcher failed: {long}") }).await;
        let Err(ToolError::Execution(message)) = result else { panic!("not an execution error: {result:?}") };
        assert_eq!(message, format!("the tool crashed: matcher failed: {}…", "x".repeat(300 - 16)));
        assert_eq!(guard(async { Ok::<_, ToolError>(5) }).await, Ok(5));
        assert_eq!(
            guard_sync(|| -> u8 { panic!("boom") }),
            Err(ToolError::execution("the tool crashed: boom"))
        );
    }

    #[test]
    fn arguments_over_the_bound_are_refused_with_their_size() {
        let at_limit = json!({"content": "a".repeat(MAX_ARGUMENT_BYTES - 14)});
        assert_eq!(json_size(&at_limit), MAX_ARGUMENT_BYTES);
        assert_eq!(check_size(&at_limit), Ok(()));
        let over = json!({"content": "a".repeat(3 * MAX_ARGUMENT_BYTES)});
        assert_eq!(
            check_size(&over),
            Err(ToolError::retry(
                "The arguments of this call are 3072 KB; the limit is 1024 KB. Split the work into smaller calls (several edits instead of one large write, a narrower pattern)."
            ))
        );
    }
}
