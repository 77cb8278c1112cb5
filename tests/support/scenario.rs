//! The engine of the executable transcripts in `protocol/scenarios/`: plays one against an ACP agent (the built
//! binary, or any agent's command line from `ACP_AGENT_CMD`) and diffs every frame as a whole value, or records a
//! fresh transcript from the scenario's sends (`PROTOCOL_RECORD`). The format is documented in protocol/README.md.
//! Owns the matching, the normalisation of volatile values and the record rules; the tests live in
//! `suite/protocol.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::Command;

use crate::support::client::PATIENCE;
use crate::support::fake_model::{FakeModel, Reply};
use crate::support::schema::{From, Tap};
use crate::support::websocket::{self, Reader, Writer};

/// Remembered values, by name (`cwd`, `root`, captures).
pub type Vars = BTreeMap<String, Value>;

/// One line of a scenario.
enum Line {
    /// Setup lines (`files`, `config`, `model`), kept verbatim by the recorder.
    Setup,
    Send {
        frame: Value,
        after: Option<Value>,
        any_order: bool,
    },
    SendRaw(String),
    Recv(Value),
    RecvAnyOrder(Vec<Value>),
}

fn parse(text: &str) -> Result<Line, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e}): {text}"))?;
    if let Some(frame) = value.get("send") {
        let any_order = value.get("any_order").and_then(Value::as_bool).unwrap_or(false);
        return Ok(Line::Send { frame: frame.clone(), after: value.get("after").cloned(), any_order });
    }
    if let Some(raw) = value.get("send_raw").and_then(Value::as_str) {
        return Ok(Line::SendRaw(raw.to_string()));
    }
    if let Some(frame) = value.get("recv") {
        return Ok(Line::Recv(frame.clone()));
    }
    if let Some(frames) = value.get("recv_any_order").and_then(Value::as_array) {
        return Ok(Line::RecvAnyOrder(frames.clone()));
    }
    if ["files", "config", "model"].iter().any(|k| value.get(k).is_some()) {
        return Ok(Line::Setup);
    }
    Err(format!("unknown line: {text}"))
}

/// Replace `{name}` in strings by remembered values; a string that is exactly `{name}` becomes the value itself.
pub fn substitute(value: &Value, vars: &Vars) -> Value {
    match value {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))
                && let Some(v) = vars.get(name)
            {
                return v.clone();
            }
            Value::String(vars.iter().fold(s.clone(), |s, (name, v)| {
                let text = v.as_str().map(String::from).unwrap_or_else(|| v.to_string());
                s.replace(&format!("{{{name}}}"), &text)
            }))
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, vars)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), substitute(v, vars))).collect())
        }
        other => other.clone(),
    }
}

/// Whole-value comparison with `<any>` and `<capture:name>` wildcards and `{name}` substitution.
pub fn matches(expected: &Value, actual: &Value, vars: &mut Vars, at: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::String(e), _) if e == "<any>" => Ok(()),
        (Value::String(e), _) if e.starts_with("<capture:") && e.ends_with('>') => {
            let name = e.trim_start_matches("<capture:").trim_end_matches('>');
            vars.insert(name.to_string(), actual.clone());
            Ok(())
        }
        (Value::String(e), _) if e.contains('{') => {
            let e = substitute(expected, vars);
            if &e == actual { Ok(()) } else { Err(format!("{at}: expected {e}, got {actual}")) }
        }
        (Value::Object(e), Value::Object(a)) => {
            let (ek, ak): (BTreeSet<_>, BTreeSet<_>) = (e.keys().collect(), a.keys().collect());
            if ek != ak {
                return Err(format!("{at}: keys differ: expected {ek:?}, got {ak:?}"));
            }
            e.iter().try_for_each(|(k, v)| matches(v, &a[k], vars, &format!("{at}.{k}")))
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            e.iter().zip(a).enumerate().try_for_each(|(i, (e, a))| matches(e, a, vars, &format!("{at}[{i}]")))
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!("{at}: expected {expected}, got {actual}")),
    }
}

/// Match `frames` (in arrival order) against `expected` in any order: each frame takes the first expected frame
/// it matches; captures are kept only from the match that was taken.
pub fn matches_any_order(
    expected: &[Value],
    frames: &[Value],
    vars: &mut Vars,
    at: &str,
) -> Result<(), String> {
    let mut left: Vec<&Value> = expected.iter().collect();
    for frame in frames {
        let mut errors = Vec::new();
        let taken = left.iter().position(|e| {
            let mut trial = vars.clone();
            match matches(e, frame, &mut trial, at) {
                Ok(()) => {
                    *vars = trial;
                    true
                }
                Err(e) => {
                    errors.push(e);
                    false
                }
            }
        });
        match taken {
            Some(i) => {
                left.remove(i);
            }
            None => return Err(format!("{at}: frame matches none of the set:\n  {}", errors.join("\n  "))),
        }
    }
    Ok(())
}

fn reply(value: &Value) -> Reply {
    if let Some(events) = value.get("sse").and_then(Value::as_array) {
        return Reply::Sse(events.clone());
    }
    if let Some(events) = value.get("hang").and_then(Value::as_array) {
        return Reply::Hang(events.clone());
    }
    Reply::Status {
        code: value["status"].as_u64().unwrap_or(500) as u16,
        headers: vec![],
        body: value["body"].to_string(),
    }
}

/// The agent under test: `ACP_AGENT_CMD` (run with `sh -c`, environment inherited) or the built binary.
pub fn external_agent() -> Option<String> {
    std::env::var("ACP_AGENT_CMD").ok().filter(|c| !c.trim().is_empty())
}

/// A running agent with the fake model it talks to.
/// How a scenario reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `tinycode acp` (or `ACP_AGENT_CMD`) on its stdin and stdout.
    Stdio,
    /// `tinycode serve` on 127.0.0.1: one WebSocket connection, one text message per frame.
    WebSocket,
}

struct Run {
    stdin: Option<Writer>,
    stdout: Lines<BufReader<Reader>>,
    child: tokio::process::Child,
    transport: Transport,
    model: FakeModel,
    tap: Tap,
    vars: Vars,
    /// A frame read ahead while joining streamed chunks.
    ahead: Option<Value>,
    _dir: tempfile::TempDir,
}

/// The kind and message of a streamed text chunk (`agent_message_chunk`, `agent_thought_chunk`, ...).
fn chunk_key(frame: &Value) -> Option<(String, Value)> {
    let update = frame.get("params")?.get("update")?;
    let kind = update.get("sessionUpdate")?.as_str()?;
    if !kind.ends_with("_chunk") || update["content"]["type"] != "text" {
        return None;
    }
    Some((
        format!("{}/{kind}", frame["params"]["sessionId"]),
        update.get("messageId").cloned().unwrap_or(Value::Null),
    ))
}

impl Run {
    async fn start(text: &str, transport: Transport) -> Result<Run, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = dir.path().canonicalize().map_err(|e| e.to_string())?;
        let cwd = root.join("work");
        std::fs::create_dir_all(&cwd).map_err(|e| e.to_string())?;
        let vars = Vars::from([
            ("cwd".to_string(), json!(cwd.display().to_string())),
            ("root".to_string(), json!(root.display().to_string())),
        ]);
        let mut replies = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let value = substitute(&serde_json::from_str(line).map_err(|e| e.to_string())?, &vars);
            for (rel, content) in value.get("files").and_then(Value::as_object).into_iter().flatten() {
                write(&cwd.join(rel), content.as_str().unwrap_or_default())?;
            }
            if let Some(config) = value.get("config").and_then(Value::as_str) {
                write(&root.join("config/tinycode/config.toml"), config)?;
            }
            replies.extend(value.get("model").and_then(Value::as_array).into_iter().flatten().map(reply));
        }
        let model = FakeModel::start(replies).await;
        // The model list would arrive at a racy moment as a `config_option_update`; scenarios run without one.
        model.set_models(None);
        let mut command = match external_agent().filter(|_| transport == Transport::Stdio) {
            Some(line) => {
                let mut command = Command::new("sh");
                command.arg("-c").arg(line).stderr(Stdio::inherit());
                command
            }
            None => {
                let mut command = Command::new(env!("CARGO_BIN_EXE_tinycode"));
                match transport {
                    Transport::Stdio => command.arg("acp").stderr(Stdio::null()),
                    Transport::WebSocket => {
                        command.args(["serve", "--listen", "127.0.0.1:0"]).stderr(Stdio::piped())
                    }
                };
                command.env_clear().env("PATH", "/usr/bin:/bin");
                command
            }
        };
        let mut child = command
            .env("HOME", &root)
            .env("XDG_CONFIG_HOME", root.join("config"))
            .env("TINYCODE_DATA_DIR", root.join("data"))
            .env("TINYCODE_BASE_URL", &model.base_url)
            .env("TINYCODE_MODEL", "fake-model")
            .env("OPENAI_BASE_URL", &model.base_url)
            .env("OPENAI_API_KEY", "fake-key")
            .env("ACP_FAKE_MODEL_URL", &model.base_url)
            .current_dir(&cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start the agent: {e}"))?;
        let (stdin, stdout): (Writer, Reader) = match transport {
            Transport::Stdio => (
                Box::new(child.stdin.take().ok_or("no stdin")?),
                Box::new(child.stdout.take().ok_or("no stdout")?),
            ),
            Transport::WebSocket => {
                let stderr = child.stderr.take().ok_or("no stderr")?;
                let (address, token) = served_at(stderr).await?;
                let socket =
                    websocket::connect(&address, Some(&token), false).await.map_err(|e| e.to_string())?;
                let (writer, reader, _bridge) = websocket::lines(socket);
                (writer, reader)
            }
        };
        let stdout = BufReader::new(stdout).lines();
        Ok(Run {
            stdin: Some(stdin),
            stdout,
            child,
            transport,
            model,
            tap: Tap::default(),
            vars,
            ahead: None,
            _dir: dir,
        })
    }

    async fn send(&mut self, frame: &Value) -> Result<(), String> {
        self.tap.line(From::Client, &frame.to_string());
        self.send_raw(&frame.to_string()).await
    }

    async fn send_raw(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.write_all(format!("{line}\n").as_bytes()).await.map_err(|e| format!("agent gone: {e}"))?;
        stdin.flush().await.map_err(|e| format!("agent gone: {e}"))
    }

    /// The next frame, or `None` at the end of the agent's output. Consecutive text chunks of one message are
    /// joined into one frame: how the agent coalesces a stream depends on timing, the text does not. A chunk is
    /// always followed by another frame of the agent's (the turn's end at the latest), so reading ahead never waits
    /// for the client.
    async fn next(&mut self) -> Result<Option<Value>, String> {
        let Some(mut frame) = (match self.ahead.take() {
            Some(frame) => Some(frame),
            None => self.read().await?,
        }) else {
            return Ok(None);
        };
        let Some(key) = chunk_key(&frame) else { return Ok(Some(frame)) };
        while let Some(following) = self.read().await? {
            if chunk_key(&following).as_ref() != Some(&key) {
                self.ahead = Some(following);
                break;
            }
            let more =
                following["params"]["update"]["content"]["text"].as_str().unwrap_or_default().to_string();
            if let Some(Value::String(text)) = frame.pointer_mut("/params/update/content/text") {
                text.push_str(&more);
            }
        }
        Ok(Some(frame))
    }

    async fn read(&mut self) -> Result<Option<Value>, String> {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .map_err(|_| format!("no frame within {PATIENCE:?}"))?
            .map_err(|e| e.to_string())?;
        let Some(line) = line else { return Ok(None) };
        self.tap.line(From::Agent, &line);
        serde_json::from_str(&line)
            .map(Some)
            .map_err(|e| format!("agent wrote a line that is not JSON ({e}): {line}"))
    }

    async fn recv(&mut self) -> Result<Value, String> {
        self.next().await?.ok_or_else(|| "the agent closed its output".to_string())
    }

    /// Close stdin and wait for the agent to exit; `true` when it exited cleanly.
    async fn finish(mut self) -> Result<(), String> {
        // Shut the writer down (a half of a split stream does not close it by being dropped).
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.shutdown().await;
        }
        if let Some(frame) = self.next().await? {
            return Err(format!("unexpected frame after the last line: {frame}"));
        }
        if self.transport == Transport::WebSocket {
            // The connection is over; the server goes on serving others until it is stopped.
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("the server exited with {status:?} when a connection closed"));
            }
            let _ = self.child.start_kill();
        } else {
            let status = tokio::time::timeout(PATIENCE, self.child.wait())
                .await
                .map_err(|_| "the agent did not exit after stdin closed".to_string())?
                .map_err(|e| e.to_string())?;
            if external_agent().is_none() && !status.success() {
                return Err(format!("agent exited with {status:?}"));
            }
        }
        let violations = self.tap.violations();
        if !violations.is_empty() {
            return Err(format!("frames that break the ACP schema:\n{}", violations.join("\n")));
        }
        if external_agent().is_none() {
            let model = &self.model;
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.assert_done())).map_err(|e| {
                let message = e.downcast_ref::<String>().cloned().unwrap_or_default();
                format!("the fake model's script does not fit: {message}")
            })?;
        }
        Ok(())
    }
}

/// The address and token `tinycode serve` prints on stderr when it listens.
async fn served_at(stderr: tokio::process::ChildStderr) -> Result<(String, String), String> {
    let mut lines = BufReader::new(stderr).lines();
    let (mut address, mut token) = (None, None);
    while address.is_none() || token.is_none() {
        let line = tokio::time::timeout(PATIENCE, lines.next_line())
            .await
            .map_err(|_| "serve printed no address and token".to_string())?
            .map_err(|e| e.to_string())?
            .ok_or("serve exited before it listened")?;
        if let Some(rest) = line.split("ws://").nth(1) {
            address = rest.split('/').next().map(String::from);
        }
        if let Some(rest) = line.strip_prefix("token (shown once): ") {
            token = Some(rest.trim().to_string());
        }
    }
    // Whatever else the server says is not part of the transcript.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((address.unwrap_or_default(), token.unwrap_or_default()))
}

fn write(path: &Path, content: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    std::fs::write(path, content).map_err(|e| e.to_string())
}

/// Play `scenario` and diff every frame the agent writes; then the agent must write nothing more and exit when its
/// stdin closes (over a WebSocket: close the connection when the client does).
pub async fn replay(scenario: &Path, transport: Transport) -> Result<(), String> {
    let name = scenario.display().to_string();
    let text = std::fs::read_to_string(scenario).map_err(|e| e.to_string())?;
    let mut run = Run::start(&text, transport).await?;
    for (n, text) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = format!("{name}:{}", n + 1);
        match parse(text)? {
            Line::Setup => {}
            Line::Send { frame, .. } => run.send(&substitute(&frame, &run.vars)).await?,
            Line::SendRaw(raw) => run.send_raw(&raw).await?,
            Line::Recv(expected) => {
                let got = run.recv().await.map_err(|e| format!("{at}: {e}"))?;
                matches(&expected, &got, &mut run.vars, &at).map_err(|e| format!("{e}\nframe: {got}"))?;
            }
            Line::RecvAnyOrder(expected) => {
                let mut frames = Vec::new();
                for _ in 0..expected.len() {
                    frames.push(run.recv().await.map_err(|e| format!("{at}: {e}"))?);
                }
                matches_any_order(&expected, &frames, &mut run.vars, &at)
                    .map_err(|e| format!("{e}\nframes: {}", Value::Array(frames.clone())))?;
            }
        }
    }
    run.finish().await.map_err(|e| format!("{name}: {e}"))
}

/// What the recorder waits for before the next send.
enum Wait {
    /// An agent request, whose id the next send answers as `{name}`.
    Request(String),
    /// Answers to every request sent so far (and to every raw line).
    Answers,
    /// A frame containing this partial frame (`after` on the send line).
    After(Value),
}

/// The state of one recording.
#[derive(Default)]
struct Recorder {
    out: Vec<String>,
    outstanding: BTreeSet<String>,
    raw_pending: usize,
    group: Option<Vec<Value>>,
    /// Volatile values seen so far and the names they were captured under.
    names: Vec<(String, String)>,
    /// Strings the scenario itself sends: never volatile.
    literals: BTreeSet<String>,
}

/// Keys whose string values are volatile identifiers, captured by name (`session`, `session2`, ...).
const CAPTURED: [(&str, &str); 6] = [
    ("requestId", "request"),
    ("sessionId", "session"),
    ("messageId", "message"),
    ("terminalId", "terminal"),
    ("terminal_id", "terminal"),
    ("nextCursor", "cursor"),
];
/// Keys whose values change from run to run and are matched with `<any>`.
const ANY: [&str; 2] = ["updatedAt", "used"];

fn strings(value: &Value, into: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => {
            into.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| strings(v, into)),
        Value::Object(map) => map.values().for_each(|v| strings(v, into)),
        _ => {}
    }
}

/// `true` when every field of `part` is in `whole` with an equal (or recursively contained) value.
fn contains(whole: &Value, part: &Value) -> bool {
    match (whole, part) {
        (Value::Object(w), Value::Object(p)) => {
            p.iter().all(|(k, v)| w.get(k).is_some_and(|w| contains(w, v)))
        }
        (Value::Object(w), _) => w.values().any(|w| contains(w, part)),
        _ => whole == part,
    }
}

/// `true` for a frame containing `part` at any depth.
fn contains_anywhere(whole: &Value, part: &Value) -> bool {
    contains(whole, part)
        || match whole {
            Value::Object(w) => w.values().any(|w| contains_anywhere(w, part)),
            Value::Array(items) => items.iter().any(|w| contains_anywhere(w, part)),
            _ => false,
        }
}

impl Recorder {
    /// The capture (first sight) or placeholder (later) for a volatile value.
    fn name_for(&mut self, base: &str, actual: &str, vars: &mut Vars) -> Value {
        if let Some((_, name)) = self.names.iter().find(|(a, _)| a == actual) {
            return json!(format!("{{{name}}}"));
        }
        json!(format!("<capture:{}>", self.new_name(base, actual, vars)))
    }

    fn new_name(&mut self, base: &str, actual: &str, vars: &mut Vars) -> String {
        let taken = self.names.iter().filter(|(_, n)| n.trim_end_matches(char::is_numeric) == base).count();
        let name = if taken == 0 { base.to_string() } else { format!("{base}{}", taken + 1) };
        self.names.push((actual.to_string(), name.clone()));
        vars.insert(name.clone(), json!(actual));
        name
    }

    fn normalise(&mut self, value: &Value, key: &str, parent: &str, vars: &mut Vars) -> Value {
        match value {
            Value::String(s) if !self.literals.contains(s) => {
                if let Some((_, base)) = CAPTURED.iter().find(|(k, _)| *k == key) {
                    return self.name_for(base, s, vars);
                }
                // The agent's own path (a terminal sign-in method runs it) differs per machine.
                let agent_path = s.as_str() == env!("CARGO_BIN_EXE_tinycode");
                if agent_path || ANY.contains(&key) || (key == "version" && parent == "agentInfo") {
                    return json!("<any>");
                }
                let mut s = s.clone();
                for (actual, name) in self.names.iter().filter(|(a, _)| a.len() >= 8) {
                    s = s.replace(actual.as_str(), &format!("{{{name}}}"));
                }
                for name in ["cwd", "root"] {
                    if let Some(path) = vars.get(name).and_then(Value::as_str) {
                        s = s.replace(path, &format!("{{{name}}}"));
                    }
                }
                json!(s)
            }
            Value::Number(_) if ANY.contains(&key) => json!("<any>"),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.normalise(v, key, parent, vars)).collect())
            }
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), self.normalise(v, k, key, vars))).collect())
            }
            other => other.clone(),
        }
    }

    fn flush(&mut self) {
        match self.group.take() {
            Some(frames) if frames.len() > 1 => self.out.push(json!({"recv_any_order": frames}).to_string()),
            Some(frames) => self.out.extend(frames.into_iter().map(|f| json!({"recv": f}).to_string())),
            None => {}
        }
    }

    fn keep(&mut self, frame: Value) {
        match &mut self.group {
            Some(group) => group.push(frame),
            None => self.out.push(json!({"recv": frame}).to_string()),
        }
    }

    fn settled(&self, wait: &Wait) -> bool {
        matches!(wait, Wait::Answers) && self.outstanding.is_empty() && self.raw_pending == 0
    }

    /// Read frames until `wait` is met, keeping each normalised.
    async fn wait(&mut self, run: &mut Run, wait: &Wait, at: &str) -> Result<(), String> {
        while !self.settled(wait) {
            let frame = run.recv().await.map_err(|e| format!("{at}: waiting for {}: {e}", describe(wait)))?;
            let is_request = frame.get("method").is_some() && frame.get("id").is_some();
            let mut expected = self.normalise(&frame, "", "", &mut run.vars);
            if is_request {
                let name = match wait {
                    Wait::Request(name) => name.clone(),
                    Wait::After(_) => {
                        let id =
                            frame["id"].as_str().map(String::from).unwrap_or_else(|| frame["id"].to_string());
                        self.new_name("request", &id, &mut run.vars)
                    }
                    Wait::Answers => {
                        return Err(format!(
                            "{at}: the agent asked {frame}, but the next line is not an answer to it \
                             (a send with an id \"{{name}}\")"
                        ));
                    }
                };
                run.vars.insert(name.clone(), frame["id"].clone());
                expected["id"] = json!(format!("<capture:{name}>"));
                let done =
                    !matches!(wait, Wait::After(p) if !contains_anywhere(&frame, &substitute(p, &run.vars)));
                self.keep(expected);
                if done {
                    return Ok(());
                }
                continue;
            }
            if frame.get("method").is_none() {
                if frame["id"].is_null() && frame.get("error").is_some() && self.raw_pending > 0 {
                    self.raw_pending -= 1;
                } else {
                    self.outstanding.remove(&frame["id"].to_string());
                }
            }
            let done = matches!(wait, Wait::After(p) if contains_anywhere(&frame, &substitute(p, &run.vars)));
            self.keep(expected);
            if done {
                return Ok(());
            }
        }
        Ok(())
    }
}

fn describe(wait: &Wait) -> String {
    match wait {
        Wait::Request(name) => format!("an agent request to answer as {{{name}}}"),
        Wait::Answers => "the answers to every request sent".to_string(),
        Wait::After(p) => format!("a frame containing {p}"),
    }
}

/// What to wait for before sending `frame`.
fn wait_before(frame: &Value, after: Option<&Value>) -> Result<Wait, String> {
    if let Some(after) = after {
        return Ok(Wait::After(after.clone()));
    }
    if frame.get("method").is_some() {
        return Ok(Wait::Answers);
    }
    match frame["id"].as_str().and_then(|s| s.strip_prefix('{')).and_then(|s| s.strip_suffix('}')) {
        Some(name) => Ok(Wait::Request(name.to_string())),
        None => Err(format!("an answer must name the agent request it answers as \"{{name}}\": {frame}")),
    }
}

/// Play the sends and model replies of `scenario` and return it with the agent's frames written as `recv` lines
/// (volatile values normalised to captures, placeholders and `<any>`). Before each send the recorder reads until
/// the agent waits for it: an answer waits for the agent request it answers, a request or notification for the
/// answers to every earlier request (or for the frame its `after` names), the end for every answer. Frames read
/// after a send marked `any_order: true` are written as one `recv_any_order` set.
pub async fn record(scenario: &Path) -> Result<String, String> {
    let name = scenario.display().to_string();
    let text = std::fs::read_to_string(scenario).map_err(|e| e.to_string())?;
    let mut run = Run::start(&text, Transport::Stdio).await?;
    let mut rec = Recorder::default();
    match record_lines(&mut run, &mut rec, &text, &name).await {
        Ok(()) => {}
        Err(e) => {
            let tail = rec.out.iter().rev().take(8).rev().cloned().collect::<Vec<_>>().join("\n");
            return Err(format!("{e}\nrecorded so far (last lines):\n{tail}"));
        }
    }
    run.finish().await.map_err(|e| format!("{name}: {e}"))?;
    Ok(rec.out.join("\n") + "\n")
}

async fn record_lines(run: &mut Run, rec: &mut Recorder, text: &str, name: &str) -> Result<(), String> {
    for text in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Line::Send { frame, .. } = parse(text)? {
            strings(&frame, &mut rec.literals);
        }
    }
    for (n, text) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = format!("{name}:{}", n + 1);
        match parse(text)? {
            Line::Setup => rec.out.push(text.to_string()),
            Line::Recv(_) | Line::RecvAnyOrder(_) => {}
            Line::Send { frame, after, any_order } => {
                rec.wait(run, &wait_before(&frame, after.as_ref())?, &at).await?;
                rec.flush();
                let frame = substitute(&frame, &run.vars);
                run.send(&frame).await?;
                rec.out.push(text.to_string());
                if frame.get("method").is_some() && frame.get("id").is_some() {
                    rec.outstanding.insert(frame["id"].to_string());
                }
                if any_order {
                    rec.group = Some(Vec::new());
                }
            }
            Line::SendRaw(raw) => {
                rec.wait(run, &Wait::Answers, &at).await?;
                rec.flush();
                run.send_raw(&raw).await?;
                rec.out.push(text.to_string());
                // A raw request with an id is answered under that id; anything else with `"id": null`.
                match serde_json::from_str::<Value>(&raw).ok().and_then(|v| v.get("id").cloned()) {
                    Some(id) if !id.is_null() => {
                        rec.outstanding.insert(id.to_string());
                    }
                    _ => rec.raw_pending += 1,
                }
            }
        }
    }
    rec.wait(run, &Wait::Answers, &format!("{name}: end")).await?;
    rec.flush();
    Ok(())
}
