//! A WebSocket to `tinycode serve` as a line stream, for tests: each line written goes out as one text message,
//! each text message that comes in is read as one line. Shared by the remote suite and the scenario runner.
//! Owns the client handshake and the bridge; what travels over it belongs to the callers.

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_util::sync::CancellationToken;

pub type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;
pub type Writer = Box<dyn AsyncWrite + Unpin + Send>;
pub type Reader = Box<dyn AsyncRead + Unpin + Send>;

/// Open a WebSocket to `address` (`host:port`), presenting `token` as a Bearer header, or in the URL with `query`.
pub async fn connect(address: &str, token: Option<&str>, query: bool) -> Result<Socket, Error> {
    connect_from(address, token, query, None).await
}

/// [`connect`] as a web page of `origin` would (its `Origin` header).
pub async fn connect_from(
    address: &str,
    token: Option<&str>,
    query: bool,
    origin: Option<&str>,
) -> Result<Socket, Error> {
    let url = match (token, query) {
        (Some(token), true) => format!("ws://{address}/?token={token}"),
        _ => format!("ws://{address}/"),
    };
    let mut request = url.into_client_request()?;
    if let (Some(token), false) = (token, query) {
        let bearer = format!("Bearer {token}").parse().map_err(|e| Error::HttpFormat(http_error(e)))?;
        request.headers_mut().insert("authorization", bearer);
    }
    if let Some(origin) = origin {
        let value = origin.parse().map_err(|e| Error::HttpFormat(http_error(e)))?;
        request.headers_mut().insert("origin", value);
    }
    let stream = tokio::net::TcpStream::connect(address).await?;
    tokio_tungstenite::client_async(request, stream).await.map(|(socket, _)| socket)
}

fn http_error(
    e: impl Into<tokio_tungstenite::tungstenite::http::Error>,
) -> tokio_tungstenite::tungstenite::http::Error {
    e.into()
}

/// `socket` as lines. Shutting the writer down closes the socket (a Close frame); the reader ends once the server
/// has closed it too. Aborting the returned task drops the connection at once.
pub fn lines(socket: Socket) -> (Writer, Reader, JoinHandle<()>) {
    let (write, read, bridge, _freeze) = freezable_lines(socket);
    (write, read, bridge)
}

/// [`lines`], and a token that freezes the client: from then on it neither reads nor writes (so it answers no
/// ping) but keeps the connection open, as a suspended laptop does.
pub fn freezable_lines(socket: Socket) -> (Writer, Reader, JoinHandle<()>, CancellationToken) {
    let freeze = CancellationToken::new();
    let frozen = freeze.clone();
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (bridge_read, mut bridge_write) = tokio::io::split(theirs);
    let bridge = tokio::spawn(async move {
        let (mut sink, mut stream) = socket.split();
        let mut lines = BufReader::new(bridge_read).lines();
        let mut sending = true;
        loop {
            tokio::select! {
                () = frozen.cancelled() => break,
                line = lines.next_line(), if sending => match line {
                    Ok(Some(line)) => if sink.send(Message::text(line)).await.is_err() { return },
                    _ => {
                        sending = false;
                        let _ = sink.close().await;
                    }
                },
                message = stream.next() => match message {
                    Some(Ok(Message::Text(text))) => {
                        let framed = format!("{}\n", text.as_str());
                        if bridge_write.write_all(framed.as_bytes()).await.is_err() { return }
                    }
                    Some(Ok(_)) => {}
                    _ => return,
                },
            }
        }
        std::future::pending::<()>().await;
        drop((sink, stream));
    });
    let (read, write) = tokio::io::split(ours);
    (Box::new(write), Box::new(read), bridge, freeze)
}
