//! OpenAI Responses over streaming SSE, stateless (`store: false`, the whole transcript every turn, reasoning
//! items sent back with their `encrypted_content`): request building, stream decoding (output items, text deltas,
//! function-call argument deltas and `done`, reasoning summaries and raw reasoning as thoughts, `completed` usage,
//! `incomplete`, `failed` and `error`).
//!
//! Owns this wire format. HTTP, errors and retries belong to `transport`. Every event or item type it does not
//! know is skipped, never an error (PROVIDERS.md §3).

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
    ToolCall, Usage, UserPart, ids,
};

/// A Responses endpoint.
pub struct ResponsesClient {
    endpoint: Endpoint,
}

impl ResponsesClient {
    pub fn new(endpoint: Endpoint) -> Self {
        Self { endpoint }
    }
}

fn user_item(parts: &[UserPart]) -> Value {
    let content: Vec<Value> = parts
        .iter()
        .map(|part| match part {
            UserPart::Text(text) => json!({"type": "input_text", "text": text}),
            UserPart::Image { mime, data } => {
                json!({"type": "input_image", "image_url": format!("data:{mime};base64,{data}")})
            }
        })
        .collect();
    json!({"type": "message", "role": "user", "content": content})
}

/// The reasoning items to send back: only to the model that wrote them, and only those carrying their encrypted
/// content (an item without it makes a stateless request fail with "Item … not found").
fn replayed(reasoning: &Option<Reasoning>, origin: &str) -> Vec<Value> {
    let Some(Reasoning { replay: Some(Value::Array(items)), origin: Some(from), .. }) = reasoning else {
        return Vec::new();
    };
    if from != origin {
        return Vec::new();
    }
    items.iter().filter(|item| item.get("encrypted_content").is_some_and(Value::is_string)).cloned().collect()
}

/// The `input` items.
pub fn input_json(messages: &[Message], origin: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        match message {
            Message::User(parts) => out.push(user_item(parts)),
            Message::Assistant { text, reasoning, tool_calls } => {
                out.extend(replayed(reasoning, origin));
                if !text.is_empty() {
                    out.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
                }
                for call in tool_calls {
                    out.push(json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}));
                }
            }
            Message::Tool { call_id, content } => {
                let output = if tool_content::has_images(content) {
                    let items: Vec<Value> = tool_content::parts(content)
                        .into_iter()
                        .filter(|part| *part != Part::Text(""))
                        .map(|part| match part {
                            Part::Text(text) => json!({"type": "input_text", "text": text}),
                            Part::Image { mime, data } => {
                                json!({"type": "input_image", "image_url": tool_content::data_uri(mime, data)})
                            }
                        })
                        .collect();
                    Value::Array(items)
                } else {
                    json!(content)
                };
                out.push(json!({"type": "function_call_output", "call_id": call_id, "output": output}));
            }
        }
    }
    out
}

/// The request body.
pub fn body(request: &Request, provider: &str) -> Value {
    let origin = format!("{provider}/{}", request.model);
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("instructions".into(), json!(request.system));
    body.insert("input".into(), Value::Array(input_json(&request.messages, &origin)));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), json!("auto"));
        body.insert("parallel_tool_calls".into(), json!(true));
    }
    if let Some(effort) = &request.reasoning_effort {
        body.insert("reasoning".into(), json!({"effort": effort, "summary": "auto"}));
    }
    if let Some(max) = request.max_output_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    body.insert("store".into(), json!(false));
    body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

/// A function call being streamed, by output index.
#[derive(Debug, Default)]
struct Call {
    call_id: String,
    name: String,
    arguments: Vec<String>,
    /// The absolute arguments from `.done` or the finished item, when they came.
    done: Option<String>,
}

/// Accumulates one streamed response.
#[derive(Debug, Default)]
pub struct StreamState {
    origin: String,
    text: String,
    refusal: String,
    thinking: String,
    replay: Vec<Value>,
    calls: BTreeMap<u64, Call>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    done: bool,
    /// Bytes of function-call arguments so far (the output cap counts them).
    argument_bytes: u64,
}

fn usage_of(usage: &Value) -> Option<Usage> {
    let n = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    usage.is_object().then(|| Usage {
        input_tokens: n("/input_tokens"),
        output_tokens: n("/output_tokens"),
        cached_tokens: n("/input_tokens_details/cached_tokens"),
        reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
    })
}

/// A `response.failed` or `error` payload, classified (PROVIDERS.md §3.3).
fn failure(error: &Value) -> Attempt {
    let code = error.get("code").and_then(Value::as_str).unwrap_or_default();
    let message = error.get("message").and_then(Value::as_str).unwrap_or("the response failed").to_string();
    if code == "context_length_exceeded" || transport::is_overflow(&message, code) {
        return Attempt::Fatal(LlmError::ContextOverflow { message });
    }
    if code.starts_with("insufficient_quota") || code == "usage_not_included" {
        return Attempt::Fatal(LlmError::Quota { message });
    }
    if code == "rate_limit_exceeded" || code == "server_error" || code == "server_is_overloaded" {
        let wait = transport::wait_in_message(&message);
        if let Some(wait) = wait.filter(|w| *w > transport::retry::MAX_HONOURED_WAIT) {
            return Attempt::Fatal(LlmError::RateLimited { status: 429, wait, message });
        }
        return Attempt::Retry {
            message: format!("{code}: {message}"),
            reason: code.replace('_', " "),
            wait,
        };
    }
    Attempt::Fatal(LlmError::Rejected {
        status: 400,
        message: if code.is_empty() { message } else { format!("{message} ({code})") },
    })
}

impl StreamState {
    pub fn new(origin: String) -> Self {
        Self { origin, ..Self::default() }
    }

    fn item_added(&mut self, index: u64, item: &Value) {
        if item.get("type").and_then(Value::as_str) == Some("function_call") {
            let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
            let call = self.calls.entry(index).or_default();
            call.call_id = field("call_id");
            call.name = field("name");
            let arguments = field("arguments");
            if !arguments.is_empty() {
                call.arguments.push(arguments);
            }
        }
    }

    fn item_done(&mut self, index: u64, item: &Value) {
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => self.replay.push(item.clone()),
            Some("function_call") => {
                let field = |key: &str| item.get(key).and_then(Value::as_str).map(String::from);
                let call = self.calls.entry(index).or_default();
                if let Some(id) = field("call_id").filter(|id| !id.is_empty()) {
                    call.call_id = id;
                }
                if let Some(name) = field("name").filter(|n| !n.is_empty()) {
                    call.name = name;
                }
                if let Some(arguments) = field("arguments") {
                    call.done = Some(arguments);
                }
            }
            _ => {}
        }
    }

    fn answer(&mut self, text: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) {
        if !text.is_empty() {
            self.text.push_str(text);
            on_delta(Delta::Text(text.to_string()));
        }
    }

    fn thought(&mut self, text: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) {
        if !text.is_empty() {
            self.thinking.push_str(text);
            on_delta(Delta::Reasoning(text.to_string()));
        }
    }

    fn terminal(&mut self, response: &Value) {
        if let Some(usage) = response.get("usage").and_then(usage_of) {
            self.usage = Some(usage);
        }
        self.done = true;
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
        if let Some(delta) = hot::TextDelta::parse(data) {
            match delta {
                hot::TextDelta::Answer(text) => self.answer(&text, on_delta),
                hot::TextDelta::Thought(text) => self.thought(&text, on_delta),
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
        let index = event.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default();
        let response = event.get("response").unwrap_or(&Value::Null);
        match event.get("type").and_then(Value::as_str).unwrap_or_default() {
            "response.output_item.added" => self.item_added(index, event.get("item").unwrap_or(&Value::Null)),
            "response.output_item.done" => self.item_done(index, event.get("item").unwrap_or(&Value::Null)),
            "response.output_text.delta" => self.answer(text("delta"), on_delta),
            "response.refusal.delta" => self.refusal.push_str(text("delta")),
            "response.function_call_arguments.delta" => {
                self.argument_bytes += text("delta").len() as u64;
                self.calls.entry(index).or_default().arguments.push(text("delta").to_string())
            }
            "response.function_call_arguments.done" => {
                self.calls.entry(index).or_default().done = Some(text("arguments").to_string())
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.thought(text("delta"), on_delta)
            }
            // Summary parts are paragraphs: a blank line before every part but the first.
            "response.reasoning_summary_part.added" if !self.thinking.is_empty() => {
                self.thought("\n\n", on_delta)
            }
            "response.completed" => self.terminal(response),
            "response.incomplete" => {
                let reason = response.pointer("/incomplete_details/reason").and_then(Value::as_str);
                self.finish = Some(match reason {
                    Some("content_filter") => FinishReason::ContentFilter,
                    Some("max_output_tokens") | None => FinishReason::Length,
                    Some(other) => FinishReason::Other(other.to_string()),
                });
                self.terminal(response);
            }
            "response.failed" => return Err(failure(response.get("error").unwrap_or(&Value::Null))),
            "error" => return Err(failure(&event)),
            _ => {}
        }
        Ok(())
    }

    fn finish(self) -> Response {
        let calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .filter(|call| !call.name.is_empty())
            .map(|call| {
                let streamed = call.arguments.concat();
                // `done` carries the whole arguments: adopt it when it extends what streamed, never count both.
                let arguments = match call.done {
                    Some(done) if done.len() >= streamed.len() => done,
                    _ => streamed,
                };
                ToolCall {
                    id: if call.call_id.is_empty() { ids::generate() } else { call.call_id },
                    name: call.name,
                    arguments: if arguments.trim().is_empty() { "{}".into() } else { arguments },
                }
            })
            .collect();
        let mut finish = self.finish.unwrap_or(FinishReason::Stop);
        if !calls.is_empty() && finish != FinishReason::Length {
            finish = FinishReason::ToolCalls;
        }
        let thinking = self.thinking.trim().to_string();
        let reasoning = (!self.replay.is_empty() || !thinking.is_empty()).then(|| Reasoning {
            field: ReasoningField::Summary,
            text: thinking,
            replay: (!self.replay.is_empty()).then(|| Value::Array(self.replay)),
            origin: Some(self.origin),
        });
        Response {
            text: self.text,
            reasoning,
            tool_calls: calls,
            finish,
            usage: self.usage,
            refusal: (!self.refusal.is_empty()).then_some(self.refusal),
        }
    }
}

impl Decode for StreamState {
    fn event(
        &mut self,
        event: &sse::Event,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<bool, Attempt> {
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        self.data(&event.data, on_delta)?;
        Ok(self.done)
    }

    fn argument_bytes(&self) -> u64 {
        self.argument_bytes
    }

    fn end(self) -> Result<Response, Attempt> {
        if self.done {
            return Ok(self.finish());
        }
        Err(Attempt::retry("the stream ended before the response was complete", ""))
    }

    fn whole(mut self, body: Value, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> Result<Response, Attempt> {
        if body.get("status").and_then(Value::as_str) == Some("failed") {
            return Err(failure(body.get("error").unwrap_or(&Value::Null)));
        }
        for (index, item) in body.get("output").and_then(Value::as_array).into_iter().flatten().enumerate() {
            match item.get("type").and_then(Value::as_str) {
                Some("message") => {
                    for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                        match part.get("type").and_then(Value::as_str) {
                            Some("output_text") => {
                                let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
                                self.text.push_str(text);
                                if !text.is_empty() {
                                    on_delta(Delta::Text(text.to_string()));
                                }
                            }
                            Some("refusal") => self
                                .refusal
                                .push_str(part.get("refusal").and_then(Value::as_str).unwrap_or_default()),
                            _ => {}
                        }
                    }
                }
                Some("reasoning") => {
                    for summary in item.get("summary").and_then(Value::as_array).into_iter().flatten() {
                        let text = summary.get("text").and_then(Value::as_str).unwrap_or_default();
                        self.thought(text, on_delta);
                    }
                    self.item_done(index as u64, item);
                }
                _ => self.item_done(index as u64, item),
            }
        }
        if body.get("status").and_then(Value::as_str) == Some("incomplete") {
            self.finish = Some(FinishReason::Length);
        }
        self.terminal(&body);
        Ok(self.finish())
    }
}

impl ResponsesClient {
    async fn run(
        &self,
        request: &Request,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Response, LlmError> {
        self.endpoint.check()?;
        let body = body(request, &self.endpoint.provider);
        let origin = format!("{}/{}", self.endpoint.provider, request.model);
        let emitted = AtomicBool::new(false);
        let relay = |delta: Delta| {
            emitted.store(true, Ordering::Relaxed);
            on_delta(delta);
        };
        let key = self.endpoint.api_key.as_deref();
        let attempt = || {
            let state = StreamState::new(origin.clone());
            self.endpoint.stream("/responses", |b| transport::bearer(b, key), &body, state, &relay)
        };
        transport::with_retries(&self.endpoint, &emitted, cancel, on_delta, attempt).await
    }
}

impl ModelClient for ResponsesClient {
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
