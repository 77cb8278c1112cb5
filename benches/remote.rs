//! Remote benchmark: `cargo bench --bench remote`. What `tinycode serve` costs over the stdio framing:
//! - connecting: TCP connect, WebSocket handshake with the token check, and the `initialize` answer (≤ 10 ms);
//! - a request's round trip (`initialize`, answered without the store) over WebSocket on loopback and over the stdio
//!   framing on an in-process pipe (≤ 1 ms each; the difference is the WebSocket's cost);
//! - a 10 MB text message (a prompt with an image) reaching the agent and its answer coming back (≤ 200 ms).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tinycode::acp::serve::Policy;
use tinycode::config::Sources;
use tinycode::session::Manager;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

fn sources(data: &Path) -> Sources {
    let env = [
        ("TINYCODE_BASE_URL", "http://127.0.0.1:9/v1".to_string()),
        ("TINYCODE_MODEL", "m".to_string()),
        ("TINYCODE_DATA_DIR", data.display().to_string()),
        ("HOME", data.display().to_string()),
    ];
    Sources { env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), user_config_home: None }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn initialize(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}).to_string()
}

async fn connect(addr: std::net::SocketAddr, token: &str) -> Socket {
    let mut request = format!("ws://{addr}/").into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio_tungstenite::client_async(request, stream).await.unwrap().0
}

/// Send `frame` and wait for the answer with `id`.
async fn ask(socket: &mut Socket, frame: String, id: u64) -> Value {
    socket.send(Message::text(frame)).await.unwrap();
    loop {
        let Some(Ok(Message::Text(text))) = socket.next().await else { panic!("connection closed") };
        let value: Value = serde_json::from_str(text.as_str()).unwrap();
        if value["id"] == id {
            return value;
        }
    }
}

#[tokio::main]
async fn main() {
    let data = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let token = tinycode::acp::serve::new_token().unwrap();
    let stop = CancellationToken::new();
    let sources = sources(data.path());
    let manager: Arc<dyn Fn() -> Manager + Send + Sync> = Arc::new(move || Manager::new(sources.clone()));
    tokio::spawn(tinycode::acp::serve::accept(
        listener,
        Arc::new(Policy::new(token.clone())),
        manager,
        stop.clone(),
    ));

    let mut connects = Vec::new();
    for _ in 0..50 {
        let start = Instant::now();
        let mut socket = connect(addr, &token).await;
        ask(&mut socket, initialize(1), 1).await;
        connects.push(start.elapsed());
        socket.close(None).await.unwrap();
    }
    println!(
        "connect + handshake + initialize over WebSocket: median {:?} (target <= 10 ms)",
        median(connects)
    );

    let mut socket = connect(addr, &token).await;
    let mut trips = Vec::new();
    for id in 1..=1_000 {
        let start = Instant::now();
        ask(&mut socket, initialize(id), id).await;
        trips.push(start.elapsed());
    }
    println!("request round trip over WebSocket: median {:?} (target <= 1 ms)", median(trips));

    let (agent_io, client_io) = tokio::io::duplex(1 << 20);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    tokio::spawn(tinycode::acp::serve_with(
        tinycode::acp::stdio::Transport::new(agent_write.compat_write(), agent_read.compat()),
        Manager::new(self::sources(data.path())),
    ));
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut lines = BufReader::new(client_read).lines();
    let mut trips = Vec::new();
    for id in 1..=1_000 {
        let start = Instant::now();
        client_write.write_all(format!("{}\n", initialize(id)).as_bytes()).await.unwrap();
        loop {
            let line = lines.next_line().await.unwrap().unwrap();
            if serde_json::from_str::<Value>(&line).unwrap()["id"] == id {
                break;
            }
        }
        trips.push(start.elapsed());
    }
    println!(
        "request round trip over the stdio framing (in-process pipe): median {:?} (target <= 1 ms)",
        median(trips)
    );

    // An unknown session: the 10 MB prompt is read, checked and answered without a model.
    let image = "A".repeat(10 * 1024 * 1024);
    let mut big = Vec::new();
    for id in 2_000..2_010 {
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": "sess_none", "prompt": [{"type": "image", "data": image, "mimeType": "image/png"}]}}).to_string();
        let start = Instant::now();
        let answer = ask(&mut socket, frame, id).await;
        big.push(start.elapsed());
        assert_eq!(answer["error"]["code"], -32002, "{answer}");
    }
    println!("10 MB message in, answer out, over WebSocket: median {:?} (target <= 200 ms)", median(big));
    stop.cancel();
}
