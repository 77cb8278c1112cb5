//! The early answer to `initialize`: the stdio transport answers the editor's first line itself the moment it is
//! read (by the thread starting the agent when the line is already there, else by the stdin thread), before the
//! async runtime, the session manager and the SDK's connection have started. The same line then
//! goes through the SDK as usual, so the SDK's handshake state is exactly what it would have been: its own answer
//! (the same value, from [`initialize_response`](super::initialize_response)) is recognised by its id and
//! dropped, and the editor's next lines wait until it has passed (the SDK refuses anything but `initialize`
//! until its handshake is complete).
//!
//! Only a first line that the SDK reads as a v1 `initialize` request and whose params pass the type check
//! ([`params`](super::params)) is answered here; any other line, a second `initialize` included, takes the usual
//! path untouched. Owns that answer and the hand-over; must not answer anything else.

use std::io;
use std::sync::{Mutex, OnceLock, PoisonError};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{RawJsonRpcId, RawJsonRpcMessage, TransportFrame};
use tokio::sync::watch;

use crate::config::Sources;

/// What the stdio transport answered early, and whether the SDK's own answer to it has passed since.
pub struct Handover {
    /// The id of the request answered early; set once, before the line reaches the SDK.
    answered: OnceLock<RawJsonRpcId>,
    /// `true` once the SDK's answer to that request has been dropped.
    passed: watch::Sender<bool>,
    /// The answer given, for the SDK's handler to give again rather than build it a second time.
    response: Mutex<Option<acp::InitializeResponse>>,
}

impl Default for Handover {
    fn default() -> Self {
        Self { answered: OnceLock::new(), passed: watch::Sender::new(false), response: Mutex::new(None) }
    }
}

impl Handover {
    /// Answer `line`, the editor's first line, through `write` when it is an `initialize` this can answer.
    /// Returns whether it was answered (written whole); call it once, before the line goes on to the SDK.
    pub fn answer(
        &self,
        line: &[u8],
        sources: &Sources,
        write: impl FnOnce(&[u8]) -> io::Result<()>,
    ) -> bool {
        let Some((id, request)) = initialize_request(line) else { return false };
        let response = super::initialize_response(sources, &request);
        let Ok(value) = serde_json::to_value(&response) else { return false };
        let frame = TransportFrame::Single(RawJsonRpcMessage::response(id.clone(), Ok(value)));
        let Ok(mut text) = frame.to_json() else { return false };
        text.push('\n');
        if let Err(e) = write(text.as_bytes()) {
            tracing::debug!(error = %e, "the early answer to initialize was not written; the SDK answers");
            return false;
        }
        *self.response.lock().unwrap_or_else(PoisonError::into_inner) = Some(response);
        self.answered.set(id).is_ok()
    }

    /// The answer already given to the first `initialize`, once: the SDK's handler gives the same.
    pub fn take_response(&self) -> Option<acp::InitializeResponse> {
        self.response.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Wait until the SDK has answered the request answered early (at once when none was).
    pub async fn passed(&self) {
        if self.answered.get().is_none() {
            return;
        }
        let mut passed = self.passed.subscribe();
        // An error means the handover is gone, and with it the connection: nothing is left to wait for.
        let _ = passed.wait_for(|passed| *passed).await;
    }

    /// Is `frame` the SDK's answer to the request answered early? The first such frame is, and marks the
    /// handshake done; the caller drops it.
    pub fn is_repeat(&self, frame: &TransportFrame) -> bool {
        let Some(answered) = self.answered.get() else { return false };
        if *self.passed.borrow() {
            return false;
        }
        let TransportFrame::Single(message) = frame else { return false };
        if message.response_id() != Some(answered) {
            return false;
        }
        if let RawJsonRpcMessage::Response(agent_client_protocol::RawJsonRpcResponse::Error {
            error, ..
        }) = message
        {
            tracing::error!(?error, "the SDK refused an initialize that was already answered");
        }
        self.passed.send_replace(true);
        true
    }
}

/// The id and params of `line` when it is a v1 `initialize` request whose params pass the type check.
fn initialize_request(line: &[u8]) -> Option<(RawJsonRpcId, acp::InitializeRequest)> {
    let text = std::str::from_utf8(line).ok()?;
    let TransportFrame::Single(RawJsonRpcMessage::Request(request)) = TransportFrame::parse_json(text) else {
        return None;
    };
    if &*request.method != "initialize" || matches!(request.id, RawJsonRpcId::Null) {
        return None;
    }
    let params = serde_json::to_value(request.params?).ok()?;
    if !params.is_object() || super::params::check("initialize", &params).is_err() {
        return None;
    }
    let initialize: acp::InitializeRequest = serde_json::from_value(params).ok()?;
    (initialize.protocol_version == ProtocolVersion::V1).then_some((request.id, initialize))
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::RawJsonRpcResponse;
    use serde_json::{Value, json};

    use super::*;

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;

    fn written(handover: &Handover, line: &str) -> Option<Value> {
        let mut out = None;
        let answered = handover.answer(line.as_bytes(), &Sources::default(), |bytes| {
            out = Some(bytes.to_vec());
            Ok(())
        });
        assert_eq!(answered, out.is_some());
        out.map(|bytes| {
            assert_eq!(bytes.last(), Some(&b'\n'));
            serde_json::from_slice(&bytes).unwrap()
        })
    }

    #[test]
    fn a_v1_initialize_is_answered_with_what_the_handler_gives() {
        let handover = Handover::default();
        let answer = written(&handover, INITIALIZE).unwrap();
        let request: acp::InitializeRequest =
            serde_json::from_value(json!({"protocolVersion": 1, "clientCapabilities": {}})).unwrap();
        let expected =
            serde_json::to_value(super::super::initialize_response(&Sources::default(), &request)).unwrap();
        assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 7, "result": expected}));
        assert_eq!(handover.take_response().map(|r| serde_json::to_value(r).unwrap()), Some(expected));
        assert!(handover.take_response().is_none(), "given once");
    }

    #[test]
    fn anything_but_a_well_typed_v1_initialize_request_is_left_to_the_sdk() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"clientCapabilities":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":true}}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":1}}"#,
            r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
            "not json",
            "",
        ] {
            let handover = Handover::default();
            assert_eq!(written(&handover, line), None, "{line}");
            assert!(handover.answered.get().is_none(), "{line}");
        }
    }

    #[test]
    fn an_answer_that_could_not_be_written_is_not_recorded() {
        let handover = Handover::default();
        let failed = handover.answer(INITIALIZE.as_bytes(), &Sources::default(), |_| {
            Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"))
        });
        assert!(!failed);
        assert!(handover.answered.get().is_none());
        let sdk = TransportFrame::Single(RawJsonRpcMessage::response(RawJsonRpcId::Number(7), Ok(json!({}))));
        assert!(!handover.is_repeat(&sdk), "the SDK's answer is the only one, so it goes out");
    }

    #[tokio::test]
    async fn only_the_sdks_first_answer_to_the_answered_id_is_dropped_and_its_passing_releases_the_reader() {
        let handover = std::sync::Arc::new(Handover::default());
        handover.passed().await; // nothing answered: nothing to wait for
        written(&handover, INITIALIZE).unwrap();
        let waiting = tokio::spawn({
            let handover = handover.clone();
            async move { handover.passed().await }
        });
        let other =
            TransportFrame::Single(RawJsonRpcMessage::response(RawJsonRpcId::Number(8), Ok(json!({}))));
        assert!(!handover.is_repeat(&other));
        assert!(!waiting.is_finished());
        let sdk = TransportFrame::Single(RawJsonRpcMessage::Response(RawJsonRpcResponse::new(
            RawJsonRpcId::Number(7),
            Ok(json!({"protocolVersion": 1})),
        )));
        assert!(handover.is_repeat(&sdk));
        waiting.await.unwrap();
        assert!(!handover.is_repeat(&sdk), "a later answer with that id is not the SDK's repeat");
    }
}
