//! A small HTTP/1.1 server on 127.0.0.1 for the web tools' tests and benchmark: answers each request with
//! what a route function says, records every request, and can stall a body forever. Also used by
//! `benches/web.rs` (through `#[path]`), so it depends on nothing but tokio.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A status, headers and a body sent with its `Content-Length`.
    Page { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    /// `200`, this type, the body in chunks of `chunk` bytes without a length (`Transfer-Encoding: chunked`).
    Chunked { content_type: String, body: Vec<u8>, chunk: usize },
    /// `200` with a `Content-Length` of `length`, then `first` bytes of it, then nothing ever again.
    Stall { content_type: String, length: usize, first: Vec<u8> },
}

impl Answer {
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Answer {
        Answer::Page {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub fn html(body: &str) -> Answer {
        Answer::ok("text/html; charset=utf-8", body)
    }

    pub fn status(status: u16, content_type: &str, body: &str) -> Answer {
        Answer::Page {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub fn redirect(location: &str) -> Answer {
        Answer::Page { status: 302, headers: vec![("Location".into(), location.into())], body: Vec::new() }
    }
}

/// One request the server saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

type Route = Arc<dyn Fn(&Seen) -> Answer + Send + Sync>;

pub struct WebServer {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebServer {
    pub async fn start(route: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> WebServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let route: Route = Arc::new(route);
        let state = seen.clone();
        let task = tokio::spawn(async move {
            // Connections live in this set, so stopping the server (abort) also ends stalled ones.
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                connections.spawn(serve(stream, route.clone(), state.clone()));
            }
        });
        WebServer { addr, seen, task }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `127.0.0.1:PORT`, as `allow_private` takes it.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn paths(&self) -> Vec<String> {
        self.seen().into_iter().map(|s| s.path).collect()
    }
}

/// Serve requests on one connection until the client closes it.
async fn serve(mut stream: TcpStream, route: Route, seen: Arc<Mutex<Vec<Seen>>>) {
    let mut buffer: Vec<u8> = Vec::new();
    loop {
        let Some(request) = read_request(&mut stream, &mut buffer).await else { return };
        seen.lock().unwrap().push(request.clone());
        if !answer(&mut stream, route(&request)).await {
            return;
        }
    }
}

async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Seen> {
    let mut chunk = [0u8; 8192];
    let end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buffer.len() < end + 4 + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buffer[end + 4..end + 4 + length]).to_string();
    buffer.drain(..end + 4 + length);
    Some(Seen { method, path, headers, body })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

/// Write one answer; false when the connection must end.
async fn answer(stream: &mut TcpStream, answer: Answer) -> bool {
    match answer {
        Answer::Page { status, headers, body } => {
            let mut head =
                format!("HTTP/1.1 {status} {}\r\nContent-Length: {}\r\n", reason(status), body.len());
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await.is_ok() && stream.write_all(&body).await.is_ok()
        }
        Answer::Chunked { content_type, body, chunk } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
            );
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            for piece in body.chunks(chunk.max(1)) {
                let framed = [format!("{:x}\r\n", piece.len()).as_bytes(), piece, b"\r\n"].concat();
                if stream.write_all(&framed).await.is_err() {
                    // The client stopped reading (a capped body): that is the point.
                    return false;
                }
            }
            stream.write_all(b"0\r\n\r\n").await.is_ok()
        }
        Answer::Stall { content_type, length, first } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&first).await;
            std::future::pending::<()>().await;
            false
        }
    }
}
