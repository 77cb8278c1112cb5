//! MCP servers: `cargo bench --bench mcp`.
//! - `session/new` with three stdio MCP servers against `session/new` without any, over ACP (the servers start in
//!   the background, so the answer must not wait for them). Target: the same, at most 2 ms median.
//! - The overhead of one MCP tool call through tinycode's pipeline (registry lookup, preview, the call, the
//!   result's rendering and truncation check) over the server's own round trip measured by a bare JSON-RPC client
//!   on the same server. Target: at most 1 ms.
//! - How long closing a server takes when it ignores stdin EOF and SIGTERM (bounded at about 2 s).
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Agent, ByteStreams, Client};
use serde_json::{Value, json};
use tinycode::config::Sources;
use tinycode::mcp::spec::{Source, Spec, Transport};
use tinycode::mcp::{Report, Servers};
use tinycode::session::Manager;
use tinycode::tool::{Context, Registry};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

const FIXTURE: &str = env!("CARGO_BIN_EXE_tinycode-mcp-fixture");
const RUNS: usize = 40;
const CALLS: usize = 300;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
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

async fn agent(data: &Path) -> ConnectionTo<Agent> {
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
    cx.send_request(acp::ListSessionsRequest::new().cwd(PathBuf::from("/nowhere")))
        .block_task()
        .await
        .unwrap();
    cx
}

fn server(name: &str) -> acp::McpServer {
    acp::McpServer::Stdio(acp::McpServerStdio::new(name, FIXTURE))
}

async fn bench_session_new(data: &Path, cwd: &Path) {
    let cx = agent(data).await;
    for (label, servers) in
        [("no MCP servers", vec![]), ("three stdio MCP servers", vec![server("a"), server("b"), server("c")])]
    {
        let mut samples = Vec::new();
        for _ in 0..RUNS {
            let start = Instant::now();
            let session = cx
                .send_request(acp::NewSessionRequest::new(cwd.to_path_buf()).mcp_servers(servers.clone()))
                .block_task()
                .await
                .unwrap();
            samples.push(start.elapsed());
            cx.send_request(acp::CloseSessionRequest::new(session.session_id)).block_task().await.unwrap();
        }
        println!(
            "session/new with {label}: median {:?} (target <= 2 ms, the same with or without servers)",
            median(samples)
        );
    }
}

/// The server's own time: a bare JSON-RPC client on the fixture's pipes.
async fn raw_round_trips() -> Duration {
    let mut child = tokio::process::Command::new(FIXTURE)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = async |message: Value| {
        stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})).await;
    lines.next_line().await.unwrap();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let mut samples = Vec::new();
    for id in 1..=CALLS {
        let start = Instant::now();
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}})).await;
        lines.next_line().await.unwrap();
        samples.push(start.elapsed());
    }
    median(samples)
}

fn context(dir: &Path) -> Context {
    Context {
        session_id: "bench".into(),
        call_id: "c".into(),
        directory: dir.to_path_buf(),
        perms: None,
        bus: tinycode::bus::Bus::new(),
        subagent_depth: 0,
        after_hook: None,
        before_run: None,
        cancel: CancellationToken::new(),
        output_dir: dir.join("out"),
        progress: None,
        files: Arc::new(tinycode::workspace::files::Files::new(
            vec![dir.to_path_buf()],
            None,
            Arc::new(Default::default()),
            Default::default(),
        )),
        plan: None,
        tasks: Arc::new(tinycode::shell::tasks::Tasks::new(dir.join("tasks"))),
        terminals: None,
        control: Arc::new(Default::default()),
        edit_mode: Default::default(),
        subagents: None,
        diagnostics: None,
    }
}

/// The same call through tinycode's servers and tool registry.
async fn pipeline_calls(dir: &Path) -> Duration {
    let servers = Servers::new(dir.to_path_buf(), Arc::new(|_: Report| {}));
    servers.apply(vec![Spec {
        name: "fx".into(),
        transport: Ok(Transport::Stdio { command: FIXTURE.into(), args: vec![], env: vec![] }),
        source: Source::Editor,
        enabled: true,
        startup_timeout: Duration::from_secs(10),
        call_timeout: Duration::from_secs(120),
    }]);
    let cancel = CancellationToken::new();
    servers.settled(&cancel).await;
    let registry = Registry::default();
    servers.sync(&registry).await;
    let mut samples = Vec::new();
    for _ in 0..CALLS {
        let start = Instant::now();
        let outcome = registry.execute("mcp__fx__echo", context(dir), json!({"text": "hi"})).await;
        samples.push(start.elapsed());
        assert_eq!(outcome.output, "echo: hi");
    }
    servers.close().await;
    median(samples)
}

async fn bench_close(cwd: &Path) {
    let mut samples = Vec::new();
    for _ in 0..3 {
        let servers = Servers::new(cwd.to_path_buf(), Arc::new(|_: Report| {}));
        servers.apply(vec![Spec {
            name: "stubborn".into(),
            transport: Ok(Transport::Stdio {
                command: FIXTURE.into(),
                args: vec!["--ignore-eof".into()],
                env: vec![],
            }),
            source: Source::Editor,
            enabled: true,
            startup_timeout: Duration::from_secs(10),
            call_timeout: Duration::from_secs(120),
        }]);
        servers.settled(&CancellationToken::new()).await;
        let start = Instant::now();
        servers.close().await;
        samples.push(start.elapsed());
    }
    println!(
        "closing a server that ignores stdin EOF and SIGTERM: median {:?} (bound about 2 s)",
        median(samples)
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    bench_session_new(&data, &cwd).await;
    let raw = raw_round_trips().await;
    let through = pipeline_calls(&cwd).await;
    println!(
        "MCP tool call: bare JSON-RPC round trip {raw:?}, through tinycode {through:?}: overhead {:?} (target <= 1 ms)",
        through.saturating_sub(raw)
    );
    bench_close(&cwd).await;
}
