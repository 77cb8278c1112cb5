//! The early answers: the stdio transport answers the editor's first lines itself the moment they are read (by
//! the thread starting the agent when the first is already there, else by the stdin thread), before the async
//! runtime, the session manager and the SDK's connection have started.
//!
//! - The first line, when it is a v1 `initialize`, gets [`initialize_response`](super::initialize_response).
//! - The second, when it is a `session/new` after an answered `initialize`, gets the session the manager will
//!   build: its id and configuration are decided here ([`Prepared`]) and handed to the handler, which builds the
//!   session from them. The SDK dispatches one request at a time, so the session exists before any later
//!   request about it is handled.
//!
//! The same lines then go through the SDK as usual, so its state is exactly what it would have been: its own
//! answers are recognised by their ids and dropped, and the editor's lines after `initialize` wait until the
//! SDK's answer to it has passed (the SDK refuses anything but `initialize` until its handshake is complete).
//!
//! Only a line whose params pass the type check ([`params`](super::params)) and whose request the handler would
//! accept is answered here; any other line takes the usual path untouched, and so does any line after the
//! second. Owns those answers and the hand-over; must not answer anything else.

use std::io;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{RawJsonRpcId, RawJsonRpcMessage, TransportFrame};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::config::Sources;
use crate::session::prepared::Prepared;

/// What the stdio transport answered early, and whether the SDK's own answers to it have passed since.
pub struct Handover {
    /// The id of the `initialize` answered early; set once, before the line reaches the SDK.
    answered: OnceLock<RawJsonRpcId>,
    /// `true` once the SDK's answer to that request has been dropped.
    passed: watch::Sender<bool>,
    /// The answer given, for the SDK's handler to give again rather than build it a second time.
    response: Mutex<Option<acp::InitializeResponse>>,
    /// The `session/new` answered early, until its handler takes it.
    session: Mutex<Option<EarlySession>>,
    /// The id of that `session/new`, until the SDK's own answer to it has been dropped.
    session_answered: Mutex<Option<RawJsonRpcId>>,
    /// Whether the editor's second line has been dealt with (answered or left to the SDK), or never will be.
    second: (Mutex<bool>, Condvar),
}

/// A `session/new` answered early: the request, the session decided for it, and the answer given.
struct EarlySession {
    request: acp::NewSessionRequest,
    prepared: Prepared,
    answer: acp::NewSessionResponse,
}

impl Default for Handover {
    fn default() -> Self {
        Self {
            answered: OnceLock::new(),
            passed: watch::Sender::new(false),
            response: Mutex::new(None),
            session: Mutex::new(None),
            session_answered: Mutex::new(None),
            second: (Mutex::new(false), Condvar::new()),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Write the JSON-RPC answer `result` to request `id` through `write`, as one line. Whether it was written whole.
fn write_answer(
    id: &RawJsonRpcId,
    result: &impl Serialize,
    write: impl FnOnce(&[u8]) -> io::Result<()>,
) -> bool {
    let Ok(value) = serde_json::to_value(result) else { return false };
    let frame = TransportFrame::Single(RawJsonRpcMessage::response(id.clone(), Ok(value)));
    let Ok(mut text) = frame.to_json() else { return false };
    text.push('\n');
    match write(text.as_bytes()) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(error = %e, "an early answer was not written; the SDK answers");
            false
        }
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
        if !write_answer(&id, &response, write) {
            return false;
        }
        *lock(&self.response) = Some(response);
        self.answered.set(id).is_ok()
    }

    /// Answer `line`, the editor's second line, through `write` when it is a `session/new` following an
    /// `initialize` answered here, and the session can be decided without the manager ([`Prepared`]). Returns
    /// whether it was answered; call it once, before the line goes on to the SDK.
    pub fn answer_session(
        &self,
        line: &[u8],
        sources: &Sources,
        write: impl FnOnce(&[u8]) -> io::Result<()>,
    ) -> bool {
        if self.answered.get().is_none() {
            return false;
        }
        let Some((id, request)) = new_session_request(line) else { return false };
        let Some(prepared) = Prepared::without_manager(sources, &request.cwd) else { return false };
        let (mode, options) = prepared.first_state();
        let answer = acp::NewSessionResponse::new(prepared.id.clone())
            .modes(super::convert::modes(mode))
            .config_options(super::convert::config_options(&options));
        if !write_answer(&id, &answer, write) {
            return false;
        }
        *lock(&self.session_answered) = Some(id);
        *lock(&self.session) = Some(EarlySession { request, prepared, answer });
        true
    }

    /// The editor's second line has been dealt with, or never will be (the reader moved past it or stopped).
    pub fn second_line_done(&self) {
        *lock(&self.second.0) = true;
        self.second.1.notify_all();
    }

    /// After an `initialize` answered here, wait at most `at_most` for the editor's second line to be dealt with
    /// ([`Handover::answer_session`]); at once otherwise. Returns whether it was. For the thread starting the
    /// agent: on a machine with few cores the rest of the start takes the CPU that answer needs.
    pub fn wait_second_line(&self, at_most: Duration) -> bool {
        if self.answered.get().is_none() {
            return false;
        }
        let done = lock(&self.second.0);
        let waited = self.second.1.wait_timeout_while(done, at_most, |done| !*done);
        let (done, _) = waited.unwrap_or_else(PoisonError::into_inner);
        *done
    }

    /// The answer already given to the first `initialize`, once: the SDK's handler gives the same.
    pub fn take_response(&self) -> Option<acp::InitializeResponse> {
        lock(&self.response).take()
    }

    /// The session decided for `request` and the answer given, when `request` is the `session/new` answered
    /// early (once): its handler builds that session.
    pub fn take_session(
        &self,
        request: &acp::NewSessionRequest,
    ) -> Option<(Prepared, acp::NewSessionResponse)> {
        let mut session = lock(&self.session);
        if session.as_ref().is_none_or(|early| early.request != *request) {
            return None;
        }
        session.take().map(|early| (early.prepared, early.answer))
    }

    /// Wait until the SDK has answered the `initialize` answered early (at once when none was).
    pub async fn passed(&self) {
        if self.answered.get().is_none() {
            return;
        }
        let mut passed = self.passed.subscribe();
        // An error means the handover is gone, and with it the connection: nothing is left to wait for.
        let _ = passed.wait_for(|passed| *passed).await;
    }

    /// Is `frame` the SDK's answer to a request answered early? The first answer with each such id is (the
    /// first for `initialize` marks the handshake done); the caller drops it.
    pub fn is_repeat(&self, frame: &TransportFrame) -> bool {
        let TransportFrame::Single(message) = frame else { return false };
        let Some(id) = message.response_id() else { return false };
        let initialize = self.answered.get().is_some_and(|answered| answered == id) && !*self.passed.borrow();
        let session = !initialize && {
            let mut answered = lock(&self.session_answered);
            answered.take_if(|answered| answered == id).is_some()
        };
        if !initialize && !session {
            return false;
        }
        if let RawJsonRpcMessage::Response(agent_client_protocol::RawJsonRpcResponse::Error {
            error, ..
        }) = message
        {
            tracing::error!(?error, "the SDK refused a request that was already answered");
        }
        if initialize {
            self.passed.send_replace(true);
        }
        true
    }
}

/// The id and params of `line` when it is a request for `method` with an id and params that pass the type check.
fn request_of(line: &[u8], method: &str) -> Option<(RawJsonRpcId, Value)> {
    let text = std::str::from_utf8(line).ok()?;
    let TransportFrame::Single(RawJsonRpcMessage::Request(request)) = TransportFrame::parse_json(text) else {
        return None;
    };
    if &*request.method != method || matches!(request.id, RawJsonRpcId::Null) {
        return None;
    }
    let params = serde_json::to_value(request.params?).ok()?;
    if !params.is_object() || super::params::check(method, &params).is_err() {
        return None;
    }
    Some((request.id, params))
}

/// The id and params of `line` when it is a v1 `initialize` request whose params pass the type check.
fn initialize_request(line: &[u8]) -> Option<(RawJsonRpcId, acp::InitializeRequest)> {
    let (id, params) = request_of(line, "initialize")?;
    let initialize: acp::InitializeRequest = serde_json::from_value(params).ok()?;
    (initialize.protocol_version == ProtocolVersion::V1).then_some((id, initialize))
}

/// The id and params of `line` when it is a `session/new` request the handler accepts as it stands.
fn new_session_request(line: &[u8]) -> Option<(RawJsonRpcId, acp::NewSessionRequest)> {
    let (id, params) = request_of(line, "session/new")?;
    let request: acp::NewSessionRequest = serde_json::from_value(params).ok()?;
    super::handlers::check_new(&request).is_ok().then_some((id, request))
}

/// The editor's first two lines as the stdin reader gets them, chunk by chunk: each is answered early when it
/// can be ([`Handover::answer`], [`Handover::answer_session`]), provided it came whole in one chunk (an
/// editor's first requests are small).
pub struct FirstLines {
    handover: Arc<Handover>,
    sources: Sources,
    /// The index of the line the next chunk continues.
    line: usize,
    /// Whether the next chunk starts that line.
    at_start: bool,
}

impl FirstLines {
    pub fn new(handover: Arc<Handover>, sources: Sources) -> Self {
        Self { handover, sources, line: 0, at_start: true }
    }

    /// Answer the first lines `chunk` completes, through `write`. Returns `false` once both lines have gone by
    /// (nothing is left to look at).
    pub fn read(&mut self, chunk: &[u8], write: impl Fn(&[u8]) -> io::Result<()>) -> bool {
        let mut start = 0;
        while self.line < 2 {
            // Not `memchr`: its first call detects the CPU's features, tens of microseconds before this answer.
            let Some(length) = chunk[start..].iter().position(|&byte| byte == b'\n') else {
                self.at_start &= start == chunk.len();
                return true;
            };
            let end = start + length;
            if self.at_start {
                let line = chunk[start..end].strip_suffix(b"\r").unwrap_or(&chunk[start..end]);
                match self.line {
                    0 => self.handover.answer(line, &self.sources, &write),
                    _ => self.handover.answer_session(line, &self.sources, &write),
                };
            }
            self.line += 1;
            self.at_start = true;
            start = end + 1;
        }
        self.handover.second_line_done();
        false
    }

    /// The reader stops (the end of stdin, or an error): the lines not seen yet never will be.
    pub fn finish(&self) {
        self.handover.second_line_done();
    }
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

    /// Sources naming a provider (no probing needed), with the user's configuration under `home`.
    fn configured(home: &std::path::Path) -> Sources {
        let env = [("TINYCODE_BASE_URL", "http://127.0.0.1:9/v1"), ("TINYCODE_MODEL", "bench-model")];
        Sources {
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            user_config_home: Some(home.join("config")),
        }
    }

    fn new_session_line(id: u64, params: Value) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": params}).to_string()
    }

    fn written_session(handover: &Handover, line: &str, sources: &Sources) -> Option<Value> {
        let mut out = None;
        let answered = handover.answer_session(line.as_bytes(), sources, |bytes| {
            out = Some(bytes.to_vec());
            Ok(())
        });
        assert_eq!(answered, out.is_some());
        out.map(|bytes| serde_json::from_slice(&bytes).unwrap())
    }

    #[test]
    fn a_session_new_after_an_answered_initialize_is_answered_with_the_session_its_handler_then_takes() {
        let project = tempfile::tempdir().unwrap();
        let sources = configured(project.path());
        let handover = Handover::default();
        handover.answer(INITIALIZE.as_bytes(), &sources, |_| Ok(()));
        let params = json!({"cwd": project.path(), "mcpServers": []});
        let answer = written_session(&handover, &new_session_line(8, params.clone()), &sources).unwrap();
        let id = answer["result"]["sessionId"].as_str().unwrap().to_string();
        assert!(id.starts_with("sess_") && id.len() == 37, "{id}");
        let settings = crate::session::settings::Settings {
            mode: crate::session::settings::Mode::Build,
            model: "bench-model".into(),
            thought_level: None,
        };
        let expected = acp::NewSessionResponse::new(id.clone())
            .modes(super::super::convert::modes(crate::session::settings::Mode::Build))
            .config_options(super::super::convert::config_options(
                &settings.options(&["bench-model".into()]),
            ));
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": 8, "result": serde_json::to_value(&expected).unwrap()})
        );

        let request: acp::NewSessionRequest = serde_json::from_value(params).unwrap();
        let other = acp::NewSessionRequest::new(std::env::temp_dir());
        assert!(handover.take_session(&other).is_none(), "only the request answered early");
        let (prepared, given) = handover.take_session(&request).unwrap();
        assert_eq!((prepared.id.as_str(), prepared.cwd.as_path()), (id.as_str(), project.path()));
        assert_eq!(prepared.loaded.config.model, "bench-model");
        assert_eq!(given, expected);
        assert!(handover.take_session(&request).is_none(), "taken once");

        let sdk =
            |id| TransportFrame::Single(RawJsonRpcMessage::response(RawJsonRpcId::Number(id), Ok(json!({}))));
        assert!(!handover.is_repeat(&sdk(9)));
        assert!(handover.is_repeat(&sdk(8)), "the SDK's own answer is dropped");
        assert!(!handover.is_repeat(&sdk(8)), "once");
        assert!(handover.is_repeat(&sdk(7)), "the initialize repeat still is, after it");
    }

    #[test]
    fn a_session_new_is_left_to_the_sdk_unless_it_follows_an_early_initialize_and_can_be_decided_as_it_stands()
     {
        let project = tempfile::tempdir().unwrap();
        let cwd = project.path().to_path_buf();
        let sources = configured(project.path());
        let good = new_session_line(2, json!({"cwd": cwd, "mcpServers": []}));
        assert_eq!(
            written_session(&Handover::default(), &good, &sources),
            None,
            "no initialize answered here"
        );

        let unconfigured = Sources { env: Default::default(), user_config_home: Some(cwd.join("config")) };
        let broken = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(broken.path().join("config/tinycode")).unwrap();
        std::fs::write(broken.path().join("config/tinycode/config.toml"), "model = [").unwrap();
        let missing = cwd.join("missing");
        let cases = [
            (new_session_line(2, json!({"cwd": "relative", "mcpServers": []})), &sources),
            (new_session_line(2, json!({"cwd": missing, "mcpServers": []})), &sources),
            (new_session_line(2, json!({"cwd": cwd, "mcpServers": [], "additionalDirectories": [missing]})), &sources),
            (new_session_line(2, json!({"cwd": cwd, "mcpServers": "none"})), &sources),
            (new_session_line(2, json!([cwd, []])), &sources),
            (json!({"jsonrpc": "2.0", "id": null, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}).to_string(), &sources),
            (json!({"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": {"sessionId": "s", "cwd": cwd, "mcpServers": []}}).to_string(), &sources),
            (good.clone(), &unconfigured),
            (good.clone(), &configured(broken.path())),
        ];
        for (line, sources) in cases {
            let handover = Handover::default();
            handover.answer(INITIALIZE.as_bytes(), sources, |_| Ok(()));
            assert_eq!(written_session(&handover, &line, sources), None, "{line}");
            assert!(
                lock(&handover.session).is_none() && lock(&handover.session_answered).is_none(),
                "{line}"
            );
        }
    }

    #[test]
    fn the_start_waits_for_the_second_line_only_after_an_early_initialize_and_only_until_it_is_dealt_with() {
        let sources = Sources::default();
        let unanswered = Handover::default();
        assert!(
            !unanswered.wait_second_line(Duration::from_secs(60)),
            "returns at once: nothing answered early"
        );

        let quiet = Handover::default();
        quiet.answer(INITIALIZE.as_bytes(), &sources, |_| Ok(()));
        assert!(
            !quiet.wait_second_line(Duration::from_millis(5)),
            "no second line: waits its time, no longer"
        );

        for second in ["{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/list\",\"params\":{}}\n", ""] {
            let handover = Arc::new(Handover::default());
            let mut lines = FirstLines::new(handover.clone(), sources.clone());
            assert!(lines.read(format!("{INITIALIZE}\n").as_bytes(), |_| Ok(())));
            let waiting = std::thread::spawn({
                let handover = handover.clone();
                move || handover.wait_second_line(Duration::from_secs(60))
            });
            if second.is_empty() {
                lines.finish(); // the end of stdin
            } else {
                assert!(!lines.read(second.as_bytes(), |_| Ok(())), "left to the SDK, and done looking");
            }
            assert!(waiting.join().unwrap(), "released by the reader: {second:?}");
        }
    }

    #[test]
    fn only_the_first_two_lines_are_looked_at_and_only_when_each_came_whole_in_one_chunk() {
        let project = tempfile::tempdir().unwrap();
        let sources = configured(project.path());
        let new = new_session_line(2, json!({"cwd": project.path(), "mcpServers": []}));
        let run = |chunks: &[String]| {
            let handover = Arc::new(Handover::default());
            let mut lines = FirstLines::new(handover.clone(), sources.clone());
            let out = std::cell::RefCell::new(Vec::new());
            let mut looking = Vec::new();
            for chunk in chunks {
                looking.push(lines.read(chunk.as_bytes(), |bytes| {
                    out.borrow_mut().push(serde_json::from_slice::<Value>(bytes).unwrap()["id"].clone());
                    Ok(())
                }));
            }
            (out.into_inner(), looking)
        };
        let (init, half) = INITIALIZE.split_at(20);
        let (new_head, new_tail) = new.split_at(30);
        assert_eq!(
            run(&[format!("{INITIALIZE}\r\n"), format!("{new}\n")]),
            (vec![json!(7), json!(2)], vec![true, false])
        );
        assert_eq!(run(&[format!("{INITIALIZE}\n{new}\n{new}\n")]), (vec![json!(7), json!(2)], vec![false]));
        assert_eq!(
            run(&[init.into(), format!("{half}\n{new}\n")]),
            (vec![], vec![true, false]),
            "the first line came in two"
        );
        assert_eq!(
            run(&[format!("{INITIALIZE}\n{new_head}"), format!("{new_tail}\n")]),
            (vec![json!(7)], vec![true, false]),
            "the second line came in two"
        );
        assert_eq!(
            run(&[format!("{INITIALIZE}\n"), String::new(), format!("{new}\n")]).0,
            vec![json!(7), json!(2)]
        );
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
