//! What a subagent costs on top of its own model time: `cargo bench --bench subagent`. Target: at most 5 ms.
//!
//! Three prompts through ACP against a loopback model that answers at once (its replies are chosen from each
//! request, so the order of requests does not matter):
//! - `one`: the model answers (1 model request);
//! - `tool`: the model calls a tool that does nothing (an unknown name), then answers (2 requests);
//! - `task`: the model calls `task` (`explore`, which asks nothing), the child answers, then the parent (3).
//!
//! The model server stamps when each request arrives and when its response is written, so the time spent
//! inside model requests is known. What a prompt spends *between* model requests is its own work: for `tool`,
//! one gap (run the tool, send the result); for `task`, the gap before the child's request (start the child
//! session, its relay, its first request) and the gap after the child's response (finish its turn, make the
//! result, send it to the parent's next request). The subagent's overhead is `task gaps − tool gap`: what a
//! subagent round trip costs beyond a trivial tool call, its own model request excluded. Medians of 50 runs.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Agent, ByteStreams, Client};
use serde_json::{Value, json};
use tinycode::config::Sources;
use tinycode::session::Manager;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

const RUNS: usize = 50;

/// When each request arrived and its response was written, in order.
static STAMPS: std::sync::Mutex<Vec<(Instant, Instant)>> = std::sync::Mutex::new(Vec::new());

/// Time between model requests: from each response's end to the next request's arrival.
fn gaps() -> Duration {
    let stamps = std::mem::take(&mut *STAMPS.lock().unwrap());
    stamps.windows(2).map(|w| w[1].0.saturating_duration_since(w[0].1)).sum()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn sse(events: &[Value]) -> String {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{body}data: [DONE]\n\n"
    )
}

fn text(words: &str) -> String {
    sse(&[
        json!({"choices": [{"index": 0, "delta": {"content": words}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ])
}

fn call(name: &str, arguments: Value) -> String {
    let call = json!({"index": 0, "id": "c1", "type": "function", "function": {"name": name, "arguments": arguments.to_string()}});
    sse(&[
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ])
}

/// The reply to one chat request, from what it contains.
fn reply(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let first_user = messages.iter().find(|m| m["role"] == "user").map(|m| m["content"].to_string());
    let last = messages.last().cloned().unwrap_or_default();
    if first_user.is_some_and(|u| u.contains("CHILD")) || last["role"] == "tool" {
        return text("done");
    }
    match last["content"].as_str().unwrap_or("") {
        "tool" => call("nothing_at_all", json!({})),
        "task" => call(
            "task",
            json!({"description": "Look", "prompt": "CHILD: say done", "subagent_type": "explore"}),
        ),
        _ => text("done"),
    }
}

async fn serve(listener: TcpListener) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else { return };
        tokio::spawn(async move {
            let arrived = Instant::now();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 16384];
            let (head_end, length) = loop {
                let n = stream.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    return;
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..pos]).to_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| {
                            l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    break (pos + 4, length);
                }
            };
            while buf.len() < head_end + length {
                let n = stream.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
            let answer = if body.is_null() { text("done") } else { reply(&body) };
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
            STAMPS.lock().unwrap().push((arrived, Instant::now()));
        });
    }
}

fn sources(base_url: &str, data: &Path) -> Sources {
    let env = [
        ("TINYCODE_BASE_URL", base_url.to_string()),
        ("TINYCODE_API_KEY", "k".to_string()),
        ("TINYCODE_MODEL", "m".to_string()),
        ("TINYCODE_DATA_DIR", data.display().to_string()),
        ("HOME", data.display().to_string()),
    ];
    Sources { env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), user_config_home: None }
}

async fn agent(base_url: &str, data: &Path) -> ConnectionTo<Agent> {
    let (agent_io, client_io) = tokio::io::duplex(1 << 20);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    tokio::spawn(tinycode::acp::serve_with(
        ByteStreams::new(agent_write.compat_write(), agent_read.compat()),
        Manager::new(sources(base_url, data)),
    ));
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _ = Client
            .v1()
            .on_receive_notification(
                async move |_n: acp::SessionNotification, _cx| Ok(()),
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_with(
                ByteStreams::new(client_write.compat_write(), client_read.compat()),
                async move |cx| {
                    let _ = tx.send(cx);
                    std::future::pending::<Result<(), agent_client_protocol::Error>>().await
                },
            )
            .await;
    });
    let cx = rx.await.unwrap();
    cx.send_request(acp::InitializeRequest::new(ProtocolVersion::V1)).block_task().await.unwrap();
    cx
}

async fn prompt(cx: &ConnectionTo<Agent>, session: &acp::SessionId, text: &str) -> Duration {
    let request = acp::PromptRequest::new(
        session.clone(),
        vec![acp::ContentBlock::Text(acp::TextContent::new(text.to_string()))],
    );
    let start = Instant::now();
    let response = cx.send_request(request).block_task().await.unwrap();
    assert_eq!(response.stop_reason, acp::StopReason::EndTurn);
    start.elapsed()
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (data, cwd) = (dir.path().join("data"), dir.path().join("work"));
    std::fs::create_dir_all(&cwd).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(serve(listener));
    let cx = agent(&base_url, &data).await;
    let (mut one, mut tool, mut task) = (Vec::new(), Vec::new(), Vec::new());
    let (mut tool_gaps, mut task_gaps) = (Vec::new(), Vec::new());
    for run in 0..RUNS + 5 {
        // A fresh session each run, so every history is the same length.
        let session = cx.send_request(acp::NewSessionRequest::new(cwd.clone())).block_task().await.unwrap();
        let times = [
            prompt(&cx, &session.session_id, "one").await,
            prompt(&cx, &session.session_id, "tool").await,
            prompt(&cx, &session.session_id, "task").await,
        ];
        STAMPS.lock().unwrap().clear();
        let tool_gap = {
            prompt(&cx, &session.session_id, "tool").await;
            gaps()
        };
        let task_gap = {
            prompt(&cx, &session.session_id, "task").await;
            gaps()
        };
        if run >= 5 {
            one.push(times[0]);
            tool.push(times[1]);
            task.push(times[2]);
            tool_gaps.push(tool_gap);
            task_gaps.push(task_gap);
        }
    }
    let (tool_gap, task_gap) = (median(tool_gaps), median(task_gaps));
    println!("prompt, 1 model request: median {:?}", median(one));
    println!("prompt, a trivial tool call and 2 requests: median {:?}", median(tool));
    println!("prompt, an explore subagent and 3 requests: median {:?}", median(task));
    println!("time between model requests: trivial tool {tool_gap:?}, subagent round trip {task_gap:?}");
    println!(
        "subagent round trip over a trivial tool call, its own model request excluded: {:?} (target <= 5 ms)",
        task_gap.saturating_sub(tool_gap)
    );
}
