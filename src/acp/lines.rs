//! Newline-delimited lines from the editor's byte stream, each at most [`MAX_LINE_BYTES`] long. The bytes are not
//! decoded here: a line that is not UTF-8 is still a line, and the framing step answers it. A longer line is not
//! kept: its first bytes are, the rest is skipped up to the next newline, and reading goes on from there.
//!
//! Owns line splitting and the line bound. Must not interpret the bytes.

use futures::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest line kept: 64 MiB. The largest honest frames are prompts carrying screenshots or embedded files
/// (a few MB each in base64) and the editor's answers for large files; a line, its parsed value and the typed
/// request each hold a copy, so one line costs at most a few hundred MB instead of whatever the sender chose.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How much of an over-long line is kept, to answer it (its id) and echo it.
pub const HEAD_BYTES: usize = 4 * 1024;

/// One line as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The whole line, without its `\n` (or `\r\n`).
    Whole(Vec<u8>),
    /// A line over the bound: its first [`HEAD_BYTES`] bytes and its full length.
    TooLong { head: Vec<u8>, len: usize },
}

/// Splits a byte stream into [`Line`]s.
pub struct LineReader<R> {
    inner: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE_BYTES)
    }

    /// A reader with another bound (tests use small ones).
    pub fn with_limit(inner: R, max: usize) -> Self {
        Self { inner, max }
    }

    /// The next line; `None` at the end of the stream. A last line without a newline still counts.
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
        let mut kept = Vec::new();
        let mut len = 0usize;
        loop {
            let buffer = self.inner.fill_buf().await?;
            if buffer.is_empty() {
                if len == 0 {
                    return Ok(None);
                }
                break;
            }
            let newline = buffer.iter().position(|&b| b == b'\n');
            let chunk = &buffer[..newline.unwrap_or(buffer.len())];
            if len.saturating_add(chunk.len()) <= self.max {
                kept.extend_from_slice(chunk);
            } else {
                // Over the bound: keep only the head from now on.
                if kept.len() > HEAD_BYTES {
                    kept.truncate(HEAD_BYTES);
                    kept.shrink_to_fit();
                }
                let room = HEAD_BYTES - kept.len();
                kept.extend_from_slice(&chunk[..room.min(chunk.len())]);
            }
            len = len.saturating_add(chunk.len());
            let consumed = chunk.len() + usize::from(newline.is_some());
            self.inner.consume_unpin(consumed);
            if newline.is_some() {
                break;
            }
        }
        if len > self.max {
            kept.truncate(HEAD_BYTES);
            return Ok(Some(Line::TooLong { head: kept, len }));
        }
        if kept.last() == Some(&b'\r') {
            kept.pop();
        }
        Ok(Some(Line::Whole(kept)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &[u8], max: usize, capacity: usize) -> Vec<Line> {
        let reader = futures::io::BufReader::with_capacity(capacity, input);
        let mut lines = LineReader::with_limit(reader, max);
        futures::executor::block_on(async {
            let mut out = Vec::new();
            while let Some(line) = lines.next().await.unwrap() {
                out.push(line);
            }
            out
        })
    }

    fn whole(text: &[u8]) -> Line {
        Line::Whole(text.to_vec())
    }

    #[test]
    fn lines_split_at_newlines_whatever_the_read_size_and_keep_invalid_utf8() {
        let input = b"one\r\ntwo\xff\n\nlast";
        for capacity in [1, 2, 3, 7, 64] {
            assert_eq!(
                read_all(input, 100, capacity),
                vec![whole(b"one"), whole(b"two\xff"), whole(b""), whole(b"last")],
                "capacity {capacity}"
            );
        }
    }

    #[test]
    fn an_over_long_line_keeps_its_head_and_reading_resumes_at_the_next_line() {
        let long = vec![b'x'; HEAD_BYTES * 3];
        let mut input = b"a\n".to_vec();
        input.extend_from_slice(&long);
        input.extend_from_slice(b"\nb\n");
        for capacity in [5, 1000, 1 << 16] {
            assert_eq!(
                read_all(&input, HEAD_BYTES * 2, capacity),
                vec![
                    whole(b"a"),
                    Line::TooLong { head: vec![b'x'; HEAD_BYTES], len: HEAD_BYTES * 3 },
                    whole(b"b")
                ],
                "capacity {capacity}"
            );
        }
    }

    #[test]
    fn a_line_exactly_at_the_bound_is_whole() {
        assert_eq!(
            read_all(b"abcd\nabcde\n", 4, 2),
            vec![whole(b"abcd"), Line::TooLong { head: b"abcde".to_vec(), len: 5 }]
        );
    }
}
