//! Session persistence through ACP: `cargo bench --bench sessions`.
//! - `session/load` of a stored 1,000-message conversation (250 exchanges of prompt, tool call, result and
//!   answer), from request to answer with the whole replay received. Target: at most 50 ms.
//! - `session/list` over 10,000 stored sessions, first page, with and without a `cwd` filter. Target: at most
//!   20 ms.
//!
//! Each figure is the median of fresh agents (a new process-like `Manager` each run, so nothing is cached).
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Agent, ByteStreams, Client};
use serde_json::json;
use tinycode::agent::AgentEvent;
use tinycode::agent::journal::Journal;
use tinycode::config::Sources;
use tinycode::display::{Kind, Presentation};
use tinycode::llm::{ToolCall, UserPart};
use tinycode::session::Manager;
use tinycode::store::Store;
use tinycode::store::sessions::SessionRow;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

const RUNS: usize = 30;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn row(id: &str, cwd: &str, at: i64) -> SessionRow {
    SessionRow {
        id: id.into(),
        cwd: cwd.into(),
        title: Some(format!("fix the thing in {id}")),
        mode: "build".into(),
        model: Some("m".into()),
        thought_level: None,
        created_at: at,
        updated_at: at,
    }
}

/// 250 exchanges: prompt, tool call (assistant), its start and result, answer: 1,000 stored messages.
async fn conversation(store: &Store, id: &str, cwd: &Path) {
    store.create_session(row(id, &cwd.display().to_string(), 1)).await.unwrap();
    let journal = Journal::new(store.clone(), id);
    let path = cwd.join("src/lib.rs");
    for i in 0..250 {
        let prompt = format!("step {i}: read src/lib.rs and explain the function on line {i}");
        journal.user(
            &format!("user_{i}"),
            &json!([{"type": "text", "text": prompt}]),
            &[UserPart::Text(prompt.clone())],
        );
        let call = ToolCall {
            id: format!("c{i}"),
            name: "read".into(),
            arguments: json!({"file_path": path}).to_string(),
        };
        journal.assistant(&format!("msg_a{i}"), &format!("th_{i}"), "", &None, std::slice::from_ref(&call));
        let presentation =
            Presentation { title: "Read src/lib.rs".into(), kind: Kind::Read, ..Presentation::default() };
        journal.tool_started(&call.id, &call.id, "read", &presentation, &json!({"file_path": path}));
        let output: String = (1..=80).map(|n| format!("{n}\tfn line_{n}() -> u32 {{ {n} }}\n")).collect();
        let finished = AgentEvent::ToolCallFinished {
            call_id: call.id.clone(),
            status: tinycode::agent::ToolStatus::Completed,
            output: output.clone(),
            display: Vec::new(),
            locations: Vec::new(),
            raw_output: json!({"path": path}),
        };
        journal.tool_finished(&call.id, &call.id, &output, false, &finished);
        journal.assistant(
            &format!("msg_b{i}"),
            &format!("th_b{i}"),
            &format!("Line {i} returns {i}."),
            &None,
            &[],
        );
    }
    store.flush().await.unwrap();
}

fn sources(data: &Path) -> Sources {
    let env = [
        ("TINYCODE_BASE_URL", "http://127.0.0.1:9/v1".to_string()),
        ("TINYCODE_MODEL", "m".to_string()),
        ("TINYCODE_DATA_DIR", data.display().to_string()),
        ("HOME", data.display().to_string()),
    ];
    Sources { env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), user_config_home: None }
}

/// A fresh agent on `data` and a connected, initialized client counting `session/update`s.
async fn agent(data: &Path, updates: Arc<AtomicUsize>) -> ConnectionTo<Agent> {
    let (agent_io, client_io) = tokio::io::duplex(1 << 20);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    tokio::spawn(tinycode::acp::serve_with(
        ByteStreams::new(agent_write.compat_write(), agent_read.compat()),
        Manager::new(sources(data)),
    ));
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _ = Client
            .v1()
            .on_receive_notification(
                async move |_n: acp::SessionNotification, _cx| {
                    updates.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                },
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
    // Let the background open of the database finish, as it does while an editor shows its panel.
    cx.send_request(acp::ListSessionsRequest::new().cwd(PathBuf::from("/nowhere")))
        .block_task()
        .await
        .unwrap();
    cx
}

async fn bench_load(data: &Path, cwd: &Path) {
    let mut samples = Vec::new();
    let mut replayed = 0;
    for _ in 0..RUNS {
        let updates = Arc::new(AtomicUsize::new(0));
        let cx = agent(data, updates.clone()).await;
        let start = Instant::now();
        cx.send_request(acp::LoadSessionRequest::new("sess_big".to_string(), cwd.to_path_buf()))
            .block_task()
            .await
            .unwrap();
        samples.push(start.elapsed());
        replayed = updates.load(Ordering::Relaxed);
    }
    println!(
        "session/load of 1,000 messages ({replayed} updates): median {:?} (target <= 50 ms)",
        median(samples)
    );
}

async fn bench_list(data: &Path, cwd: &Path) {
    for (label, filter) in [("all projects", None), ("one project", Some(cwd.to_path_buf()))] {
        let mut samples = Vec::new();
        let mut listed = 0;
        for _ in 0..RUNS {
            let cx = agent(data, Arc::new(AtomicUsize::new(0))).await;
            let start = Instant::now();
            let page = cx
                .send_request(acp::ListSessionsRequest::new().cwd(filter.clone()))
                .block_task()
                .await
                .unwrap();
            samples.push(start.elapsed());
            listed = page.sessions.len();
        }
        println!(
            "session/list over 10,000 sessions, {label} (first page of {listed}): median {:?} (target <= 20 ms)",
            median(samples)
        );
    }
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let store = Store::open(&data.join("tinycode.db")).unwrap();
    conversation(&store, "sess_big", &cwd).await;
    bench_load(&data, &cwd).await;
    for i in 0..10_000i64 {
        let project = if i % 10 == 0 { cwd.display().to_string() } else { format!("/projects/p{}", i % 97) };
        store.create_session(row(&format!("sess_{i:05}"), &project, 1_000 + i)).await.unwrap();
    }
    store.flush().await.unwrap();
    bench_list(&data, &cwd).await;
}
