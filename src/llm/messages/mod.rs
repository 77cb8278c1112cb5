//! Anthropic Messages over streaming SSE (Anthropic, and the servers that speak its wire: DeepSeek, Kimi, LM
//! Studio, gateways): request building with prompt-caching breakpoints and thinking, stream decoding (text,
//! `tool_use` with `input_json_delta`, `thinking` and `redacted_thinking` kept verbatim with their signatures,
//! `message_delta` stop reasons and usage, `ping`, mid-stream `error`), and the model list.
//!
//! Owns this wire format. HTTP, errors and retries belong to `transport`. Every block or event type it does
//! not know is skipped, never an error (PROVIDERS.md §2).

mod hot;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::tool_content::{self, Part};
use super::transport::{self, Attempt, Decode, Endpoint, sse};
use super::{
    Delta, FinishReason, LlmError, Message, ModelClient, Reasoning, ReasoningField, Request, Response,
    ToolCall, Usage, UserPart, catalogue, ids,
};

/// The API version every request names.
pub const VERSION: &str = "2023-06-01";
/// `max_tokens` when neither the configuration nor the catalogue gives one.
const DEFAULT_MAX_TOKENS: u64 = 8_192;
/// The most output tokens asked for by default (the catalogue's limit may be far higher).
const MAX_DEFAULT_OUTPUT: u64 = 32_000;

/// A Messages endpoint.
pub struct MessagesClient {
    endpoint: Endpoint,
    /// Send the key as `Authorization: Bearer` (gateways, `ANTHROPIC_AUTH_TOKEN`) rather than `x-api-key`.
    bearer: bool,
}

impl MessagesClient {
    pub fn new(endpoint: Endpoint, bearer: bool) -> Self {
        Self { endpoint, bearer }
    }
}

/// The path below the base URL: bases usually stop before `/v1`, but some users include it.
pub fn path(base_url: &str, rest: &str) -> String {
    if base_url.trim_end_matches('/').ends_with("/v1") { format!("/{rest}") } else { format!("/v1/{rest}") }
}

/// Add the key and version headers.
pub fn authorize(
    builder: reqwest::RequestBuilder,
    key: Option<&str>,
    bearer: bool,
) -> reqwest::RequestBuilder {
    let builder = builder.header("anthropic-version", VERSION);
    match key {
        Some(key) if bearer => builder.bearer_auth(key),
        Some(key) => builder.header("x-api-key", key),
        None => builder,
    }
}

fn image_block(mime: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
}

fn user_blocks(parts: &[UserPart]) -> Vec<Value> {
    parts
        .iter()
        .map(|part| match part {
            UserPart::Text(text) => json!({"type": "text", "text": text}),
            UserPart::Image { mime, data } => image_block(mime, data),
        })
        .collect()
}

/// The tool call's arguments as the object `tool_use.input` must be (`{}` when they are not one).
fn input_of(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({}),
    }
}

fn assistant_blocks(
    text: &str,
    reasoning: &Option<Reasoning>,
    calls: &[ToolCall],
    origin: &str,
) -> Vec<Value> {
    let mut blocks = Vec::new();
    // Thinking goes back verbatim, signature included, before the tool use, but only to the model that wrote it.
    if let Some(Reasoning { replay: Some(Value::Array(items)), origin: Some(from), .. }) = reasoning
        && from == origin
    {
        blocks.extend(items.iter().cloned());
    }
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in calls {
        blocks.push(json!({"type": "tool_use", "id": ids::for_anthropic(&call.id), "name": call.name, "input": input_of(&call.arguments)}));
    }
    blocks
}

/// A tool result: its text as is, or text and image blocks when it carries images (see `tool_content`).
fn tool_result(call_id: &str, content: &str) -> Value {
    let id = ids::for_anthropic(call_id);
    if !tool_content::has_images(content) {
        return json!({"type": "tool_result", "tool_use_id": id, "content": content});
    }
    let blocks: Vec<Value> = tool_content::parts(content)
        .into_iter()
        .filter(|part| *part != Part::Text(""))
        .map(|part| match part {
            Part::Text(text) => json!({"type": "text", "text": text}),
            Part::Image { mime, data } => image_block(mime, data),
        })
        .collect();
    json!({"type": "tool_result", "tool_use_id": id, "content": blocks})
}

/// Append `blocks` as a `role` message, merged into the previous one when it has the same role (the API wants
/// turns to alternate, and all results of one round in one user message).
fn push(out: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = out.last_mut()
        && last["role"] == role
        && let Some(content) = last["content"].as_array_mut()
    {
        content.extend(blocks);
        return;
    }
    out.push(json!({"role": role, "content": blocks}));
}

/// The `messages` array.
pub fn messages_json(messages: &[Message], origin: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        match message {
            Message::User(parts) => push(&mut out, "user", user_blocks(parts)),
            Message::Assistant { text, reasoning, tool_calls } => {
                push(&mut out, "assistant", assistant_blocks(text, reasoning, tool_calls, origin))
            }
            Message::Tool { call_id, content } => push(&mut out, "user", vec![tool_result(call_id, content)]),
        }
    }
    out
}

/// Mark the last block of `blocks` as a cache breakpoint.
fn cache_last(blocks: &mut [Value]) {
    if let Some(Value::Object(last)) = blocks.last_mut() {
        last.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// The output limit asked for: the configured one, else the catalogue's (capped), else a default.
fn max_tokens(request: &Request, provider: &str) -> u64 {
    if let Some(max) = request.max_output_tokens {
        return u64::from(max);
    }
    catalogue::compiled(provider, &request.model)
        .map(|m| m.output.clamp(1, MAX_DEFAULT_OUTPUT))
        .unwrap_or(DEFAULT_MAX_TOKENS)
}

/// Thinking budget for a reasoning level on models that take a token budget.
fn budget(effort: &str) -> u64 {
    match effort {
        "low" => 2_048,
        "high" => 24_576,
        _ => 8_192,
    }
}

/// The request body. Breakpoints: the last tool, the system prompt, and the last block of the last message.
pub fn body(request: &Request, provider: &str) -> Value {
    let origin = format!("{provider}/{}", request.model);
    let mut messages = messages_json(&request.messages, &origin);
    if let Some(Value::Array(blocks)) = messages.last_mut().map(|m| &mut m["content"]) {
        cache_last(blocks);
    }
    let mut system = vec![json!({"type": "text", "text": request.system})];
    cache_last(&mut system);
    let mut max = max_tokens(request, provider);
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("system".into(), Value::Array(system));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        cache_last(&mut tools);
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), json!({"type": "auto"}));
    }
    if let Some(effort) = &request.reasoning_effort {
        let control = catalogue::compiled(provider, &request.model)
            .and_then(|m| m.reasoning_control.map(str::to_string));
        if control.as_deref() == Some("budget") {
            let budget = budget(effort);
            max = max.max(budget + 4_096);
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        } else {
            body.insert("thinking".into(), json!({"type": "adaptive"}));
            body.insert("output_config".into(), json!({"effort": effort}));
        }
    }
    body.insert("max_tokens".into(), json!(max));
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

/// A content block being streamed.
#[derive(Debug)]
enum Block {
    Text,
    Thinking {
        thinking: String,
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Vec<String>,
    },
    /// Complete at its start (`redacted_thinking`), or unknown: kept for order only.
    Other,
}

/// Accumulates one streamed response.
#[derive(Debug, Default)]
pub struct StreamState {
    origin: String,
    text: String,
    thinking: String,
    /// Thinking and redacted-thinking blocks in stream order, as they go back.
    replay: Vec<Value>,
    blocks: BTreeMap<u64, Block>,
    calls: Vec<ToolCall>,
    stop: Option<FinishReason>,
    usage: Usage,
    cache_creation: u64,
    cache_read: u64,
    input: u64,
    has_usage: bool,
    done: bool,
    /// Bytes of tool input so far (the output cap counts them).
    argument_bytes: u64,
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

/// A mid-stream `error` event or error body, classified like an HTTP error.
fn stream_error(error: &Value) -> Attempt {
    let kind = error.get("type").and_then(Value::as_str).unwrap_or_default();
    let status = match kind {
        "overloaded_error" => 529,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "billing_error" => 402,
        "request_too_large" => 413,
        _ => 400,
    };
    transport::classify(status, &reqwest::header::HeaderMap::new(), &json!({"error": error}).to_string())
}

impl StreamState {
    pub fn new(origin: String) -> Self {
        Self { origin, ..Self::default() }
    }

    fn take_usage(&mut self, usage: &Value) {
        let n = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(v) = n("input_tokens") {
            self.input = v;
            self.has_usage = true;
        }
        if let Some(v) = n("cache_creation_input_tokens") {
            self.cache_creation = v;
        }
        if let Some(v) = n("cache_read_input_tokens") {
            self.cache_read = v;
        }
        if let Some(v) = n("output_tokens") {
            self.usage.output_tokens = v;
            self.has_usage = true;
        }
    }

    fn start(&mut self, index: u64, block: &Value, on_delta: &(dyn Fn(Delta) + Send + Sync)) {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let started = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let initial = text("text");
                if !initial.is_empty() {
                    self.text.push_str(&initial);
                    on_delta(Delta::Text(initial));
                }
                Block::Text
            }
            Some("thinking") => Block::Thinking { thinking: text("thinking"), signature: text("signature") },
            Some("redacted_thinking") => {
                self.replay.push(block.clone());
                Block::Other
            }
            Some("tool_use") => {
                let input = match block.get("input") {
                    Some(Value::Object(map)) if !map.is_empty() => {
                        vec![Value::Object(map.clone()).to_string()]
                    }
                    _ => Vec::new(),
                };
                Block::ToolUse { id: text("id"), name: text("name"), input }
            }
            _ => Block::Other,
        };
        self.blocks.insert(index, started);
    }

    fn delta(&mut self, index: u64, delta: &Value, on_delta: &(dyn Fn(Delta) + Send + Sync)) {
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        let Some(block) = self.blocks.get_mut(&index) else { return };
        match (delta.get("type").and_then(Value::as_str), block) {
            (Some("text_delta"), _) => self.text_delta(index, field("text"), on_delta),
            (Some("thinking_delta"), _) => self.thinking_delta(index, field("thinking"), on_delta),
            (Some("signature_delta"), Block::Thinking { signature, .. }) => {
                signature.push_str(field("signature"))
            }
            (Some("input_json_delta"), Block::ToolUse { input, .. }) => {
                self.argument_bytes += field("partial_json").len() as u64;
                input.push(field("partial_json").to_string())
            }
            _ => {}
        }
    }

    /// Answer text into an open block `index` (of any kind, as the API never mixes them).
    fn text_delta(&mut self, index: u64, text: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) {
        if self.blocks.contains_key(&index) && !text.is_empty() {
            self.text.push_str(text);
            on_delta(Delta::Text(text.to_string()));
        }
    }

    /// Thinking text into the open thinking block `index`.
    fn thinking_delta(&mut self, index: u64, text: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) {
        let Some(Block::Thinking { thinking, .. }) = self.blocks.get_mut(&index) else { return };
        if !text.is_empty() {
            thinking.push_str(text);
            self.thinking.push_str(text);
            on_delta(Delta::Reasoning(text.to_string()));
        }
    }

    fn stop_block(&mut self, index: u64) {
        match self.blocks.remove(&index) {
            Some(Block::Thinking { thinking, signature }) => {
                self.replay.push(json!({"type": "thinking", "thinking": thinking, "signature": signature}));
                if !self.thinking.is_empty() && !self.thinking.ends_with('\n') {
                    self.thinking.push('\n');
                }
            }
            Some(Block::ToolUse { id, name, input }) => self.push_call(id, name, input.concat()),
            _ => {}
        }
    }

    fn push_call(&mut self, id: String, name: String, input: String) {
        let id = if id.is_empty() { ids::generate() } else { id };
        let arguments = if input.trim().is_empty() { "{}".to_string() } else { input };
        self.calls.push(ToolCall { id, name, arguments });
    }

    /// Take one event's data.
    fn data(&mut self, data: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> Result<(), Attempt> {
        if self.hot(data, on_delta) {
            return Ok(());
        }
        self.general(data, on_delta)
    }

    /// The common delta events, read in place (`hot`): true when taken, false for the general way.
    fn hot(&mut self, data: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> bool {
        if let Some(delta) = hot::BlockText::parse(data) {
            match delta.thinking {
                true => self.thinking_delta(delta.index, &delta.text, on_delta),
                false => self.text_delta(delta.index, &delta.text, on_delta),
            }
            return true;
        }
        false
    }

    /// Any event, as a JSON value.
    fn general(&mut self, data: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> Result<(), Attempt> {
        let event: Value = serde_json::from_str(data).map_err(|e| {
            Attempt::Fatal(LlmError::Protocol(format!("undecodable stream event ({e}): {data}")))
        })?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    self.take_usage(usage);
                }
            }
            "content_block_start" => {
                self.start(index, event.get("content_block").unwrap_or(&Value::Null), on_delta)
            }
            "content_block_delta" => self.delta(index, event.get("delta").unwrap_or(&Value::Null), on_delta),
            "content_block_stop" => self.stop_block(index),
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(usage) = event.get("usage") {
                    self.take_usage(usage);
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(stream_error(event.get("error").unwrap_or(&Value::Null))),
            _ => {}
        }
        Ok(())
    }

    fn finish(mut self) -> Response {
        // Blocks never stopped (a server that skips `content_block_stop`) still count.
        let open: Vec<u64> = self.blocks.keys().copied().collect();
        for index in open {
            self.stop_block(index);
        }
        let mut finish = self.stop.unwrap_or(FinishReason::Stop);
        if !self.calls.is_empty() && finish != FinishReason::Length {
            finish = FinishReason::ToolCalls;
        }
        let reasoning = (!self.replay.is_empty() || !self.thinking.is_empty()).then(|| Reasoning {
            field: ReasoningField::Thinking,
            text: self.thinking.trim_end().to_string(),
            replay: (!self.replay.is_empty()).then(|| Value::Array(self.replay)),
            origin: Some(self.origin),
        });
        let usage = self.has_usage.then(|| Usage {
            // Cached tokens are in the window too: the meter counts them.
            input_tokens: self.input + self.cache_creation + self.cache_read,
            cached_tokens: self.cache_read,
            ..self.usage
        });
        Response { text: self.text, reasoning, tool_calls: self.calls, finish, usage, refusal: None }
    }
}

impl Decode for StreamState {
    fn event(
        &mut self,
        event: &sse::Event,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<bool, Attempt> {
        self.data(&event.data, on_delta)?;
        Ok(self.done)
    }

    fn argument_bytes(&self) -> u64 {
        self.argument_bytes
    }

    fn end(self) -> Result<Response, Attempt> {
        if self.done || self.stop.is_some() {
            return Ok(self.finish());
        }
        Err(Attempt::retry("the stream ended before the response was complete", ""))
    }

    fn whole(mut self, body: Value, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> Result<Response, Attempt> {
        if body.get("type").and_then(Value::as_str) == Some("error") {
            return Err(stream_error(body.get("error").unwrap_or(&Value::Null)));
        }
        for (index, block) in body.get("content").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            let index = index as u64;
            match block.get("type").and_then(Value::as_str) {
                Some("thinking") => {
                    let text = block.get("thinking").and_then(Value::as_str).unwrap_or_default();
                    self.thinking.push_str(text);
                    if !text.is_empty() {
                        on_delta(Delta::Reasoning(text.to_string()));
                    }
                    self.replay.push(block.clone());
                }
                Some("tool_use") => {
                    let field =
                        |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
                    let input = block.get("input").map(Value::to_string).unwrap_or_default();
                    self.push_call(field("id"), field("name"), input);
                }
                _ => {
                    self.start(index, block, on_delta);
                    self.blocks.remove(&index);
                }
            }
        }
        if let Some(usage) = body.get("usage") {
            self.take_usage(usage);
        }
        self.stop = body.get("stop_reason").and_then(Value::as_str).map(stop_reason);
        Ok(self.finish())
    }
}

impl MessagesClient {
    async fn run(
        &self,
        request: &Request,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Response, LlmError> {
        self.endpoint.check()?;
        let body = body(request, &self.endpoint.provider);
        let origin = format!("{}/{}", self.endpoint.provider, request.model);
        let path = path(&self.endpoint.base_url, "messages");
        let emitted = AtomicBool::new(false);
        let relay = |delta: Delta| {
            emitted.store(true, Ordering::Relaxed);
            on_delta(delta);
        };
        let key = self.endpoint.api_key.as_deref();
        let attempt = || {
            let state = StreamState::new(origin.clone());
            self.endpoint.stream(&path, |b| authorize(b, key, self.bearer), &body, state, &relay)
        };
        transport::with_retries(&self.endpoint, &emitted, cancel, on_delta, attempt).await
    }
}

impl ModelClient for MessagesClient {
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
