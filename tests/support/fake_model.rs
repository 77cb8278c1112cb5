//! A fake OpenAI-compatible streaming server on 127.0.0.1 that plays a script of replies, records every
//! request, and answers any request beyond the script with a loud error (HTTP 400, which is never retried).

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
}

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
        let shared = Arc::new(Mutex::new(Shared { script, models, ..Shared::default() }));
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

    /// Make `GET /v1/models` answer these ids (`None`: fail with HTTP 500).
    pub fn set_models(&self, models: Option<Vec<String>>) {
        self.shared.lock().unwrap().models = models;
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
    if method == "GET" && path == "/v1/models" {
        let models = {
            let mut shared = state.lock().unwrap();
            shared.model_listings += 1;
            let authorization =
                headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.clone());
            shared.listing_authorizations.push(authorization);
            shared.models.clone()
        };
        let reply = match models {
            Some(ids) => {
                let data: Vec<Value> = ids.iter().map(|id| json!({"id": id, "object": "model"})).collect();
                let body = json!({"object": "list", "data": data}).to_string();
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            }
            None => "HTTP/1.1 500 Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
        };
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        return;
    }
    let reply = {
        let mut shared = state.lock().unwrap();
        shared.requests.push(Recorded { method: method.clone(), path: path.clone(), headers, body });
        let reply = shared.script.get(shared.next).cloned();
        match reply {
            Some(reply) if method == "POST" && path == "/v1/chat/completions" => {
                shared.next += 1;
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
