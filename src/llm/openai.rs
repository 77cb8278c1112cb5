//! OpenAI-compatible Chat Completions over streaming SSE (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, DeepSeek,
//! OpenRouter): request building, stream decoding, tool-call assembly, error classification and retries.
//!
//! Owns this wire format. Must not know about sessions or ACP.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use regex::Regex;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::assemble::Assembler;
use super::limits::{self, Activity, Limits, Liveness};
use super::{
    Delta, FinishReason, LlmError, Message, ModelClient, Reasoning, ReasoningField, Request, Response, Usage,
    UserPart, retry, sse,
};
use crate::config::{Config, RetryConfig};

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
fn http() -> Result<&'static reqwest::Client, LlmError> {
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

/// A Chat Completions endpoint.
pub struct OpenAiClient {
    base_url: String,
    api_key: Option<String>,
    retry: RetryConfig,
    connect_timeout: Duration,
    limits: Limits,
}

impl OpenAiClient {
    pub fn new(config: &Config) -> Self {
        Self {
            base_url: config.base_url.trim_end_matches('/').to_string(),
            api_key: config.api_key.clone(),
            retry: config.retry.clone(),
            connect_timeout: config.connect_timeout,
            limits: Limits::new(config),
        }
    }
}

/// How one attempt failed.
enum Attempt {
    /// Worth another try (if nothing reached the user yet).
    Retry {
        message: String,
        wait: Option<Duration>,
    },
    Fatal(LlmError),
}

fn image_data_uri(content: &str) -> Option<(&str, &str)> {
    let rest = content.strip_prefix("data:")?;
    let (mime, data) = rest.split_once(";base64,")?;
    (mime.starts_with("image/") && !data.contains(char::is_whitespace)).then_some((mime, data))
}

fn user_content(parts: &[UserPart]) -> Value {
    if let [UserPart::Text(text)] = parts {
        return Value::String(text.clone());
    }
    Value::Array(
        parts
            .iter()
            .map(|part| match part {
                UserPart::Text(text) => json!({"type": "text", "text": text}),
                UserPart::Image { mime, data } => {
                    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
                }
            })
            .collect(),
    )
}

fn assistant_message(text: &str, reasoning: &Option<Reasoning>, tool_calls: &[super::ToolCall]) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), if text.is_empty() { Value::Null } else { json!(text) });
    if let Some(reasoning) = reasoning {
        message.insert(reasoning.field.key().into(), json!(reasoning.text));
    }
    if !tool_calls.is_empty() {
        let calls: Vec<Value> = tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

/// The `messages` array. Images returned by tools (data URIs) cannot travel in `tool` messages, so they are
/// attached in one user message right after the run of tool results.
pub fn messages_json(system: &str, messages: &[Message]) -> Vec<Value> {
    let mut out = vec![json!({"role": "system", "content": system})];
    let mut pending_images: Vec<UserPart> = Vec::new();
    for message in messages {
        if !matches!(message, Message::Tool { .. }) && !pending_images.is_empty() {
            out.push(json!({"role": "user", "content": user_content(&std::mem::take(&mut pending_images))}));
        }
        match message {
            Message::User(parts) => out.push(json!({"role": "user", "content": user_content(parts)})),
            Message::Assistant { text, reasoning, tool_calls } => {
                out.push(assistant_message(text, reasoning, tool_calls))
            }
            Message::Tool { call_id, content } => match image_data_uri(content) {
                Some((mime, data)) => {
                    out.push(json!({"role": "tool", "tool_call_id": call_id, "content": "The image is attached in the next message."}));
                    pending_images.push(UserPart::Image { mime: mime.into(), data: data.into() });
                }
                None => out.push(json!({"role": "tool", "tool_call_id": call_id, "content": content})),
            },
        }
    }
    if !pending_images.is_empty() {
        out.push(json!({"role": "user", "content": user_content(&pending_images)}));
    }
    out
}

/// The request body.
pub fn body(request: &Request) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": messages_json(&request.system, &request.messages),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!("auto");
    }
    if let Some(max) = request.max_output_tokens {
        body["max_tokens"] = json!(max);
    }
    if let Some(effort) = &request.reasoning_effort {
        body["reasoning_effort"] = json!(effort);
    }
    body
}

/// `(message, code)` from an error body in any of the shapes providers use.
fn error_details(body: &str) -> (String, String) {
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

fn classify(status: u16, headers: &reqwest::header::HeaderMap, body: &str) -> Attempt {
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

/// Accumulates one streamed response.
#[derive(Default)]
struct StreamState {
    text: String,
    reasoning: String,
    reasoning_field: Option<ReasoningField>,
    refusal: String,
    assembler: Assembler,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    done: bool,
    /// Bytes of text, reasoning, refusal and tool arguments so far (what the output cap counts).
    output_bytes: u64,
}

fn usage_of(value: &Value) -> Option<Usage> {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: n(value.get("prompt_tokens")),
        output_tokens: n(value.get("completion_tokens")),
        cached_tokens: n(value.pointer("/prompt_tokens_details/cached_tokens")),
        reasoning_tokens: n(value.pointer("/completion_tokens_details/reasoning_tokens")),
    })
    .filter(|_| value.is_object())
}

impl StreamState {
    /// Take one `data:` payload.
    fn data(&mut self, data: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> Result<(), Attempt> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            Attempt::Fatal(LlmError::Protocol(format!("undecodable stream chunk ({e}): {data}")))
        })?;
        if let Some(error) = chunk.get("error") {
            let status =
                error.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).unwrap_or(500);
            return Err(classify(status, &reqwest::header::HeaderMap::new(), &chunk.to_string()));
        }
        if let Some(usage) = chunk.get("usage").and_then(usage_of) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else { return Ok(()) };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        for (key, field) in [
            ("reasoning_content", ReasoningField::ReasoningContent),
            ("reasoning", ReasoningField::Reasoning),
        ] {
            if let Some(text) = delta.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                self.reasoning_field.get_or_insert(field);
                self.output_bytes += text.len() as u64;
                self.reasoning.push_str(text);
                on_delta(Delta::Reasoning(text.to_string()));
                break;
            }
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.output_bytes += text.len() as u64;
            self.text.push_str(text);
            on_delta(Delta::Text(text.to_string()));
        }
        if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
            self.output_bytes += text.len() as u64;
            self.refusal.push_str(text);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let arguments = call.pointer("/function/arguments").and_then(Value::as_str).map_or(0, str::len);
            self.output_bytes += arguments as u64;
            self.assembler.push(call);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(FinishReason::parse(reason));
        }
        Ok(())
    }

    fn finish(self) -> Response {
        let has_calls = !self.assembler.is_empty();
        let mut finish = self.finish.unwrap_or(FinishReason::Stop);
        if has_calls && finish != FinishReason::Length {
            finish = FinishReason::ToolCalls;
        }
        Response {
            text: self.text,
            reasoning: self.reasoning_field.map(|field| Reasoning { field, text: self.reasoning }),
            tool_calls: self.assembler.finish(),
            finish,
            usage: self.usage,
            refusal: (!self.refusal.is_empty()).then_some(self.refusal),
        }
    }
}

async fn read_error_body(response: reqwest::Response) -> String {
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

impl OpenAiClient {
    async fn attempt(
        &self,
        body: &Value,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<Response, Attempt> {
        let mut builder =
            http().map_err(Attempt::Fatal)?.post(format!("{}/chat/completions", self.base_url)).json(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = match tokio::time::timeout(self.connect_timeout, builder.send()).await {
            Err(_) => {
                return Err(Attempt::Retry {
                    message: "timed out waiting for the provider".into(),
                    wait: None,
                });
            }
            Ok(Err(e)) => {
                return Err(Attempt::Retry { message: format!("connection failed: {e}"), wait: None });
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if status != 200 {
            let headers = response.headers().clone();
            return Err(classify(status, &headers, &read_error_body(response).await));
        }
        read_stream(response.bytes_stream(), self.limits, on_delta).await
    }

    /// Every attempt the retry policy allows; the message of each failed one goes to `last`.
    async fn attempts(
        &self,
        body: &Value,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
        last: &std::sync::Mutex<Option<String>>,
    ) -> Result<Response, LlmError> {
        let emitted = AtomicBool::new(false);
        let relay = |delta: Delta| {
            emitted.store(true, Ordering::Relaxed);
            on_delta(delta);
        };
        let mut attempt = 0;
        loop {
            let (message, wait) = match self.attempt(body, &relay).await {
                Ok(response) => return Ok(response),
                Err(Attempt::Fatal(error)) => return Err(error),
                Err(Attempt::Retry { message, wait }) => (message, wait),
            };
            if let Ok(mut last) = last.lock() {
                *last = Some(message.clone());
            }
            if emitted.load(Ordering::Relaxed) {
                return Err(LlmError::StreamInterrupted { message });
            }
            if attempt == self.retry.max_retries {
                return Err(LlmError::RetriesExhausted { attempts: attempt + 1, last: message });
            }
            let wait = wait.unwrap_or_else(|| retry::backoff(&self.retry, attempt));
            tracing::warn!(attempt = attempt + 1, wait_ms = wait.as_millis() as u64, %message, "model request failed; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// One response: every attempt, within the response deadline, until cancelled (dropping the attempts cancels
    /// whatever they were doing, a backoff wait included).
    async fn run(
        &self,
        request: &Request,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Response, LlmError> {
        let body = body(request);
        let last = std::sync::Mutex::new(None);
        let deadline = tokio::time::Instant::now() + self.limits.deadline;
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(LlmError::Cancelled),
            result = self.attempts(&body, on_delta, &last) => result,
            () = tokio::time::sleep_until(deadline) => Err(LlmError::Deadline {
                limit: limits::describe(self.limits.deadline),
                last: last.lock().ok().and_then(|l| l.clone()),
            }),
        }
    }
}

/// Read one streamed response to its end under the stream limits: the idle timer (comments count only up to a
/// point) and the output cap. A stall is worth a retry (if nothing reached the user); the cap is final.
async fn read_stream<S, B, E>(
    mut stream: S,
    limits: Limits,
    on_delta: &(dyn Fn(Delta) + Send + Sync),
) -> Result<Response, Attempt>
where
    S: futures::Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let mut decoder = sse::Decoder::default();
    let mut state = StreamState::default();
    let mut liveness = Liveness::new(limits, tokio::time::Instant::now());
    let cut = |message: String| Attempt::Retry { message, wait: None };
    loop {
        let chunk = match tokio::time::timeout_at(liveness.stalls_at(), stream.next()).await {
            Err(_) => match liveness.stalled(tokio::time::Instant::now()) {
                Some(stall) => return Err(cut(stall.to_string())),
                None => continue,
            },
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(cut(format!("connection lost mid-stream: {e}"))),
            Ok(Some(Ok(chunk))) => chunk,
        };
        let events =
            decoder.push(chunk.as_ref()).map_err(|e| Attempt::Fatal(LlmError::Protocol(e.to_string())))?;
        liveness.record(tokio::time::Instant::now(), Activity { data: decoder.take_activity() });
        for event in events {
            state.data(&event.data, on_delta)?;
            if limits.over_cap(state.output_bytes) {
                return Err(Attempt::Fatal(LlmError::OutputCap { tokens: limits.output_tokens }));
            }
        }
        if state.done {
            return Ok(state.finish());
        }
    }
    if let Some(event) = decoder.finish() {
        state.data(&event.data, on_delta)?;
    }
    if state.done || state.finish.is_some() {
        return Ok(state.finish());
    }
    Err(cut("the stream ended before the response was complete".into()))
}

/// The model ids the provider offers (`GET {base}/models`). Bounded by the connect timeout; never retried.
pub async fn list_models(config: &Config) -> Result<Vec<String>, LlmError> {
    // The first use builds the client (TLS roots and all): do that off the runtime's threads.
    let client = tokio::task::spawn_blocking(http)
        .await
        .map_err(|e| LlmError::Protocol(format!("cannot create the HTTP client: {e}")))??;
    let mut builder = client.get(format!("{}/models", config.base_url.trim_end_matches('/')));
    if let Some(key) = &config.api_key {
        builder = builder.bearer_auth(key);
    }
    let response = tokio::time::timeout(config.connect_timeout, builder.send())
        .await
        .map_err(|_| LlmError::Protocol("timed out listing models".into()))?
        .map_err(|e| LlmError::Protocol(format!("cannot list models: {e}")))?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(LlmError::Rejected { status, message: read_error_body(response).await });
    }
    let body: Value =
        response.json().await.map_err(|e| LlmError::Protocol(format!("bad model list: {e}")))?;
    let mut ids: Vec<String> = body
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(String::from))
        .collect();
    ids.sort();
    Ok(ids)
}

impl ModelClient for OpenAiClient {
    fn stream<'a>(
        &'a self,
        request: &'a Request,
        on_delta: &'a (dyn Fn(Delta) + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.run(request, on_delta, cancel))
    }
}

#[cfg(test)]
mod tests;
