//! `tinycode serve --listen 127.0.0.1:PORT`: the same ACP agent over WebSocket, for editors that run elsewhere
//! (over SSH port forwarding, from WSL or a container). Each WebSocket text message is one JSON-RPC message.
//!
//! - A token is generated at start and printed once to stderr; a client sends it as `Authorization: Bearer
//!   <token>` (or `?token=<token>` in the URL, for clients that cannot set headers). It is compared in constant
//!   time; a wrong or missing token gets HTTP 401 and nothing else.
//! - Only loopback addresses are accepted unless `--allow-remote` is given (then a warning says the traffic is
//!   not encrypted: put it behind SSH or TLS).
//! - Each connection has its own session set (its own session manager, sharing the database like another editor
//!   window would). A dropped connection cancels its turns and kills their processes, as stdin EOF does.
//!
//! Owns the listener, the handshake and the framing. The agent itself is [`super::serve_with`].

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt, TryStreamExt};
use tokio::io::AsyncBufReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Callback, ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_util::compat::TokioAsyncWriteCompatExt;
use tokio_util::sync::CancellationToken;

use crate::cli::Exit;
use crate::config::Sources;
use crate::session::Manager;

/// How long a client has to finish the WebSocket handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest WebSocket message accepted (a prompt with an image, a big replay answer).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// What `tinycode serve` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub listen: SocketAddr,
    pub allow_remote: bool,
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

/// The token a handshake request presents: the `Authorization: Bearer` header, else `?token=` in the URL.
fn presented(request: &Request) -> Option<String> {
    let header = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(|t| t.trim().to_string());
    header.or_else(|| {
        request.uri().query()?.split('&').find_map(|pair| pair.strip_prefix("token=").map(str::to_string))
    })
}

fn refuse(status: StatusCode, text: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(text.to_string()));
    *response.status_mut() = status;
    response
}

/// Accept connections on `listener` until `stop` fires; each gets its own manager from `manager`.
pub async fn accept(
    listener: TcpListener,
    token: Arc<String>,
    manager: Arc<dyn Fn() -> Manager + Send + Sync>,
    stop: CancellationToken,
) {
    loop {
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        let (token, manager, stop) = (token.clone(), manager.clone(), stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = connection(stream, peer, &token, manager()) => {}
                () = stop.cancelled() => {}
            }
        });
    }
}

/// The handshake's token check.
struct TokenCheck<'a>(&'a str);

impl Callback for TokenCheck<'_> {
    fn on_request(self, request: &Request, response: Response) -> Result<Response, ErrorResponse> {
        match presented(request) {
            Some(given) if token_matches(self.0, &given) => Ok(response),
            Some(_) => Err(refuse(StatusCode::UNAUTHORIZED, "wrong token")),
            None => {
                Err(refuse(StatusCode::UNAUTHORIZED, "a token is required: Authorization: Bearer <token>"))
            }
        }
    }
}

/// One client: the handshake with the token check, then ACP until it goes away.
async fn connection(stream: TcpStream, peer: SocketAddr, token: &str, manager: Manager) {
    let check = TokenCheck(token);
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let handshake = tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config));
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
    if let Err(e) = serve_socket(socket, manager).await {
        tracing::warn!(%peer, error = %e, "connection ended with an error");
    }
    tracing::info!(%peer, "client gone; its turns were cancelled");
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
/// outgoing line one text message.
async fn serve_socket<S>(
    socket: WebSocketStream<S>,
    manager: Manager,
) -> Result<(), agent_client_protocol::Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, stream) = socket.split();
    let incoming = stream
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
    let pump = async move {
        let mut lines = tokio::io::BufReader::new(pump_side).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if sink.send(Message::text(line)).await.is_err() {
                return;
            }
        }
        let _ = sink.close().await;
    };
    let (served, ()) = tokio::join!(super::serve_with(transport, manager), pump);
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
    accept(listener, Arc::new(token), manager, stop).await;
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
        Options { listen: listen.parse().unwrap(), allow_remote }
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
