//! `read` of a large UTF-8 file without holding it: the file is read in chunks, its lines are counted and only
//! the wanted window is kept, so a window near the end of a 50 MB file costs a few chunks of memory. The output
//! is byte for byte what [`lines::window`] gives for the whole text (the same `lines::Shown` writes it): the
//! same line splitting (`str::lines` for numbers, the hashline splitter for tags), invalid bytes replaced the
//! same way, the same binary check on the first decoded bytes, and the read ledger's hash of the whole text.
//!
//! Owns the streamed line window. Reads from any `Read`; must not open files or decide when to stream.

use std::io::Read;

use super::lines::{Labels, Shown};
use super::{BINARY_CHECK_SIZE, is_binary};
use crate::tool::ToolError;
use crate::workspace::files::TextHash;

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Bytes read per chunk.
pub const CHUNK: usize = 64 * 1024;

/// What a streamed read found.
#[derive(Debug, PartialEq, Eq)]
pub enum Streamed {
    /// The window (as `lines::window` gives it), and the ledger hash of the whole decoded text when asked for.
    Text { output: String, full: bool, hash: Option<u64> },
    /// The first bytes look binary.
    Binary,
}

/// How a streamed read failed: the file (`Io`) or the window asked for (`Window`, for the model).
#[derive(Debug)]
pub enum StreamError {
    Io(std::io::Error),
    Window(ToolError),
}

/// How a text is windowed: the lines `[offset, offset+limit)`, at most `budget` bytes, labelled by `labels`,
/// read `chunk` bytes at a time; `hashed`: also hash the whole text for the read ledger.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub offset: usize,
    pub limit: usize,
    pub budget: usize,
    pub labels: Labels,
    pub chunk: usize,
    pub hashed: bool,
}

/// The window `ask` describes of the text `reader` holds.
pub fn window(mut reader: impl Read, ask: Ask) -> Result<Streamed, StreamError> {
    let Ask { offset, limit, budget, labels, chunk, hashed } = ask;
    let mut text = Text::new(Shown::new(offset, limit, budget, labels), labels);
    text.hash = hashed.then(TextHash::default);
    let mut buf = vec![0u8; chunk.max(1)];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StreamError::Io(e)),
        };
        if n == 0 {
            break;
        }
        text.feed(&buf[..n]);
        if text.binary == Some(true) {
            return Ok(Streamed::Binary);
        }
    }
    text.end()
}

/// The state of one streamed text.
struct Text {
    shown: Shown,
    labels: Labels,
    /// Line being read (0-based) and whether it is wanted (its raw bytes are then kept in `line`).
    index: usize,
    line: Vec<u8>,
    /// Bytes of the current line seen so far (to tell an empty last line from none).
    line_len: usize,
    /// The first bytes of the text (as many as a byte-order mark has).
    head: Vec<u8>,
    /// Bytes of an unfinished UTF-8 sequence at the end of the last chunk, decoded with the next one.
    carry: Vec<u8>,
    hash: Option<TextHash>,
    /// The first decoded bytes, for the binary check, until it is decided.
    sample: Vec<u8>,
    binary: Option<bool>,
}

impl Text {
    fn new(shown: Shown, labels: Labels) -> Self {
        Self {
            shown,
            labels,
            index: 0,
            line: Vec::new(),
            line_len: 0,
            head: Vec::new(),
            carry: Vec::new(),
            hash: None,
            sample: Vec::new(),
            binary: None,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        let room = BOM.len().saturating_sub(self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..room]);
        self.decode(bytes, false);
        let mut rest = bytes;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            self.take(&rest[..at]);
            self.end_line(true);
            rest = &rest[at + 1..];
        }
        self.take(rest);
    }

    /// Part of the current line.
    fn take(&mut self, part: &[u8]) {
        self.line_len += part.len();
        if self.shown.wants(self.index) {
            self.line.extend_from_slice(part);
        }
    }

    fn end_line(&mut self, terminated: bool) {
        if self.shown.wants(self.index) {
            let raw = std::mem::take(&mut self.line);
            let decoded = String::from_utf8_lossy(&raw);
            let mut line: &str = &decoded;
            if self.index == 0 && self.labels == Labels::Hashes {
                line = line.strip_prefix('\u{feff}').unwrap_or(line);
            }
            // `str::lines` drops a `\r` before `\n` only; the hashline splitter drops any trailing `\r`.
            if terminated || self.labels == Labels::Hashes {
                line = line.strip_suffix('\r').unwrap_or(line);
            }
            self.shown.push(self.index, line);
        }
        self.index += 1;
        self.line_len = 0;
    }

    /// Hash the decoded text and keep its first bytes for the binary check. A UTF-8 sequence cut by the chunk
    /// end waits for the next chunk: decoding then replaces exactly what decoding the whole text would.
    fn decode(&mut self, bytes: &[u8], last: bool) {
        if self.hash.is_none() && self.binary.is_some() {
            // Nothing left to decode the whole text for (the window's lines are decoded on their own).
            return;
        }
        let joined;
        let all = if self.carry.is_empty() {
            bytes
        } else {
            let mut carry = std::mem::take(&mut self.carry);
            carry.extend_from_slice(bytes);
            joined = carry;
            &joined[..]
        };
        let cut = if last { all.len() } else { safe_cut(all) };
        // Valid UTF-8 (nearly always) is checked by the vectorised validator; the lossy walk is far slower.
        let decoded = match std::str::from_utf8(&all[..cut]) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(&all[..cut]),
        };
        if let Some(hash) = &mut self.hash {
            hash.write(&decoded);
        }
        if self.binary.is_none() {
            let room = BINARY_CHECK_SIZE - self.sample.len();
            self.sample.extend_from_slice(&decoded.as_bytes()[..decoded.len().min(room)]);
            if self.sample.len() == BINARY_CHECK_SIZE {
                self.decide_binary();
            }
        }
        self.carry = all[cut..].to_vec();
    }

    fn decide_binary(&mut self) {
        self.binary = Some(is_binary(&self.sample));
        self.sample = Vec::new();
    }

    fn end(mut self) -> Result<Streamed, StreamError> {
        self.decode(&[], true);
        if self.binary.is_none() {
            self.decide_binary();
        }
        if self.binary == Some(true) {
            return Ok(Streamed::Binary);
        }
        // An unterminated last line counts unless it is empty (a text ending in `\n` has no line after it); for
        // the hashline splitter a text that is only a byte-order mark is empty.
        let only_mark = self.index == 0
            && self.labels == Labels::Hashes
            && self.line_len == BOM.len()
            && self.head == BOM;
        if self.line_len > 0 && !only_mark {
            self.end_line(false);
        }
        let hash = self.hash.map(TextHash::finish);
        let (output, full) = self.shown.finish(self.index).map_err(StreamError::Window)?;
        Ok(Streamed::Text { output, full, hash })
    }
}

/// Where `bytes` can be cut so that no UTF-8 sequence is split: before the last byte that starts a sequence
/// which may still go on in the next chunk. Decoding never joins bytes across a byte that is not a
/// continuation byte, so both halves decode as the whole would.
fn safe_cut(bytes: &[u8]) -> usize {
    let tail = bytes.len().saturating_sub(4);
    let Some(start) = (tail..bytes.len()).rev().find(|&i| bytes[i] & 0xC0 != 0x80) else {
        return bytes.len();
    };
    let needed = match bytes[start] {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    };
    if start + needed > bytes.len() { start } else { bytes.len() }
}

#[cfg(test)]
mod tests;
