//! LSP base-protocol framing: `Content-Length: N\r\n` (other headers allowed and ignored, names in any case),
//! a blank line, then N bytes of UTF-8 JSON. Header lines and bodies are capped so a broken server cannot make
//! the agent allocate without bound.
//!
//! Owns the byte format. Must not interpret messages.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// The largest message body accepted.
pub const MAX_BODY: usize = 64 << 20;
/// The longest header line accepted.
const MAX_HEADER_LINE: u64 = 8 * 1024;

/// Why a message could not be read. Handled by the client, which treats it as the server breaking.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("malformed header: {0}")]
    Header(String),
    #[error("message of {0} bytes is over the {MAX_BODY}-byte limit")]
    TooLarge(usize),
    #[error("invalid JSON: {0}")]
    Json(String),
}

/// The frame of one message.
pub fn encode(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body.as_bytes());
    frame
}

/// Read one message; `None` at the end of the stream (between messages).
pub async fn read<R: AsyncBufRead + Unpin>(reader: &mut R) -> Result<Option<Value>, FrameError> {
    let mut length: Option<usize> = None;
    let mut first = true;
    loop {
        let mut line = String::new();
        let n = (&mut *reader).take(MAX_HEADER_LINE).read_line(&mut line).await?;
        if n == 0 {
            return if first {
                Ok(None)
            } else {
                Err(FrameError::Header("the stream ended in the headers".into()))
            };
        }
        first = false;
        if !line.ends_with('\n') {
            return Err(FrameError::Header("header line too long".into()));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(FrameError::Header(line.chars().take(80).collect()));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let parsed = value.trim().parse::<usize>().map_err(|_| FrameError::Header(line.into()))?;
            length = Some(parsed);
        }
    }
    let length = length.ok_or_else(|| FrameError::Header("no Content-Length".into()))?;
    if length > MAX_BODY {
        return Err(FrameError::TooLarge(length));
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).await?;
    serde_json::from_slice(&body).map(Some).map_err(|e| FrameError::Json(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn frames_round_trip_with_extra_headers_in_any_case() {
        let mut bytes = encode(&json!({"a": 1}));
        bytes.extend_from_slice(
            b"content-type: application/vscode-jsonrpc; charset=utf-8\r\nCONTENT-LENGTH: 2\r\n\r\n[]",
        );
        let mut reader = tokio::io::BufReader::new(bytes.as_slice());
        assert_eq!(read(&mut reader).await.unwrap(), Some(json!({"a": 1})));
        assert_eq!(read(&mut reader).await.unwrap(), Some(json!([])));
        assert!(read(&mut reader).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn oversized_or_headerless_frames_are_errors() {
        let big = format!("Content-Length: {}\r\n\r\n", MAX_BODY + 1);
        let mut reader = tokio::io::BufReader::new(big.as_bytes());
        assert!(matches!(read(&mut reader).await, Err(FrameError::TooLarge(_))));
        let mut reader = tokio::io::BufReader::new(&b"X-Other: 1\r\n\r\n{}"[..]);
        assert!(matches!(read(&mut reader).await, Err(FrameError::Header(_))));
    }
}
