//! OpenAI-compatible Chat Completions over streaming SSE (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, DeepSeek,
//! OpenRouter): request building, stream decoding and tool-call assembly.
//!
//! Owns this wire format. HTTP, error classification and retries belong to `transport`. Must not know about
//! sessions or ACP.

pub mod assemble;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::transport::{self, Attempt, Decode, sse};
use super::{
    Delta, FinishReason, LlmError, Message, ModelClient, Reasoning, ReasoningField, Request, Response, Usage,
    UserPart,
};
use crate::config::{Config, RetryConfig};
use assemble::Assembler;

/// A Chat Completions endpoint.
pub struct ChatClient {
    base_url: String,
    api_key: Option<String>,
    retry: RetryConfig,
    connect_timeout: Duration,
    idle_timeout: Duration,
}

impl ChatClient {
    pub fn new(config: &Config) -> Self {
        Self {
            base_url: config.base_url.trim_end_matches('/').to_string(),
            api_key: config.api_key.clone(),
            retry: config.retry.clone(),
            connect_timeout: config.connect_timeout,
            idle_timeout: config.stream_idle_timeout,
        }
    }
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
            return Err(transport::classify(status, &reqwest::header::HeaderMap::new(), &chunk.to_string()));
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
                self.reasoning.push_str(text);
                on_delta(Delta::Reasoning(text.to_string()));
                break;
            }
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.text.push_str(text);
            on_delta(Delta::Text(text.to_string()));
        }
        if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.push_str(text);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
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

impl Decode for StreamState {
    fn event(
        &mut self,
        event: &sse::Event,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<bool, Attempt> {
        self.data(&event.data, on_delta)?;
        Ok(self.done)
    }

    fn end(self) -> Result<Response, Attempt> {
        if self.done || self.finish.is_some() {
            return Ok(self.finish());
        }
        Err(Attempt::Retry {
            message: "the stream ended before the response was complete".into(),
            wait: None,
        })
    }
}

impl ChatClient {
    async fn attempt(
        &self,
        body: &Value,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<Response, Attempt> {
        let mut builder = transport::http()
            .map_err(Attempt::Fatal)?
            .post(format!("{}/chat/completions", self.base_url))
            .json(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = transport::send(builder, self.connect_timeout).await?;
        transport::read_events(response, self.idle_timeout, StreamState::default(), on_delta).await
    }

    async fn run(
        &self,
        request: &Request,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Response, LlmError> {
        let body = body(request);
        let emitted = AtomicBool::new(false);
        let relay = |delta: Delta| {
            emitted.store(true, Ordering::Relaxed);
            on_delta(delta);
        };
        transport::with_retries(&self.retry, &emitted, cancel, || self.attempt(&body, &relay)).await
    }
}

/// The model ids the provider offers (`GET {base}/models`). Bounded by the connect timeout; never retried.
pub async fn list_models(config: &Config) -> Result<Vec<String>, LlmError> {
    // The first use builds the client (TLS roots and all): do that off the runtime's threads.
    let client = tokio::task::spawn_blocking(transport::http)
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
        return Err(LlmError::Rejected { status, message: transport::read_error_body(response).await });
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
