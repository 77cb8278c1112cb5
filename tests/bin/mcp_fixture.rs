//! The MCP server the integration tests talk to, written directly on JSON-RPC (not on the SDK tinycode uses, so
//! the client is checked against an independent implementation). It speaks MCP 2025-11-25 over stdio, or
//! streamable HTTP on 127.0.0.1 with `--http` (it prints `listening URL` and serves until its stdin closes).
//!
//! Tools: `echo` (the text `repeat` times, an unlisted argument, for huge results), `sleep` (reports progress,
//! honours `notifications/cancelled`), `fail`, `image`, `change_list` (adds `added` and sends
//! `tools/list_changed`), `ask` (elicitation), `sample` (sampling), `crash` (exits 3), `cancelled` (the
//! cancellations it saw), `env`, `pid`; a prompt `review` and a resource `mem://notes/today`.
//! Options: `--hold-start PATH` (answer `initialize` only once PATH exists), `--ignore-eof` (outlive stdin's EOF
//! and SIGTERM, with a `sleep` child), `--long-names` (a tool with a 70-character name), `--crash-on-start`.
//!
//! Built only for the tests (the `mcp-fixture` feature, which `cargo test` turns on).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[derive(Default)]
struct State {
    list_changed: bool,
    long_names: bool,
    cancelled: Vec<String>,
    running: HashMap<String, oneshot::Sender<()>>,
    pending: HashMap<String, oneshot::Sender<Value>>,
    next_id: u64,
    child: Option<u32>,
}

type Shared = Arc<Mutex<State>>;
/// Where messages to the client go (stdio only).
type Out = Option<mpsc::UnboundedSender<Value>>;

fn tool(name: &str, description: &str, properties: Value, read_only: bool) -> Value {
    let mut tool = json!({"name": name, "description": description,
        "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": properties}});
    if read_only {
        tool["annotations"] = json!({"readOnlyHint": true});
    }
    tool
}

fn tools(state: &State) -> Vec<Value> {
    let text = json!({"text": {"type": "string"}});
    let mut list = vec![
        tool("echo", "Echo the text back", text.clone(), true),
        tool("sleep", "Sleep for ms milliseconds", json!({"ms": {"type": "integer"}}), false),
        tool("fail", "Fail with a message", json!({"message": {"type": "string"}}), false),
        tool("image", "Return a tiny image", json!({}), true),
        tool("change_list", "Add the tool `added`", json!({}), false),
        tool("ask", "Ask the user a question", json!({"question": {"type": "string"}}), false),
        tool("crash", "Exit at once", json!({}), false),
        tool("cancelled", "The cancellations seen", json!({}), true),
        tool("env", "An environment variable", json!({"name": {"type": "string"}}), true),
        tool("pid", "This process and its child", json!({}), true),
        tool("sample", "Ask the client's model (sampling)", json!({}), false),
    ];
    if state.list_changed {
        list.push(tool("added", "Added by change_list", json!({}), true));
    }
    if state.long_names {
        list.push(tool(&"t".repeat(70), "A tool with a long name", json!({}), true));
    }
    list
}

fn text(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}

async fn call(state: &Shared, out: &Out, id: &Value, params: &Value) -> Option<Value> {
    let args = &params["arguments"];
    let arg = |name: &str| args[name].as_str().unwrap_or_default().to_string();
    Some(match params["name"].as_str().unwrap_or_default() {
        "echo" => {
            let times = args["repeat"].as_u64().map_or(1, |n| n as usize);
            text(format!("echo: {}", arg("text").repeat(times)))
        }
        "fail" => json!({"content": [{"type": "text", "text": arg("message")}], "isError": true}),
        "image" => {
            json!({"content": [{"type": "text", "text": "a red dot"}, {"type": "image", "data": PNG, "mimeType": "image/png"}]})
        }
        "added" => text("the added tool works"),
        "cancelled" => text(format!("cancelled: {:?}", state.lock().unwrap().cancelled)),
        "env" => text(std::env::var(arg("name")).unwrap_or_else(|_| "(unset)".into())),
        "pid" => {
            text(format!("pid {} child {}", std::process::id(), state.lock().unwrap().child.unwrap_or(0)))
        }
        "crash" => {
            eprintln!("crashing on purpose");
            std::process::exit(3);
        }
        "change_list" => {
            state.lock().unwrap().list_changed = true;
            if let Some(out) = out {
                let _ = out.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
            }
            text("the list changed")
        }
        "sleep" => {
            let (tx, rx) = oneshot::channel();
            state.lock().unwrap().running.insert(id.to_string(), tx);
            if let (Some(out), Some(token)) = (out, params["_meta"].get("progressToken")) {
                let _ = out.send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1, "total": 2, "message": "sleeping"}}));
            }
            let ms = args["ms"].as_u64().unwrap_or(1000);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => text(format!("slept {ms} ms")),
                _ = rx => return None,
            }
        }
        "ask" => {
            let params = json!({"mode": "form", "message": arg("question"),
                "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}});
            let answer = ask_client(state, out, "elicitation/create", params).await;
            text(format!("elicitation: {}", answer.get("result").unwrap_or(&answer)))
        }
        "sample" => {
            let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10});
            let answer = ask_client(state, out, "sampling/createMessage", params).await;
            text(format!("sampling: {}", answer.get("error").unwrap_or(&answer)))
        }
        other => return Some(json!({"__error": format!("unknown tool {other}")})),
    })
}

/// Send the client a request and wait for its answer (stdio only).
async fn ask_client(state: &Shared, out: &Out, method: &str, params: Value) -> Value {
    let Some(out) = out else { return json!("requests to the client need stdio") };
    let (tx, rx) = oneshot::channel();
    let request_id = {
        let mut state = state.lock().unwrap();
        state.next_id += 1;
        let request_id = format!("req-{}", state.next_id);
        state.pending.insert(request_id.clone(), tx);
        request_id
    };
    let _ = out.send(json!({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}));
    rx.await.unwrap_or(Value::Null)
}

async fn request(state: &Shared, out: &Out, id: &Value, method: &str, params: &Value) -> Option<Value> {
    let result = match method {
        "initialize" => json!({"protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-11-25"),
            "capabilities": {"tools": {"listChanged": true}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": "fixture", "version": "1.0.0"}}),
        "ping" => json!({}),
        "tools/list" => json!({"tools": tools(&state.lock().unwrap())}),
        "tools/call" => call(state, out, id, params).await?,
        "prompts/list" => json!({"prompts": [{"name": "review", "description": "Review code",
            "arguments": [{"name": "focus", "required": true}, {"name": "style", "required": false}]}]}),
        "prompts/get" => {
            let args = &params["arguments"];
            let focus = args["focus"].as_str().unwrap_or("?");
            let style = args["style"].as_str().unwrap_or("plain");
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": format!("Review focusing on {focus} in {style} style")}}]})
        }
        "resources/list" => {
            json!({"resources": [{"uri": "mem://notes/today", "name": "today", "mimeType": "text/plain", "description": "Today's notes"}]})
        }
        "resources/read" => {
            json!({"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": "Buy milk"}]})
        }
        other => {
            return Some(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no method {other}")}}),
            );
        }
    };
    if let Some(message) = result.get("__error") {
        return Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": message}}));
    }
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn notification(state: &Shared, message: &Value) {
    if message["method"] == "notifications/cancelled" {
        let params = &message["params"];
        let mut state = state.lock().unwrap();
        let id = params["requestId"].to_string();
        state.cancelled.push(format!("{id} ({})", params["reason"].as_str().unwrap_or("no reason")));
        if let Some(running) = state.running.remove(&id) {
            let _ = running.send(());
        }
    }
}

async fn wait_for(path: &str) {
    while !std::path::Path::new(path).exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn stdio(state: Shared, hold: Option<String>, ignore_eof: bool) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(message) = rx.recv().await {
            let mut line = message.to_string();
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        match (message.get("method").and_then(Value::as_str), message.get("id")) {
            (Some(method), Some(id)) => {
                if method == "initialize"
                    && let Some(path) = &hold
                {
                    wait_for(path).await;
                }
                let (state, out, id, method, params) = (
                    state.clone(),
                    Some(tx.clone()),
                    id.clone(),
                    method.to_string(),
                    message["params"].clone(),
                );
                tokio::spawn(async move {
                    if let Some(reply) = request(&state, &out, &id, &method, &params).await {
                        let _ = out.unwrap().send(reply);
                    }
                });
            }
            (Some(_), None) => notification(&state, &message),
            (None, Some(id)) => {
                let waiting = state.lock().unwrap().pending.remove(id.as_str().unwrap_or_default());
                if let Some(waiting) = waiting {
                    let _ = waiting.send(message.clone());
                }
            }
            (None, None) => {}
        }
    }
    if ignore_eof {
        loop {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    }
}

async fn http_one(state: Shared, mut stream: tokio::net::TcpStream) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head, body_start) = loop {
        let Ok(n) = stream.read(&mut chunk).await else { return };
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break (String::from_utf8_lossy(&buffer[..end]).into_owned(), end + 4);
        }
    };
    let length = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buffer.len() < body_start + length {
        let Ok(n) = stream.read(&mut chunk).await else { return };
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let method = head.split_whitespace().next().unwrap_or_default().to_string();
    let respond = |status: &str, extra: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let reply = match method.as_str() {
        "POST" => {
            let message: Value =
                serde_json::from_slice(&buffer[body_start..body_start + length]).unwrap_or(Value::Null);
            match (message.get("method").and_then(Value::as_str), message.get("id")) {
                (Some(name), Some(id)) => {
                    let reply =
                        request(&state, &None, id, name, &message["params"]).await.unwrap_or(Value::Null);
                    let session =
                        if name == "initialize" { "Mcp-Session-Id: fixture-session\r\n" } else { "" };
                    respond(
                        "200 OK",
                        &format!("{session}Content-Type: application/json\r\n"),
                        &reply.to_string(),
                    )
                }
                _ => {
                    notification(&state, &message);
                    respond("202 Accepted", "", "")
                }
            }
        }
        "DELETE" => respond("200 OK", "", ""),
        _ => respond("405 Method Not Allowed", "", ""),
    };
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn http(state: Shared) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("listening http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            tokio::spawn(http_one(state.clone(), stream));
        }
    });
    let mut sink = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut sink).await;
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let hold = args.iter().position(|a| a == "--hold-start").and_then(|i| args.get(i + 1)).cloned();
    if flag("--crash-on-start") {
        eprintln!("cannot start: the fixture was told to fail");
        std::process::exit(7);
    }
    let state: Shared = Arc::new(Mutex::new(State { long_names: flag("--long-names"), ..State::default() }));
    if flag("--ignore-eof") {
        // SAFETY: ignoring a signal has no memory-safety preconditions.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
        let mut child = std::process::Command::new("sleep").arg("300").spawn().unwrap();
        state.lock().unwrap().child = Some(child.id());
        std::thread::spawn(move || child.wait());
    }
    if flag("--http") {
        http(state).await;
    } else {
        stdio(state, hold, flag("--ignore-eof")).await;
    }
}
