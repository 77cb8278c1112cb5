//! OpenAI-compatible Chat Completions over streaming SSE (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, DeepSeek,
//! OpenRouter, …): request building with each provider's quirks (`max_completion_tokens` or `max_tokens`, Mistral's
//! tool ids, reasoning sent back under the key it came in, OpenRouter's `reasoning_details`), stream decoding
//! (reasoning from `reasoning_content`, `reasoning` or `reasoning_details[]`, `{"error":…}` after HTTP 200,
//! unknown finish reasons kept), tool-call assembly, and one whole JSON body from a server that ignores
//! `stream: true`.
//!
//! Owns this wire format. HTTP, error classification and retries belong to `transport`. Must not know about
//! sessions or ACP.

pub mod assemble;
mod hot;

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
use assemble::Assembler;

/// A Chat Completions endpoint.
pub struct ChatClient {
    endpoint: Endpoint,
}

impl ChatClient {
    pub fn new(endpoint: Endpoint) -> Self {
        Self { endpoint }
    }
}

/// What a request body adapts to at one provider and model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `provider/model`: reasoning goes back only to the model that wrote it.
    pub origin: String,
    /// Tool ids must be 9 letters or digits (Mistral, directly or behind a router).
    pub mistral_ids: bool,
    /// The output limit is `max_completion_tokens` (OpenAI's o-series and gpt-5), not `max_tokens`.
    pub completion_tokens: bool,
}

impl Target {
    pub fn new(provider: &str, base_url: &str, model: &str) -> Self {
        let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
        let mistral = ["mistral", "magistral", "codestral", "devstral", "ministral", "pixtral", "mixtral"]
            .iter()
            .any(|family| name.contains(family));
        let openai = base_url.contains("api.openai.com");
        let reasoning_family = ["o1", "o3", "o4", "gpt-5"].iter().any(|prefix| name.starts_with(prefix));
        Self {
            origin: format!("{provider}/{model}"),
            mistral_ids: mistral || base_url.contains("mistral.ai"),
            completion_tokens: openai || (reasoning_family && !model.contains('/')),
        }
    }

    fn id(&self, id: &str) -> String {
        if self.mistral_ids { ids::for_mistral(id) } else { id.to_string() }
    }
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

fn assistant_message(
    text: &str,
    reasoning: &Option<Reasoning>,
    tool_calls: &[ToolCall],
    target: &Target,
) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), if text.is_empty() { Value::Null } else { json!(text) });
    if let Some(reasoning) = reasoning.as_ref().filter(|r| r.goes_back_to(&target.origin)) {
        if matches!(reasoning.field, ReasoningField::ReasoningContent | ReasoningField::Reasoning) {
            message.insert(reasoning.field.key().into(), json!(reasoning.text));
        }
        if let Some(details @ Value::Array(_)) = &reasoning.replay {
            message.insert("reasoning_details".into(), details.clone());
        }
    }
    if !tool_calls.is_empty() {
        let calls: Vec<Value> = tool_calls
            .iter()
            .map(|c| json!({"id": target.id(&c.id), "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

/// What a `tool` message says in place of an image it cannot carry.
const IMAGE_ATTACHED: &str = "The image is attached in the next message.";

/// The `messages` array. Images returned by tools (data URIs, see `tool_content`) cannot travel in `tool`
/// messages, so they are attached in one user message right after the run of tool results.
pub fn messages_json(system: &str, messages: &[Message], target: &Target) -> Vec<Value> {
    let mut out = vec![json!({"role": "system", "content": system})];
    let mut pending_images: Vec<UserPart> = Vec::new();
    for message in messages {
        if !matches!(message, Message::Tool { .. }) && !pending_images.is_empty() {
            out.push(json!({"role": "user", "content": user_content(&std::mem::take(&mut pending_images))}));
        }
        match message {
            Message::User(parts) => out.push(json!({"role": "user", "content": user_content(parts)})),
            Message::Assistant { text, reasoning, tool_calls } => {
                out.push(assistant_message(text, reasoning, tool_calls, target))
            }
            Message::Tool { call_id, content } => {
                let id = target.id(call_id);
                let mut text = Vec::new();
                for part in tool_content::parts(content) {
                    match part {
                        Part::Text(t) => text.push(t),
                        Part::Image { mime, data } => {
                            text.push(IMAGE_ATTACHED);
                            pending_images.push(UserPart::Image { mime: mime.into(), data: data.into() });
                        }
                    }
                }
                out.push(json!({"role": "tool", "tool_call_id": id, "content": text.join("\n\n")}));
            }
        }
    }
    if !pending_images.is_empty() {
        out.push(json!({"role": "user", "content": user_content(&pending_images)}));
    }
    out
}

/// The request body.
pub fn body(request: &Request, target: &Target) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": messages_json(&request.system, &request.messages, target),
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
        let key = if target.completion_tokens { "max_completion_tokens" } else { "max_tokens" };
        body[key] = json!(max);
    }
    if let Some(effort) = &request.reasoning_effort {
        body["reasoning_effort"] = json!(effort);
    }
    body
}

/// Accumulates one streamed response.
#[derive(Default)]
pub struct StreamState {
    origin: String,
    text: String,
    reasoning: String,
    reasoning_field: Option<ReasoningField>,
    /// OpenRouter's `reasoning_details`, merged by `index`, sent back unchanged.
    details: Vec<Value>,
    refusal: String,
    assembler: Assembler,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    done: bool,
    /// Bytes of tool-call arguments so far (the output cap counts them).
    argument_bytes: u64,
}

/// The strings of one delta (or of a whole message), however it was parsed; empty when absent.
struct Parts<'a> {
    reasoning_content: &'a str,
    reasoning: &'a str,
    /// The text of `reasoning_details`, once merged.
    details: Option<String>,
    content: &'a str,
    refusal: &'a str,
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

/// The text of one `reasoning_details` item (`reasoning.text` or `reasoning.summary`; encrypted ones have none).
fn detail_text(item: &Value) -> &str {
    item.get("text").or_else(|| item.get("summary")).and_then(Value::as_str).unwrap_or_default()
}

impl StreamState {
    pub fn new(origin: String) -> Self {
        Self { origin, ..Self::default() }
    }

    /// Merge `reasoning_details` fragments: a new `index` is a new item, the same index extends its strings.
    fn merge_details(&mut self, items: &[Value]) -> String {
        let mut shown = String::new();
        for item in items {
            shown.push_str(detail_text(item));
            let index = item.get("index").and_then(Value::as_u64);
            let existing = index.and_then(|i| {
                self.details.iter_mut().find(|d| d.get("index").and_then(Value::as_u64) == Some(i))
            });
            match (existing, item) {
                (Some(Value::Object(known)), Value::Object(fragment)) => {
                    for (key, value) in fragment {
                        match (known.get_mut(key), value) {
                            (Some(Value::String(old)), Value::String(more))
                                if matches!(key.as_str(), "text" | "summary" | "data") =>
                            {
                                old.push_str(more)
                            }
                            (_, value) if !value.is_null() => {
                                known.insert(key.clone(), value.clone());
                            }
                            _ => {}
                        }
                    }
                }
                _ => self.details.push(item.clone()),
            }
        }
        shown
    }

    fn reason(&mut self, field: ReasoningField, text: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) {
        if text.is_empty() {
            return;
        }
        self.reasoning_field.get_or_insert(field);
        self.reasoning.push_str(text);
        on_delta(Delta::Reasoning(text.to_string()));
    }

    /// Take one `data:` payload.
    fn data(&mut self, data: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> Result<(), Attempt> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if self.hot(data, on_delta) {
            return Ok(());
        }
        self.general(data, on_delta)
    }

    /// The common delta events, read in place (`hot`): true when taken, false for the general way.
    fn hot(&mut self, data: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> bool {
        if let Some(chunk) = hot::Chunk::parse(data) {
            if let Some(choice) = chunk.choices.first() {
                if let Some(delta) = &choice.delta {
                    self.parts(delta.parts(), on_delta);
                }
                if let Some(reason) = &choice.finish_reason {
                    self.finish = Some(FinishReason::parse(reason));
                }
            }
            return true;
        }
        false
    }

    /// Any event, as a JSON value.
    fn general(&mut self, data: &str, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> Result<(), Attempt> {
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            Attempt::Fatal(LlmError::Protocol(format!("undecodable stream chunk ({e}): {data}")))
        })?;
        if let Some(error) = chunk.get("error") {
            let status =
                error.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).unwrap_or(500);
            return Err(transport::classify(status, &reqwest::header::HeaderMap::new(), &chunk.to_string()));
        }
        if let Some(usage) = chunk.get("usage").and_then(usage_of) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else { return Ok(()) };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        self.message(delta, on_delta);
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let arguments = call.pointer("/function/arguments").and_then(Value::as_str).map_or(0, str::len);
            self.argument_bytes += arguments as u64;
            self.assembler.push(call);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(FinishReason::parse(reason));
        }
        Ok(())
    }

    /// The reasoning, text and refusal of one delta (or of a whole message).
    fn message(&mut self, delta: &Value, on_delta: &(dyn Fn(Delta) + Send + Sync)) {
        let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        let details = delta.get("reasoning_details").and_then(Value::as_array).map(|d| self.merge_details(d));
        let parts = Parts {
            reasoning_content: text("reasoning_content"),
            reasoning: text("reasoning"),
            details,
            content: text("content"),
            refusal: text("refusal"),
        };
        self.parts(parts, on_delta);
    }

    fn parts(&mut self, parts: Parts<'_>, on_delta: &(dyn Fn(Delta) + Send + Sync)) {
        // Read order: `reasoning_content`, then `reasoning`, then the details' text (PROVIDERS.md §1.4).
        if !parts.reasoning_content.is_empty() {
            self.reason(ReasoningField::ReasoningContent, parts.reasoning_content, on_delta);
        } else if !parts.reasoning.is_empty() {
            self.reason(ReasoningField::Reasoning, parts.reasoning, on_delta);
        } else if let Some(shown) = parts.details {
            self.reason(ReasoningField::Reasoning, &shown, on_delta);
        }
        if !parts.content.is_empty() {
            self.text.push_str(parts.content);
            on_delta(Delta::Text(parts.content.to_string()));
        }
        self.refusal.push_str(parts.refusal);
    }

    fn finish(self) -> Response {
        let has_calls = !self.assembler.is_empty();
        let mut finish = self.finish.unwrap_or(FinishReason::Stop);
        if has_calls && finish != FinishReason::Length {
            finish = FinishReason::ToolCalls;
        }
        let details = (!self.details.is_empty()).then(|| Value::Array(self.details));
        let reasoning = match (self.reasoning_field, details) {
            (None, None) => None,
            (field, replay) => Some(Reasoning {
                field: field.unwrap_or(ReasoningField::Reasoning),
                text: self.reasoning,
                replay,
                origin: Some(self.origin),
            }),
        };
        Response {
            text: self.text,
            reasoning,
            tool_calls: self.assembler.finish(),
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
        self.data(&event.data, on_delta)?;
        Ok(self.done)
    }

    fn argument_bytes(&self) -> u64 {
        self.argument_bytes
    }

    fn end(self) -> Result<Response, Attempt> {
        if self.done || self.finish.is_some() {
            return Ok(self.finish());
        }
        Err(Attempt::retry("the stream ended before the response was complete", ""))
    }

    fn whole(mut self, body: Value, on_delta: &(dyn Fn(Delta) + Send + Sync)) -> Result<Response, Attempt> {
        if let Some(usage) = body.get("usage").and_then(usage_of) {
            self.usage = Some(usage);
        }
        let Some(choice) = body.get("choices").and_then(|c| c.get(0)) else {
            return Err(Attempt::Fatal(LlmError::Protocol(format!(
                "a response without choices: {}",
                body.to_string().chars().take(300).collect::<String>()
            ))));
        };
        let message = choice.get("message").unwrap_or(&Value::Null);
        self.message(message, on_delta);
        for (index, call) in
            message.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            let mut call = call.clone();
            if call.get("index").is_none() {
                call["index"] = json!(index);
            }
            self.assembler.push(&call);
        }
        self.finish = choice.get("finish_reason").and_then(Value::as_str).map(FinishReason::parse);
        self.done = true;
        Ok(self.finish())
    }
}

impl ChatClient {
    async fn run(
        &self,
        request: &Request,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Response, LlmError> {
        self.endpoint.check()?;
        let target = Target::new(&self.endpoint.provider, &self.endpoint.base_url, &request.model);
        let body = body(request, &target);
        let emitted = AtomicBool::new(false);
        let relay = |delta: Delta| {
            emitted.store(true, Ordering::Relaxed);
            on_delta(delta);
        };
        let key = self.endpoint.api_key.as_deref();
        let attempt = || {
            let state = StreamState::new(target.origin.clone());
            self.endpoint.stream("/chat/completions", |b| transport::bearer(b, key), &body, state, &relay)
        };
        transport::with_retries(&self.endpoint, &emitted, cancel, on_delta, attempt).await
    }
}

impl ModelClient for ChatClient {
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
