//! `tinycode serve --listen 127.0.0.1:PORT`: the same ACP agent over WebSocket, for editors that run elsewhere
//! (over SSH port forwarding, from WSL or a container). Each WebSocket text message is one JSON-RPC message.
//!
//! - A token is generated at start and printed once to stderr; a client sends it as `Authorization: Bearer
//!   <token>` (or `?token=<token>` in the URL, for clients that cannot set headers). It is compared in constant
//!   time; a wrong or missing token gets HTTP 401 and nothing else.
//! - A request from a web page must come from a loopback origin or one given with `--allow-origin` (else 403),
//!   and at most `--max-connections` clients are served at once (else 503); see [`handshake`].
//! - Only loopback addresses are accepted unless `--allow-remote` is given (then a warning says the traffic is
//!   not encrypted: put it behind SSH or TLS).
//! - Each connection has its own session set (its own session manager, sharing the database like another editor
//!   window would). A dropped connection, or one silent past the ping timeout ([`liveness`]), cancels its turns
//!   and kills their processes, as stdin EOF does.
//! - When `accept` fails (file descriptors run out) the loop waits, longer each time, and warns once a minute
//!   ([`backoff`]).
//!
//! Owns the listener, the handshake and the framing. The agent itself is [`super::serve_with`].

pub mod backoff;
pub mod handshake;
pub mod liveness;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt, TryStreamExt};
use tokio::io::AsyncBufReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::compat::TokioAsyncWriteCompatExt;
use tokio_util::sync::CancellationToken;

use crate::cli::Exit;
use crate::config::Sources;
use crate::session::Manager;
use liveness::{Liveness, Seen};

/// How long a client has to finish the WebSocket handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest WebSocket message accepted (a prompt with an image, a big replay answer).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Clients served at once by default.
pub const MAX_CONNECTIONS: usize = 16;
/// How long the closing handshake with a client that is going away may take.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// What `tinycode serve` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub listen: SocketAddr,
    pub allow_remote: bool,
    /// Origins allowed besides none and loopback ones, as [`handshake::parse_origin`] returns them.
    pub allow_origins: Vec<String>,
    pub max_connections: usize,
    pub liveness: Liveness,
}

impl Options {
    /// Serve `listen` with the defaults.
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            allow_remote: false,
            allow_origins: Vec::new(),
            max_connections: MAX_CONNECTIONS,
            liveness: Liveness::default(),
        }
    }
}

impl TryFrom<&crate::cli::ServeArgs> for Options {
    type Error = String;

    fn try_from(args: &crate::cli::ServeArgs) -> Result<Self, String> {
        let allow_origins =
            args.allow_origin.iter().map(|o| handshake::parse_origin(o)).collect::<Result<_, _>>()?;
        let liveness = Liveness {
            ping_every: Duration::from_secs(args.ping_interval),
            dead_after: Duration::from_secs(args.ping_timeout),
        };
        liveness.check()?;
        if args.max_connections == 0 {
            return Err("--max-connections must be at least 1".into());
        }
        Ok(Self {
            listen: args.listen,
            allow_remote: args.allow_remote,
            allow_origins,
            max_connections: args.max_connections,
            liveness,
        })
    }
}

/// What every connection is checked against and served with.
#[derive(Debug, Clone)]
pub struct Policy {
    pub token: String,
    pub allow_origins: Vec<String>,
    pub max_connections: usize,
    pub liveness: Liveness,
}

impl Policy {
    /// The defaults, with `token`.
    pub fn new(token: String) -> Self {
        Self {
            token,
            allow_origins: Vec::new(),
            max_connections: MAX_CONNECTIONS,
            liveness: Liveness::default(),
        }
    }

    fn from_options(token: String, options: &Options) -> Self {
        Self {
            token,
            allow_origins: options.allow_origins.clone(),
            max_connections: options.max_connections,
            liveness: options.liveness,
        }
    }
}

/// Refuse a non-loopback address without `--allow-remote`; with it, the warning to print.
pub fn check_listen(options: &Options) -> Result<Option<String>, String> {
    if options.listen.ip().is_loopback() {
        return Ok(None);
    }
    if !options.allow_remote {
        return Err(format!(
            "refusing to listen on {}: it is not a loopback address. Forward a loopback port over SSH instead, or pass --allow-remote to accept connections from other machines.",
            options.listen
        ));
    }
    Ok(Some(format!(
        "warning: listening on {} for other machines. The connection is not encrypted: anyone who can see the traffic sees your code and the token. Prefer SSH port forwarding or a TLS proxy.",
        options.listen
    )))
}

/// A fresh token: 32 random bytes, hex.
pub fn new_token() -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "no randomness for the token".to_string())?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compare a presented token with the expected one in time that does not depend on where they differ.
pub fn token_matches(expected: &str, presented: &str) -> bool {
    let (a, b) = (expected.as_bytes(), presented.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Accept connections on `listener` until `stop` fires; each gets its own manager from `manager`.
pub async fn accept(
    listener: TcpListener,
    policy: Arc<Policy>,
    manager: Arc<dyn Fn() -> Manager + Send + Sync>,
    stop: CancellationToken,
) {
    let room = Arc::new(Semaphore::new(policy.max_connections));
    let serve = |stream: TcpStream, peer: SocketAddr| {
        let (policy, manager, stop) = (policy.clone(), manager.clone(), stop.clone());
        let permit = room.clone().try_acquire_owned().ok();
        tokio::spawn(async move {
            tokio::select! {
                () = connection(stream, peer, &policy, permit, manager) => {}
                () = stop.cancelled() => {}
            }
        });
    };
    let warn = |warning: &str| tracing::warn!("{warning}");
    backoff::accept_loop(|| listener.accept(), &stop, warn, serve).await;
}

/// One client: the handshake with its checks, then ACP until it goes away or falls silent. Without a `permit`
/// the server is full and the handshake answers 503.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    policy: &Policy,
    permit: Option<OwnedSemaphorePermit>,
    manager: Arc<dyn Fn() -> Manager + Send + Sync>,
) {
    let gate = handshake::Gate {
        token: &policy.token,
        allowed_origins: &policy.allow_origins,
        full: permit.is_none().then_some(policy.max_connections),
    };
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let handshake = tokio_tungstenite::accept_hdr_async_with_config(stream, gate, Some(config));
    let socket = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
        Ok(Ok(socket)) => socket,
        Ok(Err(e)) => {
            tracing::warn!(%peer, error = %e, "WebSocket handshake refused");
            return;
        }
        Err(_) => {
            tracing::warn!(%peer, "WebSocket handshake timed out");
            return;
        }
    };
    tracing::info!(%peer, "client connected");
    if let Err(e) = serve_socket(socket, manager(), policy.liveness).await {
        tracing::warn!(%peer, error = %e, "connection ended with an error");
    }
    tracing::info!(%peer, "client gone; its turns were cancelled");
    drop(permit);
}

/// One WebSocket message as one line for the stdio framing: a newline or carriage return can only be
/// whitespace between JSON tokens (inside a string it must be escaped), so they become spaces.
fn as_line(mut bytes: Vec<u8>) -> Vec<u8> {
    for byte in &mut bytes {
        if matches!(*byte, b'\n' | b'\r') {
            *byte = b' ';
        }
    }
    bytes.push(b'\n');
    bytes
}

/// Serve ACP over an accepted socket through the same framing as stdio ([`super::stdio::Transport`]: bounded
/// lines, an answer to every unreadable message): each incoming text or binary message is one line, and each
/// outgoing line one text message. The peer is pinged as `liveness` says; once it has been silent past the
/// deadline its messages end as if it had closed (the agent cancels its turns) and nothing more is sent to it.
async fn serve_socket<S>(
    socket: WebSocketStream<S>,
    manager: Manager,
    liveness: Liveness,
) -> Result<(), agent_client_protocol::Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, stream) = socket.split();
    let (seen, dead) = (Arc::new(Seen::now()), CancellationToken::new());
    let incoming = stream
        .inspect({
            let seen = seen.clone();
            move |_| seen.touch()
        })
        .take_until(dead.clone().cancelled_owned())
        .take_while(|message| std::future::ready(!matches!(message, Ok(Message::Close(_)) | Err(_))))
        .filter_map(|message| {
            std::future::ready(match message {
                Ok(Message::Text(text)) => Some(Ok(as_line(text.as_bytes().to_vec()))),
                Ok(Message::Binary(bytes)) => Some(Ok(as_line(bytes.to_vec()))),
                _ => None,
            })
        })
        .into_async_read();
    let (agent_side, pump_side) = tokio::io::duplex(1 << 16);
    let transport = super::stdio::Transport::new(agent_side.compat_write(), Box::pin(incoming));
    let (ping, mut pings) = mpsc::channel(1);
    let watchdog = async {
        liveness::watch(liveness, &seen, ping).await;
        tracing::warn!(
            silent_for_secs = liveness.dead_after.as_secs_f64(),
            "the client stopped answering pings; ending its connection"
        );
        dead.cancel();
    };
    let pump = async {
        let mut lines = tokio::io::BufReader::new(pump_side).lines();
        loop {
            let message = tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(line)) => Message::text(line),
                    _ => break,
                },
                Some(()) = pings.recv() => Message::Ping(Default::default()),
                () = dead.cancelled() => return,
            };
            tokio::select! {
                sent = sink.send(message) => if sent.is_err() { return },
                () = dead.cancelled() => return,
            }
        }
        let _ = tokio::time::timeout(CLOSE_GRACE, sink.close()).await;
    };
    let outgoing = async {
        tokio::select! {
            () = pump => {}
            () = watchdog => {}
        }
    };
    let (served, ()) = tokio::join!(super::serve_with(transport, manager), outgoing);
    served
}

fn say(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `tinycode serve`: listen, print the address and the token once, serve until `stop`.
pub async fn run(sources: Sources, options: Options, stop: CancellationToken) -> Result<(), String> {
    if let Some(warning) = check_listen(&options)? {
        say(&format!("{warning}\n"));
    }
    let listener = TcpListener::bind(options.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let token = new_token()?;
    say(&format!(
        "tinycode serve: ACP over WebSocket at ws://{address}/\ntoken (shown once): {token}\nSend it as `Authorization: Bearer <token>` (or ws://{address}/?token=<token>).\n"
    ));
    let manager: Arc<dyn Fn() -> Manager + Send + Sync> = Arc::new(move || Manager::new(sources.clone()));
    accept(listener, Arc::new(Policy::from_options(token, &options)), manager, stop).await;
    Ok(())
}

/// The `serve` subcommand. Stops on SIGINT or SIGTERM.
pub async fn command(options: Options) -> Exit {
    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            stopped().await;
            stop.cancel();
        }
    });
    match run(Sources::from_process(), options, stop).await {
        Ok(()) => Exit::Done,
        Err(e) => {
            say(&format!("error: {e}\n"));
            Exit::Failed
        }
    }
}

/// SIGINT, or SIGTERM on Unix.
async fn stopped() {
    #[cfg(unix)]
    if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        return;
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(listen: &str, allow_remote: bool) -> Options {
        Options { allow_remote, ..Options::new(listen.parse().unwrap()) }
    }

    #[test]
    fn only_loopback_is_served_without_allow_remote() {
        assert_eq!(check_listen(&options("127.0.0.1:1", false)), Ok(None));
        assert_eq!(check_listen(&options("[::1]:1", false)), Ok(None));
        assert!(
            check_listen(&options("0.0.0.0:1", false))
                .unwrap_err()
                .starts_with("refusing to listen on 0.0.0.0:1")
        );
        assert!(
            check_listen(&options("0.0.0.0:1", true))
                .unwrap()
                .unwrap()
                .starts_with("warning: listening on 0.0.0.0:1")
        );
    }

    #[test]
    fn tokens_are_long_random_hex_and_compared_whole() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(token_matches(&a, &a.clone()));
        assert!(!token_matches(&a, &b));
        assert!(!token_matches(&a, &a[..63]));
        assert!(!token_matches(&a, ""));
    }

    #[test]
    fn a_message_becomes_one_line_whatever_whitespace_it_carries() {
        assert_eq!(as_line(b"{\n  \"id\": 1\r\n}".to_vec()), b"{   \"id\": 1  }\n".to_vec());
        assert_eq!(as_line(Vec::new()), b"\n".to_vec());
    }
}
