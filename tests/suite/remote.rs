//! `tinycode serve`: the same ACP over WebSocket on loopback. A client with the token runs sessions as over stdio;
//! a wrong or missing token gets HTTP 401, a foreign web page 403 and a client past the connection limit 503; each
//! connection has its own sessions; a dropped connection, or one that stops answering pings, cancels its turn and
//! kills the processes the turn started.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::json;
use tinycode::acp::serve::Policy;
use tinycode::acp::serve::liveness::Liveness;
use tokio_util::sync::CancellationToken;

use super::turn::stop;
use crate::support::client::{Answer, PATIENCE, TestClient, sources};
use crate::support::fake_model::{FakeModel, Reply, answer, calls};
use crate::support::trees;
use crate::support::websocket::{self, Socket};

/// How long the killed processes get to disappear from the process table.
const DEATH: Duration = Duration::from_secs(3);

/// A `tinycode serve` on 127.0.0.1 with a workspace and a fake model.
struct Server {
    _root: tempfile::TempDir,
    cwd: PathBuf,
    addr: SocketAddr,
    token: String,
    model: FakeModel,
    stop: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn server(script: Vec<Reply>) -> Server {
    server_with(script, |_| {}).await
}

/// [`server`] with its policy changed by `adjust`.
async fn server_with(script: Vec<Reply>, adjust: impl FnOnce(&mut Policy)) -> Server {
    tinycode::shell::process::use_supervisor(PathBuf::from(env!("CARGO_BIN_EXE_tinycode")));
    let root = tempfile::tempdir().unwrap();
    let (cwd, data, config) =
        (root.path().join("work"), root.path().join("data"), root.path().join("config"));
    std::fs::create_dir_all(&cwd).unwrap();
    let model = FakeModel::start(script).await;
    let sources = sources(&model.base_url, &data, &config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let token = tinycode::acp::serve::new_token().unwrap();
    let stop = CancellationToken::new();
    let manager: Arc<dyn Fn() -> tinycode::session::Manager + Send + Sync> =
        Arc::new(move || tinycode::session::Manager::new(sources.clone()));
    let mut policy = Policy::new(token.clone());
    adjust(&mut policy);
    tokio::spawn(tinycode::acp::serve::accept(listener, Arc::new(policy), manager, stop.clone()));
    Server { _root: root, cwd, addr, token, model, stop }
}

/// Open a WebSocket to `addr`, presenting `token` in the header (or in the URL with `query`).
async fn open(
    addr: SocketAddr,
    token: Option<&str>,
    query: bool,
) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    websocket::connect(&addr.to_string(), token, query).await
}

/// The HTTP status a refused handshake got.
fn refused(opened: Result<Socket, tokio_tungstenite::tungstenite::Error>) -> u16 {
    match opened {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("not an HTTP refusal: {other}"),
        Ok(_) => panic!("it was let in"),
    }
}

/// An ACP test client whose frames travel over `socket`; aborting the returned task drops the connection.
async fn client_over(socket: Socket) -> (TestClient, tokio::task::JoinHandle<()>) {
    let (write, read, bridge) = websocket::lines(socket);
    let client = TestClient::over(write, read, None).await;
    client.initialize(acp::ClientCapabilities::new()).await;
    (client, bridge)
}

#[tokio::test]
async fn a_client_with_the_token_runs_a_session_over_websocket_and_a_second_client_has_its_own_sessions() {
    let server = server(vec![answer(&["hello over ws"]), answer(&["second client"])]).await;
    let (first, _bridge) = client_over(open(server.addr, Some(&server.token), false).await.unwrap()).await;
    let session = first.new_session(&server.cwd).await;
    assert_eq!(stop(&first.prompt(&session, "hi").await.unwrap()), json!("end_turn"));
    let said: Vec<String> = first
        .updates(&session)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(said, vec!["hello over ws"]);

    let (second, _bridge2) = client_over(open(server.addr, Some(&server.token), true).await.unwrap()).await;
    let error = second.prompt(&session, "not mine").await.unwrap_err();
    assert_eq!(
        serde_json::to_value(error.code).unwrap(),
        json!(-32002),
        "the first connection's live session is not the second's"
    );
    let own = second.new_session(&server.cwd).await;
    assert_eq!(stop(&second.prompt(&own, "mine").await.unwrap()), json!("end_turn"));
    server.model.assert_done();
}

#[tokio::test]
async fn a_wrong_or_missing_token_gets_401_and_no_agent() {
    let server = server(vec![]).await;
    for (token, query) in [(Some("0".repeat(64)), false), (Some("wrong".to_string()), true), (None, false)] {
        match open(server.addr, token.as_deref(), query).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 401, "{token:?}")
            }
            Err(other) => panic!("{token:?}: {other}"),
            Ok(_) => panic!("{token:?} was let in"),
        }
    }
    assert!(server.model.requests().is_empty());
}

#[tokio::test]
async fn a_dropped_connection_cancels_its_turn_and_kills_the_processes_it_started() {
    let server = server(vec![]).await;
    let pidfile = server.cwd.join("tree.pids");
    server.model.script(vec![calls(&[(
        "c",
        "bash",
        &json!({"command": trees::script(&pidfile)}).to_string(),
    )])]);
    let (client, bridge) = client_over(open(server.addr, Some(&server.token), false).await.unwrap()).await;
    client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = client.new_session(&server.cwd).await;
    let _turn = client.prompt_later(&session, "start them");
    let pids = trees::pids(&pidfile).await;
    assert_eq!(trees::survivors(&pids, Duration::ZERO).await, pids, "they run until the connection drops");
    bridge.abort();
    drop(client);
    assert_eq!(trees::survivors(&pids, DEATH).await, Vec::<i32>::new());
    server.model.assert_done();
}

#[tokio::test]
async fn serve_refuses_an_address_other_machines_reach_unless_allowed_and_never_listens() {
    let data = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_tinycode"))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env("TINYCODE_DATA_DIR", data.path())
        .env("RUST_LOG", "off")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: refusing to listen on 0.0.0.0:0: it is not a loopback address. Forward a loopback port over SSH instead, or pass --allow-remote to accept connections from other machines.\n"
    );
}

#[tokio::test]
async fn a_web_page_of_a_foreign_origin_gets_403_while_no_origin_loopback_and_allowed_origins_get_in() {
    let server = server_with(vec![answer(&["from a loopback page"])], |policy| {
        policy.allow_origins = vec!["https://editor.example".into()];
    })
    .await;
    let address = server.addr.to_string();
    let from =
        |origin: &'static str| websocket::connect_from(&address, Some(&server.token), false, Some(origin));
    for foreign in
        ["https://evil.example", "http://localhost.evil.example:3000", "null", "http://10.0.0.1:8080"]
    {
        assert_eq!(refused(from(foreign).await), 403, "{foreign}");
    }
    for allowed in
        ["http://127.0.0.1:5173", "http://localhost:3000", "http://[::1]:8080", "https://editor.example"]
    {
        assert!(from(allowed).await.is_ok(), "{allowed}");
    }
    let (client, _bridge) = client_over(from("http://localhost:3000").await.unwrap()).await;
    let session = client.new_session(&server.cwd).await;
    assert_eq!(stop(&client.prompt(&session, "hi").await.unwrap()), json!("end_turn"));
    assert_eq!(server.model.requests().len(), 1, "only the loopback page's prompt reached the model");
}

#[tokio::test]
async fn past_the_connection_limit_a_client_gets_503_and_a_freed_place_can_be_taken_again() {
    let server = server_with(vec![], |policy| policy.max_connections = 2).await;
    let first = open(server.addr, Some(&server.token), false).await.unwrap();
    let _second = open(server.addr, Some(&server.token), false).await.unwrap();
    assert_eq!(refused(open(server.addr, Some(&server.token), false).await), 503);
    drop(first);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match open(server.addr, Some(&server.token), false).await {
            Ok(_) => break,
            Err(e) if tokio::time::Instant::now() < deadline => {
                assert_eq!(refused(Err(e)), 503);
                tokio::task::yield_now().await;
            }
            Err(e) => panic!("the freed place was never taken: {e}"),
        }
    }
}

#[tokio::test]
async fn a_client_that_stops_answering_pings_has_its_turn_cancelled_and_its_processes_ended() {
    let liveness = Liveness { ping_every: Duration::from_millis(200), dead_after: Duration::from_secs(1) };
    let server = server_with(vec![], |policy| policy.liveness = liveness).await;
    let pidfile = server.cwd.join("tree.pids");
    server.model.script(vec![calls(&[(
        "c",
        "bash",
        &json!({"command": trees::script(&pidfile)}).to_string(),
    )])]);
    let socket = open(server.addr, Some(&server.token), false).await.unwrap();
    let (write, read, bridge, freeze) = websocket::freezable_lines(socket);
    let client = TestClient::over(write, read, None).await;
    client.initialize(acp::ClientCapabilities::new()).await;
    client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = client.new_session(&server.cwd).await;
    let _turn = client.prompt_later(&session, "start them");
    let pids = trees::pids(&pidfile).await;
    assert_eq!(trees::survivors(&pids, Duration::ZERO).await, pids, "they run while the client answers");
    freeze.cancel();
    assert_eq!(trees::survivors(&pids, liveness.dead_after + DEATH).await, Vec::<i32>::new());
    assert!(!bridge.is_finished(), "the client never closed its connection");
    server.model.assert_done();
}
