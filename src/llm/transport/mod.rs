//! The transport every wire format shares: the process's HTTP client, sending a request and classifying what
//! comes back (HTTP status, error bodies, context overflow, quota), reading a server-sent event stream with an
//! idle timeout, and the retry loop (only before any output reached the user).
//!
//! Owns HTTP and retries. Must not know any wire format's JSON beyond the error bodies providers share.

pub mod retry;
pub mod sse;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use regex::Regex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Delta, LlmError, Response};
use crate::config::RetryConfig;

/// Error bodies are read up to this size.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Texts providers use for "the prompt does not fit" (PROVIDERS.md §1.5).
static OVERFLOW: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)prompt is too long|input is too long for requested model|exceeds the context window|input token count.*exceeds the maximum|maximum prompt length is \d+|reduce the length of the messages|maximum context length is \d+ tokens|exceeds the limit of \d+|exceeds the available context size|greater than the context length|context window exceeds limit|exceeded model token limit|context[_ ]length[_ ]exceeded|request entity too large|context length is only \d+ tokens|input length.*exceeds.*context length",
    )
    .ok()
});

fn is_overflow(message: &str, code: &str) -> bool {
    OVERFLOW.as_ref().is_some_and(|re| re.is_match(message) || re.is_match(code))
}

/// One HTTP client for the whole process: building one loads the platform's root certificates, which is far
/// too slow to do per session.
pub fn http() -> Result<&'static reqwest::Client, LlmError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // reqwest is built without a default crypto provider; ring is ours. Installing twice is harmless.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .user_agent(concat!("tinycode/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Protocol(format!("cannot create the HTTP client: {e}")))
}

/// How one attempt failed.
pub enum Attempt {
    /// Worth another try (if nothing reached the user yet).
    Retry {
        message: String,
        wait: Option<Duration>,
    },
    Fatal(LlmError),
}

/// `(message, code)` from an error body in any of the shapes providers use.
pub fn error_details(body: &str) -> (String, String) {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let error = parsed.get("error").unwrap_or(&parsed);
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let message = match error {
        Value::String(s) => s.clone(),
        Value::Object(_) => text(error.get("message")),
        _ => String::new(),
    };
    let code = [text(error.get("code")), text(error.get("type"))].join(" ");
    let message = if message.is_empty() { body.trim().chars().take(500).collect() } else { message };
    (message, code)
}

/// Classify an error answer by status, headers and body.
pub fn classify(status: u16, headers: &reqwest::header::HeaderMap, body: &str) -> Attempt {
    let (message, code) = error_details(body);
    if status == 401 || status == 403 {
        return Attempt::Fatal(LlmError::Auth { status, message });
    }
    if status == 413 || is_overflow(&message, &code) {
        return Attempt::Fatal(LlmError::ContextOverflow { message });
    }
    if code.contains("insufficient_quota") || code.contains("billing") {
        return Attempt::Fatal(LlmError::Quota { message });
    }
    if retry::is_retryable(status, headers) {
        return Attempt::Retry {
            message: format!("HTTP {status}: {message}"),
            wait: retry::server_wait(headers),
        };
    }
    Attempt::Fatal(LlmError::Rejected { status, message })
}

/// The body of an error answer, up to [`MAX_ERROR_BODY`].
pub async fn read_error_body(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Send `request`, waiting at most `connect_timeout` for the response headers. A non-200 answer is classified.
pub async fn send(
    request: reqwest::RequestBuilder,
    connect_timeout: Duration,
) -> Result<reqwest::Response, Attempt> {
    let response = match tokio::time::timeout(connect_timeout, request.send()).await {
        Err(_) => {
            return Err(Attempt::Retry { message: "timed out waiting for the provider".into(), wait: None });
        }
        Ok(Err(e)) => return Err(Attempt::Retry { message: format!("connection failed: {e}"), wait: None }),
        Ok(Ok(response)) => response,
    };
    let status = response.status().as_u16();
    if status != 200 {
        let headers = response.headers().clone();
        return Err(classify(status, &headers, &read_error_body(response).await));
    }
    Ok(response)
}

/// A wire format's reading of one streamed response.
pub trait Decode {
    /// Take one event. Returns true once the response is complete.
    fn event(
        &mut self,
        event: &sse::Event,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<bool, Attempt>;
    /// The stream ended: the response, if what arrived is complete.
    fn end(self) -> Result<Response, Attempt>;
}

/// Read `response` as server-sent events into `decoder`. A stream silent for `idle_timeout` counts as cut.
pub async fn read_events<D: Decode>(
    response: reqwest::Response,
    idle_timeout: Duration,
    mut decoder: D,
    on_delta: &(dyn Fn(Delta) + Send + Sync),
) -> Result<Response, Attempt> {
    let mut stream = response.bytes_stream();
    let mut sse = sse::Decoder::default();
    let cut = |message: String| Attempt::Retry { message, wait: None };
    loop {
        let chunk = match tokio::time::timeout(idle_timeout, stream.next()).await {
            Err(_) => return Err(cut(format!("no data for {} s", idle_timeout.as_secs()))),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(cut(format!("connection lost mid-stream: {e}"))),
            Ok(Some(Ok(chunk))) => chunk,
        };
        let events = sse.push(&chunk).map_err(|e| Attempt::Fatal(LlmError::Protocol(e.to_string())))?;
        for event in events {
            if decoder.event(&event, on_delta)? {
                return decoder.end();
            }
        }
    }
    if let Some(event) = sse.finish() {
        decoder.event(&event, on_delta)?;
    }
    decoder.end()
}

/// Run `attempt` until it succeeds, fails for good, or the retry budget is spent. `emitted` says whether output
/// reached the user (the caller's relay sets it): after that a failure is not retried, so text is never duplicated.
pub async fn with_retries<F, Fut>(
    retry: &RetryConfig,
    emitted: &AtomicBool,
    cancel: &CancellationToken,
    mut attempt: F,
) -> Result<Response, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Response, Attempt>>,
{
    let mut last = String::new();
    for number in 0..=retry.max_retries {
        let result = tokio::select! {
            result = attempt() => result,
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
        };
        let (message, wait) = match result {
            Ok(response) => return Ok(response),
            Err(Attempt::Fatal(error)) => return Err(error),
            Err(Attempt::Retry { message, wait }) => (message, wait),
        };
        if emitted.load(Ordering::Relaxed) {
            return Err(LlmError::StreamInterrupted { message });
        }
        if number == retry.max_retries {
            last = message;
            break;
        }
        let wait = wait.unwrap_or_else(|| retry::backoff(retry, number));
        tracing::warn!(attempt = number + 1, wait_ms = wait.as_millis() as u64, %message, "model request failed; retrying");
        last = message;
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
        }
    }
    Err(LlmError::RetriesExhausted { attempts: retry.max_retries + 1, last })
}
