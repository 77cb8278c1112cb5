//! The line limit on a stdio MCP server's output. The SDK drops a line over its limit and only logs it, so the call
//! that line answered waited out its whole timeout and the model was told the server "did not answer". This reader
//! sits between the server's stdout and the SDK and enforces [`MAX_LINE_BYTES`] itself: past it, it ends the
//! partial line (the SDK ignores it as unparsable), discards the rest of the line, and, when the line is an answer
//! (it names an `id` and no `method`), puts an error answer with that id and the code [`OVERSIZED`] in its place, so
//! the call fails at once with the real reason and the server stays connected. An oversized request or
//! notification from the server is dropped.
//!
//! The id is read from the line's first bytes (SDKs that write it first) or its last (the TypeScript SDK writes
//! `{"result": ..., "jsonrpc": "2.0", "id": 3}`).
//!
//! Owns that limit. Must not know what a call does with its answer.

use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

/// The longest line (one JSON-RPC message) taken from a stdio server, newline excluded.
pub const MAX_LINE_BYTES: usize = 50 * 1024 * 1024;
/// The error code of the answer put in place of an oversized one (in JSON-RPC's range for implementations).
pub const OVERSIZED: i32 = -32099;
/// Bytes of a line's start and end kept to find its id.
const HEAD: usize = 4096;
const TAIL: usize = 256;
/// Bytes read from the server at a time.
const CHUNK: usize = 64 * 1024;

/// `inner` with lines over `limit` bytes replaced (see the module documentation).
pub struct LineGuard<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line seen so far.
    line: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    /// The current line is over the limit and being discarded.
    discarding: bool,
    /// Bytes ready to be read, from `at`.
    out: Vec<u8>,
    at: usize,
    chunk: Vec<u8>,
}

impl<R> LineGuard<R> {
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE_BYTES)
    }

    pub fn with_limit(inner: R, limit: usize) -> Self {
        LineGuard {
            inner,
            limit,
            line: 0,
            head: Vec::new(),
            tail: Vec::new(),
            discarding: false,
            out: Vec::new(),
            at: 0,
            chunk: vec![0; CHUNK],
        }
    }

    /// Sort the bytes just read into `out`: passed on, or discarded with a replacement at the line's end.
    fn take(&mut self, n: usize) {
        let mut rest = 0..n;
        while !rest.is_empty() {
            let bytes = &self.chunk[rest.clone()];
            let (piece, ends) = match memchr::memchr(b'\n', bytes) {
                Some(i) => (&bytes[..i], true),
                None => (bytes, false),
            };
            let len = piece.len();
            if !self.discarding {
                let room = self.limit - self.line;
                let passed = &piece[..len.min(room)];
                self.out.extend_from_slice(passed);
                let keep = HEAD.saturating_sub(self.head.len()).min(passed.len());
                self.head.extend_from_slice(&passed[..keep]);
                if len > room {
                    // Over the limit: end the partial line here and drop the rest.
                    self.out.push(b'\n');
                    self.discarding = true;
                    remember_tail(&mut self.tail, &piece[room..]);
                }
            } else {
                remember_tail(&mut self.tail, piece);
            }
            self.line += len;
            rest.start += len;
            if ends {
                if self.discarding {
                    tracing::warn!(
                        bytes = self.line,
                        limit = self.limit,
                        "an MCP server sent a line over the limit"
                    );
                    if let Some(answer) = replacement(&self.head, &self.tail, self.limit) {
                        self.out.extend_from_slice(answer.as_bytes());
                    }
                } else {
                    self.out.push(b'\n');
                }
                self.discarding = false;
                self.line = 0;
                self.head.clear();
                self.tail.clear();
                rest.start += 1;
            }
        }
    }
}

fn remember_tail(tail: &mut Vec<u8>, bytes: &[u8]) {
    tail.extend_from_slice(&bytes[bytes.len().saturating_sub(TAIL)..]);
    if tail.len() > TAIL {
        tail.drain(..tail.len() - TAIL);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineGuard<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.at < this.out.len() {
                let n = (this.out.len() - this.at).min(buf.remaining());
                buf.put_slice(&this.out[this.at..this.at + n]);
                this.at += n;
                if this.at == this.out.len() {
                    this.out.clear();
                    this.at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    this.take(n);
                }
            }
        }
    }
}

/// The error answer to put in place of an oversized line, when the line is an answer whose id can be found.
fn replacement(head: &[u8], tail: &[u8], limit: usize) -> Option<String> {
    let (head_id, request) = scan_head(head);
    if request {
        return None;
    }
    let id = head_id.or_else(|| tail_id(tail))?;
    let message = format!("the answer was longer than the {} MB line limit and was discarded", limit >> 20);
    let answer = json!({"jsonrpc": "2.0", "id": id, "error": {"code": OVERSIZED, "message": message}});
    Some(format!("{answer}\n"))
}

/// The `id` among the top-level members the line's first bytes show, and whether they include a `method`.
fn scan_head(head: &[u8]) -> (Option<Value>, bool) {
    let (mut id, mut request) = (None, false);
    let mut i = skip_space(head, 0);
    if head.get(i) != Some(&b'{') {
        return (None, false);
    }
    i += 1;
    loop {
        i = skip_space(head, i);
        let Some(key_end) = string_end(head, i) else { break };
        let key = &head[i..key_end];
        i = skip_space(head, key_end);
        if head.get(i) != Some(&b':') {
            break;
        }
        i = skip_space(head, i + 1);
        let Some(value_end) = value_end(head, i) else { break };
        match key {
            b"\"id\"" => id = serde_json::from_slice::<Value>(&head[i..value_end]).ok().filter(is_id),
            b"\"method\"" => request = true,
            _ => {}
        }
        i = skip_space(head, value_end);
        if head.get(i) != Some(&b',') {
            break;
        }
        i += 1;
    }
    (id, request)
}

fn is_id(value: &Value) -> bool {
    value.is_number() || value.is_string()
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the JSON string starting at `i`, if it is complete.
fn string_end(bytes: &[u8], i: usize) -> Option<usize> {
    if bytes.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    while let Some(&b) = bytes.get(j) {
        match b {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end (exclusive) of the JSON value starting at `i`, if it is complete.
fn value_end(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes.get(i)? {
        b'"' => string_end(bytes, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while let Some(&b) = bytes.get(j) {
                match b {
                    b'"' => {
                        j = string_end(bytes, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let len =
                bytes[i..].iter().position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            Some(i + len)
        }
    }
}

/// The id of a line that ends `"id": <number or string>}`: the last member of the top-level object.
fn tail_id(tail: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(trim_utf8_start(tail)).ok()?.trim_end();
    let body = text.strip_suffix('}')?.trim_end();
    let value_start = if let Some(inner) = body.strip_suffix('"') {
        let mut start = inner.rfind('"')?;
        while inner[..start].ends_with('\\') {
            start = inner[..start].rfind('"')?;
        }
        start
    } else {
        body.rfind(|c: char| {
            !(c.is_ascii_digit() || c == '-' || c == '.' || c == 'e' || c == 'E' || c == '+')
        })? + 1
    };
    let id = serde_json::from_str::<Value>(&body[value_start..]).ok().filter(is_id)?;
    let before =
        body[..value_start].trim_end().strip_suffix(':')?.trim_end().strip_suffix("\"id\"")?.trim_end();
    (before.ends_with(',') || before.ends_with('{')).then_some(id)
}

/// `bytes` without a partial UTF-8 character at its start.
fn trim_utf8_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take(3).take_while(|b| (**b & 0xC0) == 0x80).count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn through(input: &[u8], limit: usize) -> String {
        let mut guard = LineGuard::with_limit(input, limit);
        let mut out = String::new();
        guard.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_unchanged() {
        let input = b"{\"id\":1,\"result\":{}}\n\n{\"method\":\"x\"}\npartial";
        assert_eq!(through(input, 32).await, String::from_utf8(input.to_vec()).unwrap());
    }

    #[tokio::test]
    async fn an_oversized_answer_with_its_id_first_becomes_an_error_answer_with_that_id() {
        let big =
            format!("{{\"id\":7,\"jsonrpc\":\"2.0\",\"result\":{{\"text\":\"{}\"}}}}\n", "x".repeat(5000));
        let input = format!("{big}{{\"id\":8,\"result\":{{}}}}\n");
        let out = through(input.as_bytes(), 100).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], &big[..100], "the partial line is ended so the SDK drops it");
        assert_eq!(
            serde_json::from_str::<Value>(lines[1]).unwrap(),
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": OVERSIZED,
                "message": "the answer was longer than the 0 MB line limit and was discarded"}})
        );
        assert_eq!(lines[2], "{\"id\":8,\"result\":{}}");
        assert_eq!(lines.len(), 3);
    }

    #[tokio::test]
    async fn an_oversized_answer_with_its_id_last_is_found_by_its_end() {
        let big = format!(
            "{{\"result\":{{\"text\":\"{}\"}},\"jsonrpc\":\"2.0\",\"id\":\"abc\"}}\r\n",
            "y".repeat(9000)
        );
        let out = through(big.as_bytes(), 1000).await;
        let answer: Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
        assert_eq!(answer["id"], "abc");
        assert_eq!(answer["error"]["code"], OVERSIZED);
    }

    #[tokio::test]
    async fn an_oversized_request_or_notification_is_dropped() {
        let big = format!(
            "{{\"method\":\"notifications/message\",\"params\":{{\"data\":\"{}\"}},\"jsonrpc\":\"2.0\",\"id\":3}}\n",
            "z".repeat(3000)
        );
        let out = through(big.as_bytes(), 100).await;
        assert_eq!(out, format!("{}\n", &big[..100]));
    }

    #[test]
    fn only_a_top_level_id_at_the_very_end_counts() {
        assert_eq!(tail_id(b"xx\",\"id\":12}"), Some(json!(12)));
        assert_eq!(tail_id(b"xx\", \"id\" : \"a\\\"b\" }\n"), Some(json!("a\"b")));
        assert_eq!(tail_id(b"xx\",\"id\":12},\"more\":1}"), None);
        assert_eq!(tail_id(b"xx\",\"notid\":12}"), None);
        assert_eq!(tail_id(b"xx\",\"id\":null}"), None);
    }
}
