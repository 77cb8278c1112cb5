//! A fake model server on 127.0.0.1 that plays a script of replies to whichever wire format is asked (Chat
//! Completions, Responses, Anthropic Messages), records every request, and answers any request beyond the script
//! with a loud error (HTTP 400, which is never retried). It can also pass for a local server (Ollama, LM Studio,
//! llama.cpp, vLLM) by answering that server's fingerprint and model-info endpoints.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `200` with these SSE data payloads followed by `data: [DONE]`.
    Sse(Vec<Value>),
    /// `200`, these payloads, then the connection stays open (no `[DONE]`) until the client goes away.
    Hang(Vec<Value>),
    /// `200`, these payloads, then the connection is closed without `[DONE]`.
    Cut(Vec<Value>),
    /// Raw SSE text, sent as is.
    Raw(String),
    /// `200`, then this SSE text again and again, every `every`, until the client goes away.
    Forever { every: std::time::Duration, text: String },
    /// An error status with headers and a body.
    Status { code: u16, headers: Vec<(String, String)>, body: String },
    /// Any status with a content type and a body (a web page, or one JSON body for a streamed request).
    Page { code: u16, content_type: String, body: String },
}

/// A local server the fake can pass for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persona {
    Ollama,
    LmStudio,
    LlamaCpp,
    Vllm,
}

/// The paths a model request may go to.
const MODEL_PATHS: [&str; 3] = ["/v1/chat/completions", "/v1/responses", "/v1/messages"];

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Shared {
    script: Vec<Reply>,
    next: usize,
    requests: Vec<Recorded>,
    unexpected: Vec<String>,
    /// What `GET /v1/models` answers: the ids, or `None` for a 500.
    models: Option<Vec<String>>,
    model_listings: usize,
    /// The `Authorization` header of every model-list request.
    listing_authorizations: Vec<Option<String>>,
    /// Scripts for requests whose first user message contains a marker (subagents running beside their parent).
    routes: Vec<(String, Vec<Reply>, usize)>,
    /// Requests for anything but the model API and the model list.
    probes: Vec<String>,
    /// The local server this fake passes for.
    persona: Option<Persona>,
    /// The context window it reports (as a local server).
    context: u64,
}

/// The text of a request's first user message (`messages` of Chat Completions and Messages, `input` of
/// Responses).
fn first_user(body: &Value) -> String {
    body["messages"]
        .as_array()
        .or_else(|| body["input"].as_array())
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

pub struct FakeModel {
    pub base_url: String,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeModel {
    pub async fn start(script: Vec<Reply>) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let models = Some(vec!["fake-model".to_string(), "fake-model-large".to_string()]);
        let shared = Arc::new(Mutex::new(Shared { script, models, context: 32_768, ..Shared::default() }));
        let state = shared.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let state = state.clone();
                tokio::spawn(async move { serve(stream, state).await });
            }
        });
        FakeModel { base_url, shared, task }
    }

    /// Append replies to the script (for scripts that need paths known only after setup).
    pub fn script(&self, replies: Vec<Reply>) {
        self.shared.lock().unwrap().script.extend(replies);
    }

    /// Answer requests whose first user message contains `marker` from `replies`, in order, instead of the main
    /// script (a subagent's requests, when they may interleave with its parent's).
    pub fn route(&self, marker: &str, replies: Vec<Reply>) {
        self.shared.lock().unwrap().routes.push((marker.to_string(), replies, 0));
    }

    /// Make `GET /v1/models` answer these ids (`None`: fail with HTTP 500).
    pub fn set_models(&self, models: Option<Vec<String>>) {
        self.shared.lock().unwrap().models = models;
    }

    /// Pass for a local server: answer its fingerprint and model-info endpoints.
    pub fn impersonate(&self, persona: Persona) {
        self.shared.lock().unwrap().persona = Some(persona);
    }

    /// The port the fake listens on.
    pub fn port(&self) -> u16 {
        self.base_url.trim_end_matches("/v1").rsplit(':').next().unwrap().parse().unwrap()
    }

    /// Requests for anything but the model API and the model list (fingerprints, model info), in order.
    pub fn probes(&self) -> Vec<String> {
        self.shared.lock().unwrap().probes.clone()
    }

    /// How many times the model list was requested.
    pub fn model_listings(&self) -> usize {
        self.shared.lock().unwrap().model_listings
    }

    /// The `Authorization` header of every `GET /v1/models`, in order.
    pub fn listing_authorizations(&self) -> Vec<Option<String>> {
        self.shared.lock().unwrap().listing_authorizations.clone()
    }

    /// Every chat request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().unwrap().requests.clone()
    }

    /// The `messages` of request `n`.
    pub fn messages(&self, n: usize) -> Vec<Value> {
        self.requests()[n].body["messages"].as_array().cloned().unwrap_or_default()
    }

    /// Panics unless every scripted reply was used and nothing unexpected arrived.
    pub fn assert_done(&self) {
        let shared = self.shared.lock().unwrap();
        assert!(shared.unexpected.is_empty(), "unexpected requests: {:?}", shared.unexpected);
        assert_eq!(shared.next, shared.script.len(), "scripted replies left unused");
        for (marker, replies, next) in &shared.routes {
            assert_eq!(*next, replies.len(), "replies routed to {marker:?} left unused");
        }
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<(String, String, Vec<(String, String)>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[header_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((method, path, headers, body))
}

fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<Shared>>) {
    let Some((method, path, headers, body)) = read_request(&mut stream).await else { return };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if method == "GET" && path.starts_with("/v1/models") {
        let (models, persona, context) = {
            let mut shared = state.lock().unwrap();
            shared.model_listings += 1;
            let authorization = headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("x-api-key"))
                .map(|(_, v)| v.clone());
            shared.listing_authorizations.push(authorization);
            (shared.models.clone(), shared.persona, shared.context)
        };
        let reply = match models {
            Some(ids) => {
                let vllm = persona == Some(Persona::Vllm);
                let data: Vec<Value> = ids
                    .iter()
                    .map(|id| match vllm {
                        true => {
                            json!({"id": id, "object": "model", "owned_by": "vllm", "max_model_len": context})
                        }
                        false => json!({"id": id, "object": "model"}),
                    })
                    .collect();
                let body = json!({"object": "list", "data": data}).to_string();
                let server = match persona {
                    Some(Persona::Vllm) => "Server: uvicorn\r\n",
                    Some(Persona::LlamaCpp) => "Server: llama.cpp\r\n",
                    _ => "",
                };
                format!(
                    "HTTP/1.1 200 OK\r\n{server}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            }
            None => "HTTP/1.1 500 Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
        };
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        return;
    }
    if method != "POST" || !path.starts_with("/v1/") {
        // Not a model request: a local server's own endpoint, answered when the fake passes for that server.
        let (persona, models, context) = {
            let mut shared = state.lock().unwrap();
            shared.probes.push(format!("{method} {path}"));
            (shared.persona, shared.models.clone().unwrap_or_default(), shared.context)
        };
        let reply = match local_endpoint(persona, &method, &path, &models, context) {
            Some((content_type, body)) => format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
            None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
        };
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        return;
    }
    let reply = {
        let mut shared = state.lock().unwrap();
        let user = first_user(&body);
        shared.requests.push(Recorded { method: method.clone(), path: path.clone(), headers, body });
        let routed = shared.routes.iter_mut().find(|(marker, _, _)| user.contains(marker.as_str()));
        let reply = match routed {
            Some((_, replies, next)) => {
                let reply = replies.get(*next).cloned();
                *next += 1;
                reply.map(|r| (r, true))
            }
            None => shared.script.get(shared.next).cloned().map(|r| (r, false)),
        };
        match reply {
            Some((reply, routed)) if method == "POST" && MODEL_PATHS.contains(&path.as_str()) => {
                if !routed {
                    shared.next += 1;
                }
                reply
            }
            _ => {
                let message =
                    format!("FAKE MODEL: unexpected request #{} {method} {path}", shared.requests.len());
                shared.unexpected.push(message.clone());
                Reply::Status {
                    code: 400,
                    headers: vec![],
                    body: json!({"error": {"message": message}}).to_string(),
                }
            }
        }
    };
    let sse_head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    match reply {
        Reply::Sse(events) => {
            let _ = stream.write_all(format!("{sse_head}{}data: [DONE]\n\n", sse(&events)).as_bytes()).await;
        }
        Reply::Raw(text) => {
            let _ = stream.write_all(format!("{sse_head}{text}").as_bytes()).await;
        }
        Reply::Cut(events) => {
            let _ = stream.write_all(format!("{sse_head}{}", sse(&events)).as_bytes()).await;
        }
        Reply::Hang(events) => {
            let _ = stream.write_all(format!("{sse_head}{}", sse(&events)).as_bytes()).await;
            let _ = stream.flush().await;
            // Wait until the client closes the connection.
            let mut sink = [0u8; 64];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        }
        Reply::Page { code, content_type, body } => {
            let head = format!(
                "HTTP/1.1 {code} Whatever\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(format!("{head}{body}").as_bytes()).await;
        }
        Reply::Forever { every, text } => {
            let _ = stream.write_all(sse_head.as_bytes()).await;
            while stream.write_all(text.as_bytes()).await.is_ok() && stream.flush().await.is_ok() {
                tokio::time::sleep(every).await;
            }
        }
        Reply::Status { code, headers, body } => {
            let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
            let head = format!(
                "HTTP/1.1 {code} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(format!("{head}{body}").as_bytes()).await;
        }
    }
    let _ = stream.shutdown().await;
}

/// What a local server answers on its own endpoints: (content type, body).
fn local_endpoint(
    persona: Option<Persona>,
    method: &str,
    path: &str,
    models: &[String],
    context: u64,
) -> Option<(&'static str, String)> {
    let json = |v: Value| Some(("application/json", v.to_string()));
    match (persona?, method, path) {
        (Persona::Ollama, "GET", "/") => Some(("text/plain", "Ollama is running".to_string())),
        (Persona::Ollama, "GET", "/api/tags") => {
            json(json!({"models": models.iter().map(|m| json!({"name": m, "model": m})).collect::<Vec<_>>()}))
        }
        (Persona::Ollama, "POST", "/api/show") => json(json!({
            "capabilities": ["completion", "tools", "vision"],
            "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}
        })),
        (Persona::Ollama, "GET", "/api/ps") => json(
            json!({"models": models.iter().take(1).map(|m| json!({"name": m, "context_length": context})).collect::<Vec<_>>()}),
        ),
        (Persona::LmStudio, "GET", "/lmstudio-greeting") => json(json!({"lmstudio": true})),
        (Persona::LmStudio, "GET", "/api/v0/models") => json(json!({"data": models.iter().map(|m| json!({
            "id": m, "type": "llm", "state": "loaded", "loaded_context_length": context, "max_context_length": 131072,
            "capabilities": ["tool_use"]
        })).collect::<Vec<_>>()})),
        (Persona::LlamaCpp, "GET", "/props") => json(json!({
            "default_generation_settings": {"n_ctx": context},
            "modalities": {"vision": false},
            "chat_template_caps": {"supports_tool_calls": true}
        })),
        _ => None,
    }
}

/// A recorded stream from `tests/fixtures/providers/`, replayed as is.
pub fn fixture(name: &str) -> Reply {
    let path = format!("{}/tests/fixtures/providers/{name}", env!("CARGO_MANIFEST_DIR"));
    Reply::Raw(std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
}

/// A web page with this status.
pub fn page(code: u16, html: &str) -> Reply {
    Reply::Page { code, content_type: "text/html; charset=utf-8".into(), body: html.into() }
}

/// One whole JSON body with status 200 (a server that ignores `stream: true`).
pub fn whole(body: Value) -> Reply {
    Reply::Page { code: 200, content_type: "application/json".into(), body: body.to_string() }
}

/// A stream of SSE comments (`: keep-alive`) that never sends data, one every `every`.
pub fn comments_forever(every: std::time::Duration) -> Reply {
    Reply::Forever { every, text: ": keep-alive\n\n".into() }
}

/// A text stream that never ends: `text` every `every`.
pub fn text_forever(every: std::time::Duration, text: &str) -> Reply {
    Reply::Forever { every, text: format!("data: {}\n\n", self::text(text)) }
}

/// A chunk carrying text.
pub fn text(text: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
}

/// A chunk carrying reasoning under `field` (`reasoning_content` or `reasoning`).
pub fn reasoning(field: &str, text: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {field: text}, "finish_reason": null}]})
}

/// A chunk carrying one whole tool call.
pub fn tool_call(index: u64, id: &str, name: &str, arguments: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": arguments}}]}, "finish_reason": null}]})
}

/// The final chunk with a finish reason.
pub fn finish(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

/// The usage chunk sent after the last choice.
pub fn usage(prompt: u64, completion: u64) -> Value {
    json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
}

/// A complete text answer.
pub fn answer(words: &[&str]) -> Reply {
    let mut events: Vec<Value> = words.iter().map(|w| text(w)).collect();
    events.push(finish("stop"));
    events.push(usage(100, 10));
    Reply::Sse(events)
}

/// A response that asks for tool calls `(id, name, arguments)`.
pub fn calls(list: &[(&str, &str, &str)]) -> Reply {
    let mut events: Vec<Value> =
        list.iter().enumerate().map(|(i, (id, name, args))| tool_call(i as u64, id, name, args)).collect();
    events.push(finish("tool_calls"));
    Reply::Sse(events)
}

/// An error reply.
pub fn status(code: u16, body: Value, headers: &[(&str, &str)]) -> Reply {
    Reply::Status {
        code,
        headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        body: body.to_string(),
    }
}
