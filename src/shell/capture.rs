//! Capturing command output: a bounded head and tail kept in memory for the model (middle-out), the complete
//! output spilled to a log file once it grows, incremental UTF-8 decoding of pipe chunks, and the annotation of
//! exit statuses (conventional non-error exits, signals as 128+N, timeouts).
//!
//! Owns output bookkeeping. Does not spawn or signal processes.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::process::signal_name;
use super::tokenize;

/// The first and last bytes of a stream, and how much there was.
#[derive(Debug, Clone)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    pub total: u64,
}

impl Capture {
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self { head: Vec::new(), tail: VecDeque::new(), head_cap, tail_cap, total: 0 }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        self.tail.extend(bytes);
        while self.tail.len() > self.tail_cap {
            self.tail.pop_front();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Bytes that are in neither the head nor the tail.
    pub fn dropped(&self) -> u64 {
        self.total - self.head.len() as u64 - self.tail.len() as u64
    }

    /// The text, middle-out: at most `max_lines` lines from each end, with a marker naming how many bytes were
    /// left out between them. Cuts fall on line breaks and never split a character.
    pub fn text(&self, max_lines: usize) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let (head, tail) = if self.dropped() == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            let all = String::from_utf8_lossy(&all).into_owned();
            if all.split_inclusive('\n').count() <= 2 * max_lines {
                return all;
            }
            (all.clone(), all)
        } else {
            let head = String::from_utf8_lossy(&self.head).into_owned();
            let tail = String::from_utf8_lossy(&tail).into_owned();
            let head = match head.rfind('\n') {
                Some(end) => head[..=end].to_string(),
                None => head,
            };
            let tail = match tail.find('\n') {
                Some(start) if start + 1 < tail.len() => tail[start + 1..].to_string(),
                _ => tail.trim_start_matches('\u{fffd}').to_string(),
            };
            (head, tail)
        };
        let head: String = head.split_inclusive('\n').take(max_lines).collect();
        let tail_lines: Vec<&str> = tail.split_inclusive('\n').collect();
        let tail: String = tail_lines[tail_lines.len().saturating_sub(max_lines)..].concat();
        let omitted = self.total.saturating_sub(head.len() as u64 + tail.len() as u64);
        let sep = if head.is_empty() || head.ends_with('\n') { "" } else { "\n" };
        format!("{head}{sep}... [{omitted} bytes of output omitted] ...\n{tail}")
    }
}

/// The complete output of a command: in memory while small, in a log file once it grows.
#[derive(Debug)]
pub struct Spill {
    path: PathBuf,
    threshold: usize,
    buffered: Vec<u8>,
    file: Option<std::fs::File>,
    failed: bool,
}

impl Spill {
    pub fn new(path: PathBuf, threshold: usize) -> Self {
        Self { path, threshold, buffered: Vec::new(), file: None, failed: false }
    }

    /// A spill that writes the log from the first byte (background tasks).
    pub fn always(path: PathBuf) -> Self {
        Self::new(path, 0)
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed {
            return;
        }
        if let Some(file) = &mut self.file {
            self.failed = file.write_all(bytes).is_err();
            return;
        }
        self.buffered.extend_from_slice(bytes);
        if self.buffered.len() > self.threshold || self.threshold == 0 {
            self.open();
        }
    }

    fn open(&mut self) {
        let opened = self
            .path
            .parent()
            .map(crate::private::dir)
            .transpose()
            .and_then(|_| crate::private::options().create(true).append(true).open(&self.path));
        match opened {
            Ok(mut file) => {
                self.failed = file.write_all(&self.buffered).is_err();
                self.buffered = Vec::new();
                self.file = Some(file);
            }
            Err(e) => {
                tracing::warn!(error = %e, path = %self.path.display(), "cannot write the command log");
                self.failed = true;
            }
        }
    }

    /// The log file, if the output was large enough to need one (or the spill always writes).
    pub fn saved(&mut self) -> Option<&Path> {
        if let Some(file) = &mut self.file {
            let _ = file.flush();
        }
        (self.file.is_some() && !self.failed).then_some(self.path.as_path())
    }

    /// Make sure the complete output is on disk (even if small) and return where.
    pub fn persist(&mut self) -> Option<&Path> {
        if self.file.is_none() && !self.failed {
            self.open();
        }
        self.saved()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Decodes a byte stream into text, holding back a character split across chunks.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let text = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
        self.pending.drain(..valid);
        text
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl Exit {
    /// The shell's view: the exit code, or 128 + the signal number.
    pub fn status(self) -> i32 {
        match (self.code, self.signal) {
            (Some(code), _) => code,
            (None, Some(signal)) => 128 + signal,
            (None, None) => -1,
        }
    }
}

/// The last command of a line (whose status is the line's status), without wrappers' arguments.
fn last_command(line: &str) -> Option<String> {
    let commands = tokenize::parse(line).ok()?;
    let last = commands.last()?;
    let words = last.args();
    let name = words.first()?.rsplit('/').next()?.to_string();
    if name == "git" && words.get(1) == Some(&"grep") {
        return Some("git grep".into());
    }
    Some(name)
}

/// A note on how the command ended, or `None` for plain success. The second value says whether it counts as
/// a failure.
pub fn describe_exit(line: &str, exit: Exit) -> (Option<String>, bool) {
    if let (None, Some(signal)) = (exit.code, exit.signal) {
        return (
            Some(format!(
                "Killed by {} (signal {signal}); exit status {}.",
                signal_name(signal),
                128 + signal
            )),
            true,
        );
    }
    let code = exit.status();
    if code == 0 {
        return (None, false);
    }
    let conventional = match (last_command(line).as_deref(), code) {
        (Some("grep" | "egrep" | "fgrep" | "rg" | "git grep" | "ag" | "ack"), 1) => Some("no matches"),
        (Some("diff" | "cmp"), 1) => Some("files differ"),
        (Some("test" | "["), 1) => Some("the condition is false"),
        _ => None,
    };
    match conventional {
        Some(meaning) => (Some(format!("Exit code {code}: {meaning}.")), false),
        None => (Some(format!("Exit code {code}.")), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole_and_large_output_middle_out() {
        let mut c = Capture::new(10, 10);
        c.push(b"hello\n");
        assert_eq!(c.text(10), "hello\n");
        let mut c = Capture::new(12, 12);
        for i in 0..10 {
            c.push(format!("line {i}\n").as_bytes());
        }
        assert_eq!(c.total, 70);
        assert_eq!(c.text(10), "line 0\n... [56 bytes of output omitted] ...\nline 9\n");
        let mut many = Capture::new(1_000, 1_000);
        many.push(b"a\nb\nc\nd\ne\n");
        assert_eq!(many.text(2), "a\nb\n... [2 bytes of output omitted] ...\nd\ne\n");
    }

    #[test]
    fn a_character_split_across_chunks_is_decoded_once_whole() {
        let mut s = Utf8Stream::default();
        let bytes = "é!".as_bytes();
        assert_eq!(s.push(&bytes[..1]), "");
        assert_eq!(s.push(&bytes[1..]), "é!");
        assert_eq!(s.push(&[0xff, b'a']), "\u{fffd}a");
    }

    #[test]
    fn the_spill_writes_a_log_only_past_its_threshold_and_then_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let mut small = Spill::new(dir.path().join("small.log"), 8);
        small.push(b"tiny");
        assert_eq!(small.saved(), None);
        let mut big = Spill::new(dir.path().join("big.log"), 8);
        big.push(b"0123456789");
        big.push(b"abc");
        let path = big.saved().unwrap().to_path_buf();
        assert_eq!(std::fs::read_to_string(path).unwrap(), "0123456789abc");
    }

    #[test]
    fn exits_are_annotated_with_conventional_meanings_and_signals() {
        let exit = |code, signal| Exit { code, signal };
        assert_eq!(describe_exit("ls", exit(Some(0), None)), (None, false));
        assert_eq!(
            describe_exit("grep -r foo .", exit(Some(1), None)),
            (Some("Exit code 1: no matches.".into()), false)
        );
        assert_eq!(
            describe_exit("cat x | rg foo", exit(Some(1), None)),
            (Some("Exit code 1: no matches.".into()), false)
        );
        assert_eq!(
            describe_exit("diff a b", exit(Some(1), None)),
            (Some("Exit code 1: files differ.".into()), false)
        );
        assert_eq!(describe_exit("grep foo x", exit(Some(2), None)), (Some("Exit code 2.".into()), true));
        assert_eq!(describe_exit("make", exit(Some(2), None)), (Some("Exit code 2.".into()), true));
        assert_eq!(
            describe_exit("sleep 10", exit(None, Some(9))),
            (Some("Killed by SIGKILL (signal 9); exit status 137.".into()), true)
        );
    }
}
