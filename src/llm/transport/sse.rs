//! A Server-Sent Events decoder: bytes in, events out. Handles `\n` and `\r\n`, multi-line `data:`,
//! `event:` names and `:` comments, bounds the size of one event, and tells real data from keep-alive comments.
//!
//! Owns SSE framing only; knows nothing about what the data means.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
}

/// An event grew beyond the limit (a broken or hostile server).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server-sent event larger than {0} bytes")]
pub struct TooLarge(pub usize);

/// Incremental decoder. Feed chunks with [`Decoder::push`]; call [`Decoder::finish`] at end of stream.
#[derive(Debug)]
pub struct Decoder {
    buffer: Vec<u8>,
    event: Option<String>,
    /// The event's `data:` lines so far, joined by `\n` (`None` before the first: an empty `data:` line counts).
    data: Option<String>,
    data_len: usize,
    max_event_bytes: usize,
    /// Something other than comments and blank lines arrived since [`Decoder::take_activity`].
    active: bool,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new(8 * 1024 * 1024)
    }
}

impl Decoder {
    pub fn new(max_event_bytes: usize) -> Self {
        Self { buffer: Vec::new(), event: None, data: None, data_len: 0, max_event_bytes, active: false }
    }

    /// Did anything but comments (keep-alives) and blank lines arrive since the last call? A line still being
    /// received counts unless it is a comment.
    pub fn take_activity(&mut self) -> bool {
        let partial = self.buffer.first().is_some_and(|&b| b != b':');
        std::mem::take(&mut self.active) || partial
    }

    /// Decode every complete line in `chunk` (plus what was buffered) and return the finished events.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Event>, TooLarge> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        let buffer = std::mem::take(&mut self.buffer);
        while let Some(pos) = memchr::memchr(b'\n', &buffer[start..]) {
            let end = start + pos;
            let line = buffer[start..end].strip_suffix(b"\r").unwrap_or(&buffer[start..end]);
            start = end + 1;
            // Valid UTF-8 (every real stream) is read in place; anything else with replacement characters.
            let event = match std::str::from_utf8(line) {
                Ok(line) => self.line(line),
                Err(_) => self.line(&String::from_utf8_lossy(line)),
            };
            match event {
                Ok(Some(event)) => events.push(event),
                Ok(None) => {}
                Err(e) => {
                    self.buffer = buffer;
                    return Err(e);
                }
            }
        }
        self.buffer = buffer;
        self.buffer.drain(..start);
        if self.buffer.len() + self.data_len > self.max_event_bytes {
            return Err(TooLarge(self.max_event_bytes));
        }
        Ok(events)
    }

    /// Flush a final event that was not followed by a blank line.
    pub fn finish(&mut self) -> Option<Event> {
        if !self.buffer.is_empty() {
            let rest = std::mem::take(&mut self.buffer);
            let line = String::from_utf8_lossy(&rest).into_owned();
            let _ = self.line(line.trim_end_matches('\r'));
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Result<Option<Event>, TooLarge> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        self.active = true;
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.data_len += value.len() + 1;
                if self.data_len > self.max_event_bytes {
                    return Err(TooLarge(self.max_event_bytes));
                }
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_string()),
                }
            }
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<Event> {
        let event = self.event.take();
        let data = self.data.take()?;
        self.data_len = 0;
        Some(Event { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(s: &str) -> Event {
        Event { event: None, data: s.into() }
    }

    #[test]
    fn events_split_across_chunks_are_reassembled() {
        let mut d = Decoder::default();
        assert_eq!(d.push(b"data: {\"a\"").unwrap(), vec![]);
        assert_eq!(d.push(b":1}\n\ndata: [DONE]\n\n").unwrap(), vec![data("{\"a\":1}"), data("[DONE]")]);
    }

    #[test]
    fn crlf_comments_event_names_and_multi_line_data_are_understood() {
        let mut d = Decoder::default();
        let events =
            d.push(b": OPENROUTER PROCESSING\r\n\r\nevent: delta\r\ndata: one\r\ndata:two\r\n\r\n").unwrap();
        assert_eq!(events, vec![Event { event: Some("delta".into()), data: "one\ntwo".into() }]);
    }

    #[test]
    fn a_final_event_without_a_blank_line_is_flushed_at_the_end() {
        let mut d = Decoder::default();
        assert_eq!(d.push(b"data: last").unwrap(), vec![]);
        assert_eq!(d.finish(), Some(data("last")));
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn comments_and_blank_lines_are_not_activity_but_fields_and_partial_lines_are() {
        let mut d = Decoder::default();
        assert_eq!(d.push(b": keep-alive\n\n: OPENROUTER PROCESSING\n\n").unwrap(), vec![]);
        assert!(!d.take_activity());
        assert_eq!(d.push(b": partial comm").unwrap(), vec![]);
        assert!(!d.take_activity());
        assert_eq!(d.push(b"ent\n\ndata: {\"a\"").unwrap(), vec![]);
        assert!(d.take_activity(), "half a data line");
        assert_eq!(d.push(b"}\n\n").unwrap(), vec![data("{\"a\"}")]);
        assert!(d.take_activity());
        assert!(!d.take_activity(), "taken");
    }

    #[test]
    fn an_event_over_the_size_limit_is_an_error() {
        let mut d = Decoder::new(16);
        assert_eq!(d.push(b"data: 0123456789abcdefghij\n").unwrap_err(), TooLarge(16));
        let mut d = Decoder::new(16);
        assert_eq!(d.push(&[b'x'; 32]).unwrap_err(), TooLarge(16));
    }
}
