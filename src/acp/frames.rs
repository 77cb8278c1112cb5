//! Lines into JSON-RPC frames, and the answers to lines that cannot be read: not JSON (`-32700`), not UTF-8
//! (`-32700`, since JSON text is UTF-8) or over the line bound (`-32600`). Such an answer carries at most
//! [`MAX_DATA_BYTES`] of the line back, and the line's `id` when its opening names one, so the editor's request
//! fails instead of waiting forever; an unreadable answer to one of the agent's own requests fails that request.
//!
//! Owns the decision for one line. Must not read the stream or know ACP methods.

use agent_client_protocol::{Error, ErrorCode, RawJsonRpcId, RawJsonRpcMessage, TransportFrame};
use serde_json::{Value, json};

use super::lines::{Line, MAX_LINE_BYTES};

/// The most an error's `data` carries back, as JSON.
pub const MAX_DATA_BYTES: usize = 1024;

/// Room kept in `data` for the fields beside the echoed line.
const DATA_OVERHEAD: usize = 200;

/// Where a line goes.
#[derive(Debug)]
pub enum Routed {
    /// To the agent's dispatch (a message, or a malformed line the SDK answers).
    Agent(TransportFrame),
    /// Straight back to the editor: the answer to a request that could not be read.
    Editor(TransportFrame),
    /// Nowhere: an unreadable answer to a request nobody can name.
    Dropped,
}

/// Decide what one line becomes.
pub fn route(line: Line) -> Routed {
    match line {
        Line::Whole(bytes) => match String::from_utf8(bytes) {
            Ok(text) => parsed(&text),
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
                let error = Error::parse_error().data(data(&text, &format!("invalid UTF-8 at byte {at}")));
                unreadable(&text, error)
            }
        },
        Line::TooLong { head, len } => {
            let head = String::from_utf8_lossy(&head).into_owned();
            let reason = format!("the line is {len} bytes long; the limit is {MAX_LINE_BYTES} bytes");
            let error = Error::invalid_request().data(data(&head, &reason));
            unreadable(&head, error)
        }
    }
}

/// A UTF-8 line: the SDK's parse, with a bounded echo (and the id, when it can be found) for JSON errors.
fn parsed(text: &str) -> Routed {
    match TransportFrame::parse_json(text) {
        TransportFrame::Malformed { error, .. } if error.code == ErrorCode::PARSE_ERROR => {
            let reason = match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Err(e) => e.to_string(),
                Ok(_) => "not a JSON-RPC message".into(),
            };
            unreadable(text, Error::parse_error().data(data(text, &reason)))
        }
        frame => Routed::Agent(frame),
    }
}

/// Route the answer to a line that could not be read, by what its opening says it was.
fn unreadable(text: &str, error: Error) -> Routed {
    let envelope = Envelope::scan(text.as_bytes());
    match (envelope.id, envelope.method, envelope.answer) {
        // An answer to one of our requests: fail that request.
        (Some(id), false, true) => {
            Routed::Agent(TransportFrame::Single(RawJsonRpcMessage::response(id, Err(error))))
        }
        (None, false, true) => {
            tracing::warn!(error = %error.message, "dropped an unreadable answer without an id");
            Routed::Dropped
        }
        (id, _, _) => Routed::Editor(TransportFrame::Single(RawJsonRpcMessage::response(
            id.unwrap_or(RawJsonRpcId::Null),
            Err(error),
        ))),
    }
}

/// An error's `data`: why, and the line (its beginning when long), at most [`MAX_DATA_BYTES`] as JSON.
fn data(text: &str, reason: &str) -> Value {
    let reason = cut(reason, DATA_OVERHEAD / 2).0;
    let (line, truncated) = cut(text, MAX_DATA_BYTES - DATA_OVERHEAD);
    if truncated {
        json!({"reason": reason, "line": line, "truncated": true})
    } else {
        json!({"reason": reason, "line": line})
    }
}

/// The longest prefix of `text` that takes at most `budget` bytes as a JSON string body; whether it was cut.
fn cut(text: &str, budget: usize) -> (&str, bool) {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        used += escaped_len(c);
        if used > budget {
            return (&text[..i], true);
        }
    }
    (text, false)
}

/// Bytes `c` takes inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// What the top-level keys of a (possibly cut or broken) JSON object say about a message.
#[derive(Debug, Default, PartialEq)]
struct Envelope {
    id: Option<RawJsonRpcId>,
    method: bool,
    /// It has `result` or `error`: an answer.
    answer: bool,
}

impl Envelope {
    /// Read keys until the text stops making sense; values are skipped, never kept (except the id).
    fn scan(text: &[u8]) -> Envelope {
        let mut envelope = Envelope::default();
        let mut at = skip_space(text, 0);
        if text.get(at) != Some(&b'{') {
            return envelope;
        }
        at += 1;
        while let Some((key, next)) = value::<String>(text, skip_space(text, at)) {
            at = skip_space(text, next);
            if text.get(at) != Some(&b':') {
                break;
            }
            at = skip_space(text, at + 1);
            let next = match key.as_str() {
                "id" => match value::<Value>(text, at) {
                    Some((id, next)) => {
                        envelope.id = serde_json::from_value(id).ok();
                        next
                    }
                    None => break,
                },
                other => {
                    envelope.method |= other == "method";
                    envelope.answer |= other == "result" || other == "error";
                    match value::<serde::de::IgnoredAny>(text, at) {
                        Some((_, next)) => next,
                        None => break,
                    }
                }
            };
            at = skip_space(text, next);
            if text.get(at) != Some(&b',') {
                break;
            }
            at += 1;
        }
        envelope
    }
}

/// One JSON value starting at `at`, and where it ends. `None` when it is broken or runs to the end of the text
/// (a number cut short would read as another number).
fn value<T: serde::de::DeserializeOwned>(text: &[u8], at: usize) -> Option<(T, usize)> {
    let rest = text.get(at..)?;
    let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<T>();
    let parsed = values.next()?.ok()?;
    let end = at + values.byte_offset();
    (end < text.len()).then_some((parsed, end))
}

fn skip_space(text: &[u8], mut at: usize) -> usize {
    while text.get(at).is_some_and(|b| b.is_ascii_whitespace()) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(routed: Routed) -> (&'static str, Value) {
        let (to, frame) = match routed {
            Routed::Agent(frame) => ("agent", frame),
            Routed::Editor(frame) => ("editor", frame),
            Routed::Dropped => return ("dropped", Value::Null),
        };
        let text = match &frame {
            TransportFrame::Malformed { error, .. } => serde_json::to_string(error).unwrap(),
            frame => frame.to_json().unwrap(),
        };
        (to, serde_json::from_str(&text).unwrap())
    }

    fn whole(text: &[u8]) -> Line {
        Line::Whole(text.to_vec())
    }

    #[test]
    fn invalid_utf8_is_a_parse_error_answered_with_the_id_it_names() {
        let (to, answer) = wire(route(whole(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\xff\"}")));
        assert_eq!(to, "editor");
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32700, "message": "Parse error", "data": {
                "reason": "invalid UTF-8 at byte 35",
                "line": "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\u{fffd}\"}"
            }}})
        );
    }

    #[test]
    fn garbage_without_an_id_is_answered_with_a_null_id_and_a_bounded_echo() {
        let garbage = "not json ".repeat(1_000_000);
        let (to, answer) = wire(route(whole(garbage.as_bytes())));
        assert_eq!(to, "editor");
        assert_eq!(answer["id"], Value::Null);
        assert_eq!(answer["error"]["code"], -32700);
        assert_eq!(answer["error"]["data"]["reason"], "expected ident at line 1 column 2");
        assert_eq!(answer["error"]["data"]["truncated"], true);
        let data = serde_json::to_string(&answer["error"]["data"]).unwrap();
        assert!(data.len() <= MAX_DATA_BYTES, "{} bytes", data.len());
        assert!(garbage.starts_with(answer["error"]["data"]["line"].as_str().unwrap()));
    }

    #[test]
    fn control_characters_count_as_escaped_in_the_echo_bound() {
        let text = "\u{1}".repeat(10_000);
        let (_, answer) = wire(route(whole(text.as_bytes())));
        let data = serde_json::to_string(&answer["error"]["data"]).unwrap();
        assert!(
            data.len() <= MAX_DATA_BYTES && data.len() > MAX_DATA_BYTES - DATA_OVERHEAD,
            "{}",
            data.len()
        );
    }

    #[test]
    fn a_truncated_request_is_answered_with_its_id_and_a_truncated_answer_fails_our_request() {
        let (to, answer) = wire(route(whole(
            br#"{"jsonrpc":"2.0","id":"a7","method":"session/prompt","params":{"prompt":[{"#,
        )));
        assert_eq!((to, &answer["id"], &answer["error"]["code"]), ("editor", &json!("a7"), &json!(-32700)));
        let (to, answer) = wire(route(whole(br#"{"jsonrpc":"2.0","id":12,"result":{"content":"abc"#)));
        assert_eq!((to, &answer["id"], &answer["error"]["code"]), ("agent", &json!(12), &json!(-32700)));
        assert_eq!(wire(route(whole(br#"{"jsonrpc":"2.0","result":{"content":"abc"#))).0, "dropped");
    }

    #[test]
    fn an_over_long_line_is_an_invalid_request_for_the_id_in_its_head() {
        let head = br#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"aaaa"#;
        let (to, answer) = wire(route(Line::TooLong { head: head.to_vec(), len: 70_000_000 }));
        assert_eq!(to, "editor");
        assert_eq!(answer["id"], 4);
        assert_eq!(answer["error"]["code"], -32600);
        assert_eq!(
            answer["error"]["data"]["reason"],
            "the line is 70000000 bytes long; the limit is 67108864 bytes"
        );
    }

    #[test]
    fn an_id_cut_by_the_end_of_the_text_is_not_trusted() {
        assert_eq!(
            Envelope::scan(br#"{"method":"x","id":12"#),
            Envelope { id: None, method: true, answer: false }
        );
        assert_eq!(
            Envelope::scan(br#" { "id" : 12 , "method":"x"}"#),
            Envelope { id: Some(RawJsonRpcId::Number(12)), method: true, answer: false }
        );
        assert_eq!(Envelope::scan(b"[1,2]"), Envelope::default());
    }

    #[test]
    fn readable_lines_go_to_the_agent_untouched() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        let Routed::Agent(TransportFrame::Single(RawJsonRpcMessage::Request(request))) = route(whole(line))
        else {
            panic!("not a request")
        };
        assert_eq!(request.method.as_ref(), "initialize");
        let Routed::Agent(TransportFrame::Malformed { error, .. }) = route(whole(b"[]")) else {
            panic!("batch")
        };
        assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
    }
}
