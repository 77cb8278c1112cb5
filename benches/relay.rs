//! Relay overhead per streamed chunk, for each wire format: `cargo bench --bench relay`.
//! A server on loopback (its own thread) streams 20,000 text chunks with no delay. Two figures per dialect:
//! - the client alone (`llm`: HTTP, SSE decoding, JSON, relaying each delta): CPU time of the thread that runs
//!   it (a current-thread runtime, so all of the client's work is on it);
//! - the whole agent (the real binary through ACP: the turn, the event sink, one `agent_message_chunk` per
//!   chunk written to stdout): the child's CPU time from `wait4`, less a run streaming one chunk (start-up,
//!   session, the request itself).
//!
//! Target: at most 3 µs of agent CPU per chunk. Each figure is the median of a few runs.
//!
//! Measured (release, 2 shared cores, with the stream limits): client alone 1.39 µs (chat), 1.44 µs (responses),
//! 1.18 µs (messages); whole agent 27.7 / 20.2 / 19.7 µs per chunk. The client meets the target; the agent's cost
//! is one ACP `agent_message_chunk` per model chunk (serialised and written), which coalescing the updates will cut.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use tinycode::config::{Config, Sources};
use tinycode::llm::{Delta, Message, Request, UserPart};
use tokio_util::sync::CancellationToken;

const CHUNKS: usize = 20_000;
const RUNS: usize = 5;

/// The dialects: (label, provider kind, path the server answers).
const DIALECTS: [(&str, &str); 3] =
    [("chat", "openai-compatible"), ("responses", "openai"), ("messages", "anthropic")];

/// A streamed answer of `n` text chunks in `kind`'s wire format.
fn stream(kind: &str, n: usize) -> String {
    let mut body = String::new();
    let event = |body: &mut String, name: &str, data: serde_json::Value| {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    match kind {
        "openai-compatible" => {
            for _ in 0..n {
                let chunk = json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "word "}, "finish_reason": null}]});
                body.push_str(&format!("data: {chunk}\n\n"));
            }
            body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        }
        "openai" => {
            for i in 0..n {
                let data = json!({"type": "response.output_text.delta", "sequence_number": i, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "word "});
                event(&mut body, "response.output_text.delta", data);
            }
            event(
                &mut body,
                "response.completed",
                json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 10, "output_tokens": n}}}),
            );
        }
        _ => {
            event(
                &mut body,
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
            );
            event(
                &mut body,
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            );
            for _ in 0..n {
                event(
                    &mut body,
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "word "}}),
                );
            }
            event(&mut body, "content_block_stop", json!({"type": "content_block_stop", "index": 0}));
            event(
                &mut body,
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": n}}),
            );
            event(&mut body, "message_stop", json!({"type": "message_stop"}));
        }
    }
    body
}

/// A server answering every request with `body` (and `GET …/models` with one model), on its own thread.
fn serve(body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let body = body.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                reader.read_line(&mut first).unwrap();
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut request = vec![0; length];
                reader.read_exact(&mut request).unwrap();
                let reply = if first.starts_with("GET") {
                    let list = json!({"data": [{"id": "bench-model"}]}).to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{list}",
                        list.len()
                    )
                } else {
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{body}"
                    )
                };
                let _ = stream.write_all(reply.as_bytes());
            });
        }
    });
    url
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// CPU time (user + system) of the calling thread.
fn thread_cpu() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

fn sources(kind: &str, url: &str, home: &Path) -> Sources {
    let env = [
        ("TINYCODE_PROVIDER", kind),
        ("TINYCODE_BASE_URL", url),
        ("TINYCODE_API_KEY", "k"),
        ("TINYCODE_MODEL", "bench-model"),
    ];
    Sources {
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        user_config_home: Some(home.to_path_buf()),
    }
}

/// CPU per chunk of the client alone.
fn client_alone(kind: &str, home: &Path) -> Duration {
    let url = serve(stream(kind, CHUNKS));
    let config = Config::load_user(&sources(kind, &url, home)).unwrap();
    let client = tinycode::llm::router::client(&config.providers[0], &config);
    let request = Request {
        model: "bench-model".into(),
        system: "s".into(),
        messages: vec![Message::User(vec![UserPart::Text("go".into())])],
        tools: vec![],
        max_output_tokens: Some(64),
        reasoning_effort: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut samples = Vec::new();
    for _ in 0..=RUNS {
        let chunks = std::sync::atomic::AtomicUsize::new(0);
        let on_delta = |d: Delta| {
            if matches!(d, Delta::Text(_)) {
                chunks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        };
        let before = thread_cpu();
        let response =
            runtime.block_on(client.stream(&request, &on_delta, &CancellationToken::new())).unwrap();
        samples.push(thread_cpu() - before);
        assert_eq!((chunks.into_inner(), response.text.len()), (CHUNKS, CHUNKS * 5));
    }
    samples.remove(0); // the first run builds the HTTP client
    median(samples) / CHUNKS as u32
}

/// The real agent's CPU for one prompt whose answer streams `n` chunks.
fn agent_run(kind: &str, n: usize, dir: &Path) -> Duration {
    let url = serve(stream(kind, n));
    let cwd = dir.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tinycode"))
        .arg("acp")
        .env_clear()
        .envs(sources(kind, &url, &dir.join("config")).env)
        .env("HOME", dir)
        .env("TINYCODE_DATA_DIR", dir.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut send = |line: serde_json::Value| writeln!(stdin, "{line}").unwrap();
        let mut until = |id: u64| -> String {
            let mut line = String::new();
            loop {
                line.clear();
                assert!(stdout.read_line(&mut line).unwrap() > 0, "the agent exited");
                if line.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},")) {
                    return line.clone();
                }
            }
        };
        send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        );
        until(1);
        send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}),
        );
        let created: serde_json::Value = serde_json::from_str(&until(2)).unwrap();
        let session = created["result"]["sessionId"].clone();
        send(
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
        );
        let done = until(3);
        assert!(done.contains("end_turn"), "{done}");
    }
    // Closing stdin ends the agent; the children's usage grows by exactly this child's once it is reaped.
    let before = children_cpu();
    child.wait().unwrap();
    children_cpu() - before
}

/// CPU time (user + system) of every reaped child of this process.
fn children_cpu() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

/// CPU per chunk of the whole agent: a 20,000-chunk answer less a one-chunk answer.
fn whole_agent(kind: &str) -> Duration {
    let mut many = Vec::new();
    let mut one = Vec::new();
    for _ in 0..RUNS {
        let dir = tempfile::tempdir().unwrap();
        many.push(agent_run(kind, CHUNKS, dir.path()));
        let dir = tempfile::tempdir().unwrap();
        one.push(agent_run(kind, 1, dir.path()));
    }
    median(many).saturating_sub(median(one)) / (CHUNKS as u32 - 1)
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    println!(
        "relay overhead per streamed chunk ({CHUNKS} chunks, no delay; target <= 3 µs of agent CPU per chunk)"
    );
    for (label, kind) in DIALECTS {
        let alone = client_alone(kind, home.path());
        let agent = whole_agent(kind);
        println!(
            "  {label:<9} client alone {:>5.2} µs/chunk, whole agent through ACP {:>5.2} µs/chunk",
            alone.as_secs_f64() * 1e6,
            agent.as_secs_f64() * 1e6
        );
    }
}
