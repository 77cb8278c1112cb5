//! The transport every wire format shares: the process's HTTP client, the [`Endpoint`] a client talks to (checked
//! before anything is sent), sending a request and classifying what comes back (connection failures by cause,
//! HTTP status, error bodies, context overflow, quota, servers that are not model APIs), reading a server-sent
//! event stream under the stream limits (`limits`: idle timer, keep-alive comments, output cap), or one whole JSON
//! body from a server that ignores `stream: true`, and the retry loop (only before any output reached the user,
//! told to the user while it waits, all of it within the response deadline).
//!
//! Owns HTTP and retries. Must not know any wire format's JSON beyond the error bodies providers share.

pub mod retry;
pub mod sse;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use regex::Regex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::limits::{self, Activity, Limits, Liveness};
use super::{Delta, LlmError, Response};
use crate::config::RetryConfig;

/// Error bodies are read up to this size.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// A whole (non-streamed) response body is read up to this size.
const MAX_WHOLE_BODY: usize = 32 * 1024 * 1024;

/// Texts providers use for "the prompt does not fit" (PROVIDERS.md §1.5).
static OVERFLOW: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)prompt is too long|input is too long for requested model|exceeds the context window|input token count.*exceeds the maximum|maximum prompt length is \d+|reduce the length of the messages|maximum context length is \d+ tokens|exceeds the limit of \d+|exceeds the available context size|greater than the context length|context window exceeds limit|exceeded model token limit|context[_ ]length[_ ]exceeded|request entity too large|context length is only \d+ tokens|input length.*exceeds.*context length",
    )
    .ok()
});

/// A 404 that says the model does not exist (not a wrong path, nor a model that is merely not loaded).
static MODEL_NOT_FOUND: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)model_not_found|not_found_error|no such model|unknown model|model.*(not found|does not exist|doesn't exist|is not available|not exist)",
    )
    .ok()
});

/// "Please try again in 1.2s" (OpenAI rate limits).
static TRY_AGAIN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)try again in (\d+(?:\.\d+)?)\s*(ms|s)\b").ok());

/// Does this error text or code say the prompt does not fit?
pub fn is_overflow(message: &str, code: &str) -> bool {
    OVERFLOW.as_ref().is_some_and(|re| re.is_match(message) || re.is_match(code))
}

/// The wait a rate-limit message asks for ("try again in 1.2s").
pub fn wait_in_message(message: &str) -> Option<Duration> {
    let captures = TRY_AGAIN.as_ref()?.captures(message)?;
    let n: f64 = captures.get(1)?.as_str().parse().ok()?;
    let secs = if captures.get(2)?.as_str().eq_ignore_ascii_case("ms") { n / 1000.0 } else { n };
    Duration::try_from_secs_f64(secs).ok()
}

/// The process's HTTP client, once built.
static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();

/// One HTTP client for the whole process (its connection pool is shared by every session). The platform's root
/// certificates are read on its first HTTPS handshake (`crate::tls`), ahead of it when `tls::prepare_for` sees one coming.
pub fn http() -> Result<&'static reqwest::Client, LlmError> {
    CLIENT
        .get_or_init(|| {
            crate::tls::client_builder()
                .user_agent(concat!("tinycode/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Protocol(format!("cannot create the HTTP client: {e}")))
}

/// The HTTP client, built off the async runtime's threads the first time, at a low priority (`warm`), so the
/// answers the editor waits for go first.
pub async fn http_off_runtime() -> Result<&'static reqwest::Client, LlmError> {
    if CLIENT.get().is_some() {
        return http();
    }
    let (built, wait) = tokio::sync::oneshot::channel();
    crate::warm::spawn("tinycode-http", || {}, move || drop(built.send(http())));
    match wait.await {
        Ok(client) => client,
        // No thread could be started: build it on the runtime's blocking pool instead.
        Err(_) => tokio::task::spawn_blocking(http)
            .await
            .map_err(|e| LlmError::Protocol(format!("cannot create the HTTP client: {e}")))?,
    }
}

/// How one attempt failed.
#[derive(Debug)]
pub enum Attempt {
    /// Worth another try (if nothing reached the user yet). `reason` is short ("HTTP 503"), for the notice.
    Retry {
        message: String,
        reason: String,
        wait: Option<Duration>,
    },
    Fatal(LlmError),
}

impl Attempt {
    pub fn retry(reason: &str, detail: &str) -> Attempt {
        let message = if detail.is_empty() { reason.to_string() } else { format!("{reason}: {detail}") };
        Attempt::Retry { message, reason: reason.to_string(), wait: None }
    }
}

/// Where a client sends its requests, and what to tell the user when that goes wrong.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The provider's name (`openai`, `anthropic`, `local`, …).
    pub provider: String,
    pub base_url: String,
    pub api_key: Option<String>,
    /// The provider refuses requests without a key (a well-known hosted API).
    pub needs_key: bool,
    /// How the user provides a key ("set ANTHROPIC_API_KEY or TINYCODE_API_KEY").
    pub key_help: String,
    /// What this endpoint speaks, as the messages name it ("an OpenAI-compatible endpoint").
    pub dialect: &'static str,
    pub retry: RetryConfig,
    pub connect_timeout: Duration,
    /// The idle timer, the response deadline and the output cap.
    pub limits: Limits,
    /// Every key the configuration holds (this provider's and the others'): no error text that leaves the llm
    /// layer, and no log line, carries one ([`Endpoint::redact`]).
    pub secrets: std::sync::Arc<[String]>,
}

/// What stands in an error text where a configured key was.
pub const REDACTED: &str = "[redacted]";

/// Keys shorter than this are not looked for: they would match ordinary words of a message.
const MIN_SECRET: usize = 6;

/// `text` with every one of `secrets` replaced by [`REDACTED`], longest first (a key may contain another).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut found: Vec<&String> =
        secrets.iter().filter(|s| s.len() >= MIN_SECRET && text.contains(s.as_str())).collect();
    if found.is_empty() {
        return text.to_string();
    }
    found.sort_by_key(|s| std::cmp::Reverse(s.len()));
    found.iter().fold(text.to_string(), |text, secret| text.replace(secret.as_str(), REDACTED))
}

/// The `scheme://host:port` of a URL, as messages show it.
fn origin_of(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// The local server usually found on this loopback port.
fn usual_server(port: Option<u16>) -> Option<&'static str> {
    match port? {
        11434 => Some("Ollama"),
        1234 => Some("LM Studio"),
        8080 => Some("llama.cpp (llama-server)"),
        8000 => Some("vLLM"),
        _ => None,
    }
}

/// Is `host` a loopback address or name?
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Check that `base_url` can be used at all: it parses and its scheme is http or https.
pub fn check_url(base_url: &str) -> Result<reqwest::Url, LlmError> {
    let bad = |reason: String| LlmError::BadUrl { url: base_url.to_string(), reason };
    let trimmed = base_url.trim();
    if trimmed.is_empty() {
        return Err(bad("it is empty".into()));
    }
    if !trimmed.contains("://") {
        return Err(bad(format!("it has no scheme; write http://{trimmed} (or https://…)")));
    }
    let url = reqwest::Url::parse(trimmed).map_err(|e| bad(format!("it does not parse ({e})")))?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        "http" | "https" => Err(bad("it names no host".into())),
        other => Err(bad(format!("the scheme `{other}` is not supported; use http:// or https://"))),
    }
}

/// The text of an error and all its causes, outermost first.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

impl Endpoint {
    /// Check what can be checked before sending: the URL and the key.
    pub fn check(&self) -> Result<reqwest::Url, LlmError> {
        let url = check_url(&self.base_url)?;
        if self.needs_key && self.api_key.is_none() {
            return Err(LlmError::MissingKey {
                provider: self.provider.clone(),
                help: self.key_help.clone(),
            });
        }
        Ok(url)
    }

    /// `text` with every configured key replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        redact(text, &self.secrets)
    }

    /// `base_url` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim().trim_end_matches('/'))
    }

    /// Why a request to `url` could not be sent, from the whole error chain; retried only when it may heal.
    pub fn connect_error(&self, url: &str, error: &reqwest::Error) -> Attempt {
        self.connect_failure(url, &chain(error), error.is_builder(), error.is_timeout())
    }

    /// [`Endpoint::connect_error`] from the error chain's text.
    fn connect_failure(&self, url: &str, detail: &str, builder: bool, timeout: bool) -> Attempt {
        let lower = detail.to_ascii_lowercase();
        let parsed = reqwest::Url::parse(url).ok();
        let origin = parsed.as_ref().map(origin_of).unwrap_or_else(|| url.to_string());
        let host = parsed.as_ref().and_then(|u| u.host_str().map(String::from)).unwrap_or_default();
        let unreachable = |cause: String, hint: String| {
            Attempt::Fatal(LlmError::Unreachable { url: origin.clone(), cause, hint })
        };
        if builder {
            return Attempt::Fatal(LlmError::BadUrl {
                url: self.base_url.clone(),
                reason: detail.to_string(),
            });
        }
        if timeout {
            return Attempt::retry("timed out", &origin);
        }
        if lower.contains("connection refused") {
            if is_loopback_host(&host) {
                let port = parsed.as_ref().and_then(reqwest::Url::port);
                let hint = match usual_server(port) {
                    Some(server) => format!("is {server} running?"),
                    None => "is the server running?".into(),
                };
                return unreachable(format!("nothing is listening at {origin}"), hint);
            }
            return Attempt::retry("connection refused", &origin);
        }
        if lower.contains("dns error") || lower.contains("failed to lookup address") {
            let temporary = lower.contains("temporary failure") || lower.contains("try again");
            if temporary {
                return Attempt::retry("name lookup failed", &host);
            }
            return unreachable(
                format!("the host `{host}` does not exist ({origin})"),
                "check the base URL for a typo".into(),
            );
        }
        if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
            return unreachable(
                format!("a secure connection to {origin} failed ({detail})"),
                "check the URL's scheme (http:// or https://) and the server's certificate".into(),
            );
        }
        Attempt::retry("connection failed", detail)
    }

    /// Classify an error answer to `method url` by status, headers and body.
    pub fn classify(
        &self,
        method: &'static str,
        url: &str,
        status: u16,
        headers: &reqwest::header::HeaderMap,
        body: &str,
    ) -> Attempt {
        let content_type = headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or(v).trim().to_ascii_lowercase())
            .unwrap_or_default();
        let html = content_type.contains("html") || body.trim_start().starts_with('<');
        if html && (status < 500 || status == 501) && status != 429 {
            return Attempt::Fatal(LlmError::NotModelApi {
                dialect: self.dialect,
                request: format!("{method} {url}"),
                answer: format!(
                    "{status} {}",
                    if content_type.is_empty() { "text/html" } else { &content_type }
                ),
            });
        }
        if html {
            return Attempt::retry(&format!("HTTP {status}"), &content_type);
        }
        match classify(status, headers, body) {
            Attempt::Fatal(LlmError::Auth { status, message, .. }) => {
                Attempt::Fatal(LlmError::Auth { status, message, help: self.key_help.clone() })
            }
            other => other,
        }
    }
}

/// Add `Authorization: Bearer` when there is a key.
pub fn bearer(builder: reqwest::RequestBuilder, key: Option<&str>) -> reqwest::RequestBuilder {
    match key {
        Some(key) => builder.bearer_auth(key),
        None => builder,
    }
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
    (message.trim().to_string(), code)
}

/// Classify an error answer by status, headers and body (the rules every provider shares).
pub fn classify(status: u16, headers: &reqwest::header::HeaderMap, body: &str) -> Attempt {
    let (message, code) = error_details(body);
    if status == 401 || status == 403 || code.contains("authentication_error") {
        return Attempt::Fatal(LlmError::Auth { status, message, help: String::new() });
    }
    if status == 413 || is_overflow(&message, &code) {
        return Attempt::Fatal(LlmError::ContextOverflow { message });
    }
    if code.contains("insufficient_quota") || code.contains("billing") || status == 402 {
        return Attempt::Fatal(LlmError::Quota { message });
    }
    if status == 404 && MODEL_NOT_FOUND.as_ref().is_some_and(|re| re.is_match(&message) || re.is_match(&code))
    {
        return Attempt::Fatal(LlmError::ModelNotFound {
            model: String::new(),
            message,
            offered: Vec::new(),
        });
    }
    if !retry::is_retryable(status, headers) {
        return Attempt::Fatal(LlmError::Rejected { status, message });
    }
    let asked = retry::server_wait(headers)
        .or_else(|| code.contains("rate_limit_exceeded").then(|| wait_in_message(&message)).flatten());
    match asked {
        Some(wait) if wait > retry::MAX_HONOURED_WAIT => {
            Attempt::Fatal(LlmError::RateLimited { status, wait, message })
        }
        wait => Attempt::Retry {
            message: format!("HTTP {status}: {message}"),
            reason: format!("HTTP {status}"),
            wait,
        },
    }
}

/// The body of an error answer, up to [`MAX_ERROR_BODY`].
pub async fn read_error_body(response: reqwest::Response) -> String {
    read_body(response, MAX_ERROR_BODY).await.0
}

/// A body up to `limit` bytes, and whether it was cut.
async fn read_body(response: reqwest::Response, limit: usize) -> (String, bool) {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= limit {
            return (String::from_utf8_lossy(&body).into_owned(), true);
        }
    }
    (String::from_utf8_lossy(&body).into_owned(), false)
}

/// A wire format's reading of one response.
pub trait Decode {
    /// Take one server-sent event. Returns true once the response is complete.
    fn event(
        &mut self,
        event: &sse::Event,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<bool, Attempt>;
    /// Bytes of tool-call arguments so far (text and reasoning are counted from the deltas).
    fn argument_bytes(&self) -> u64;
    /// The stream ended: the response, if what arrived is complete.
    fn end(self) -> Result<Response, Attempt>;
    /// The server ignored `stream: true` and answered one JSON body.
    fn whole(self, body: Value, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> Result<Response, Attempt>;
}

impl Endpoint {
    /// POST `body` to `path` and read the answer into `decoder`.
    pub async fn stream<D: Decode>(
        &self,
        path: &str,
        request: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
        body: &Value,
        decoder: D,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<Response, Attempt> {
        let url = self.url(path);
        crate::tls::prepare_for(&url);
        let builder = request(http().map_err(Attempt::Fatal)?.post(&url).json(body));
        let response = match tokio::time::timeout(self.connect_timeout, builder.send()).await {
            Err(_) => {
                return Err(Attempt::retry(
                    "timed out",
                    &format!("no answer from {} in {} s", self.base_url, self.connect_timeout.as_secs()),
                ));
            }
            Ok(Err(e)) => return Err(self.connect_error(&url, &e)),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        if status != 200 {
            return Err(self.classify("POST", &url, status, &headers, &read_error_body(response).await));
        }
        let content_type = headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.starts_with("application/json") {
            let (text, cut) = read_body(response, MAX_WHOLE_BODY).await;
            let parsed: Value = serde_json::from_str(&text).map_err(|e| {
                Attempt::retry(
                    "the response was cut",
                    &format!("{e}{}", if cut { " (too large)" } else { "" }),
                )
            })?;
            if parsed.get("error").is_some() {
                return Err(self.classify("POST", &url, 500, &headers, &text));
            }
            return decoder.whole(parsed, on_delta);
        }
        if !content_type.is_empty() && !content_type.starts_with("text/event-stream") {
            return Err(Attempt::Fatal(LlmError::NotModelApi {
                dialect: self.dialect,
                request: format!("POST {url}"),
                answer: format!("200 {}", content_type.split(';').next().unwrap_or_default().trim()),
            }));
        }
        read_events(response.bytes_stream(), self.limits, decoder, on_delta).await
    }
}

/// Read a server-sent event stream into `decoder` under `limits`: the idle timer (keep-alive comments count only up
/// to a point) and the output cap (text, reasoning and tool arguments). A stall is worth a retry (if nothing reached
/// the user); the cap is final.
pub async fn read_events<S, B, E, D>(
    mut stream: S,
    limits: Limits,
    mut decoder: D,
    on_delta: &(dyn Fn(Delta) + Send + Sync),
) -> Result<Response, Attempt>
where
    S: futures::Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::error::Error + 'static,
    D: Decode,
{
    let shown = AtomicU64::new(0);
    let relay = |delta: Delta| {
        if let Delta::Text(text) | Delta::Reasoning(text) = &delta {
            shown.fetch_add(text.len() as u64, Ordering::Relaxed);
        }
        on_delta(delta);
    };
    let mut sse = sse::Decoder::default();
    let mut liveness = Liveness::new(limits, tokio::time::Instant::now());
    loop {
        let chunk = match tokio::time::timeout_at(liveness.stalls_at(), stream.next()).await {
            Err(_) => match liveness.stalled(tokio::time::Instant::now()) {
                Some(stall) => {
                    let reason = "the stream stalled".to_string();
                    return Err(Attempt::Retry { message: stall.to_string(), reason, wait: None });
                }
                None => continue,
            },
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(Attempt::retry("connection lost mid-stream", &chain(&e))),
            Ok(Some(Ok(chunk))) => chunk,
        };
        let events =
            sse.push(chunk.as_ref()).map_err(|e| Attempt::Fatal(LlmError::Protocol(e.to_string())))?;
        liveness.record(tokio::time::Instant::now(), Activity { data: sse.take_activity() });
        for event in events {
            let complete = decoder.event(&event, &relay)?;
            if limits.over_cap(shown.load(Ordering::Relaxed) + decoder.argument_bytes()) {
                return Err(Attempt::Fatal(LlmError::OutputCap { tokens: limits.output_tokens }));
            }
            if complete {
                return decoder.end();
            }
        }
    }
    if let Some(event) = sse.finish() {
        decoder.event(&event, &relay)?;
    }
    decoder.end()
}

/// A wait as the retry notice says it: "4 s", "1.5 s", "300 ms".
pub fn format_wait(wait: Duration) -> String {
    let ms = wait.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", wait.as_secs_f64())
    }
}

/// Run `attempt` until it succeeds, fails for good, or the retry budget is spent, all within the endpoint's
/// response deadline. `emitted` says whether output reached the user (the caller's relay sets it): after that a
/// failure is not retried, so text is never duplicated. Every wait is told through `notice` ("retrying in 4 s
/// (HTTP 503)"), so a long wait is never silent. Cancelling (or the deadline) drops whatever was in flight, a
/// backoff wait included.
pub async fn with_retries<F, Fut>(
    endpoint: &Endpoint,
    emitted: &AtomicBool,
    cancel: &CancellationToken,
    notice: &(dyn Fn(Delta) + Send + Sync),
    attempt: F,
) -> Result<Response, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Response, Attempt>>,
{
    let last = std::sync::Mutex::new(None);
    let deadline = tokio::time::Instant::now() + endpoint.limits.deadline;
    // Every model request's errors leave the llm layer here: each text is cleared of configured keys.
    let result = tokio::select! {
        biased;
        () = cancel.cancelled() => Err(LlmError::Cancelled),
        result = attempts(endpoint, emitted, notice, &last, attempt) => result,
        () = tokio::time::sleep_until(deadline) => Err(LlmError::Deadline {
            limit: limits::describe(endpoint.limits.deadline),
            last: last.lock().ok().and_then(|l| l.clone()),
        }),
    };
    result.map_err(|error| error.redacted(&|text| endpoint.redact(text)))
}

/// Every attempt the retry policy allows; the message of each failed one goes to `last`.
async fn attempts<F, Fut>(
    endpoint: &Endpoint,
    emitted: &AtomicBool,
    notice: &(dyn Fn(Delta) + Send + Sync),
    last: &std::sync::Mutex<Option<String>>,
    mut attempt: F,
) -> Result<Response, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Response, Attempt>>,
{
    let retry = &endpoint.retry;
    let mut number = 0;
    loop {
        let (message, reason, wait) = match attempt().await {
            Ok(response) => return Ok(response),
            Err(Attempt::Fatal(error)) => return Err(error),
            // Logged and kept below: cleared of keys first.
            Err(Attempt::Retry { message, reason, wait }) => {
                (endpoint.redact(&message), endpoint.redact(&reason), wait)
            }
        };
        if let Ok(mut last) = last.lock() {
            *last = Some(message.clone());
        }
        if emitted.load(Ordering::Relaxed) {
            return Err(LlmError::StreamInterrupted { message });
        }
        if number == retry.max_retries {
            return Err(LlmError::RetriesExhausted { attempts: number + 1, last: message });
        }
        let wait = wait.unwrap_or_else(|| retry::backoff(retry, number));
        tracing::warn!(attempt = number + 1, wait_ms = wait.as_millis() as u64, %message, "model request failed; retrying");
        notice(Delta::Notice(format!("Retrying in {} ({reason})…", format_wait(wait))));
        tokio::time::sleep(wait).await;
        number += 1;
    }
}

/// The data of every event of a recorded stream, in order.
#[cfg(test)]
pub fn event_data(stream: &str) -> Vec<String> {
    let mut sse = sse::Decoder::default();
    let mut events = sse.push(stream.as_bytes()).unwrap_or_default();
    events.extend(sse.finish());
    events.into_iter().map(|event| event.data).collect()
}

/// A way of taking one event's data: a decoder's own (`data`, fast paths first) or its general way alone.
#[cfg(test)]
pub type Way<D> = fn(&mut D, &str, &(dyn Fn(Delta) + Send + Sync)) -> Result<(), Attempt>;

/// Each stream of event data through both ways into new decoders: they must end and relay the same.
#[cfg(test)]
pub fn assert_ways_agree<D: Decode>(new: impl Fn() -> D, ways: [Way<D>; 2], streams: &[Vec<String>]) {
    for events in streams {
        let [first, second] = both_ways(&new, ways, events);
        assert_eq!(first, second, "{events:?}");
    }
}

/// Owned copies of event data written inline.
#[cfg(test)]
pub fn owned(events: &[&str]) -> Vec<String> {
    events.iter().map(|e| e.to_string()).collect()
}

/// `events` through each of two ways into a new decoder: what each ends with and relays, as text.
#[cfg(test)]
fn both_ways<D: Decode>(new: impl Fn() -> D, ways: [Way<D>; 2], events: &[String]) -> [(String, String); 2] {
    ways.map(|way| {
        let mut decoder = new();
        let deltas = std::sync::Mutex::new(Vec::new());
        let on_delta = |d: Delta| deltas.lock().unwrap_or_else(|p| p.into_inner()).push(d);
        let outcome = events.iter().try_for_each(|data| way(&mut decoder, data, &on_delta));
        let end = outcome.and_then(|()| decoder.end());
        (format!("{end:?}"), format!("{:?}", deltas.into_inner().unwrap_or_else(|p| p.into_inner())))
    })
}

/// Feed a recorded stream to `decoder` as the transport would; the response and every delta relayed.
#[cfg(test)]
pub fn replay<D: Decode>(mut decoder: D, stream: &str) -> (Result<Response, Attempt>, Vec<Delta>) {
    let deltas = std::sync::Mutex::new(Vec::new());
    let on_delta = |d: Delta| deltas.lock().unwrap_or_else(|p| p.into_inner()).push(d);
    let mut sse = sse::Decoder::default();
    let result = (|| {
        for event in
            sse.push(stream.as_bytes()).map_err(|e| Attempt::Fatal(LlmError::Protocol(e.to_string())))?
        {
            if decoder.event(&event, &on_delta)? {
                return decoder.end();
            }
        }
        if let Some(event) = sse.finish() {
            decoder.event(&event, &on_delta)?;
        }
        decoder.end()
    })();
    (result, deltas.into_inner().unwrap_or_default())
}

#[cfg(test)]
mod tests;
