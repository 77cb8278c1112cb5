//! The official ACP v1 JSON schema, as the pinned schema crate (`agent-client-protocol-schema`, the version in
//! Cargo.lock) generates it with `schemars`, kept in `protocol/schema/` with its version; and the [`Tap`] every
//! test frame goes through: each frame must validate against the schema of its direction, its params and result
//! against the types of its method, and carry no field the schema does not know (only `_meta` is free).
//! Extension methods (`_...`) are exempt but must be documented in `protocol/README.md`.
//!
//! The agent is built with the SDK's `unstable_subagents` feature, and Cargo builds this crate with the same
//! features, so the kept schema also knows the unstable subagent types; the tap refuses them unless the client
//! declared `subagents`.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};

use agent_client_protocol_schema::v1::{
    AgentNotification, AgentRequest, AgentResponse, ClientNotification, ClientRequest, ClientResponse,
    JsonRpcMessage, Notification, ProtocolLevelNotification, Request, Response,
};
use serde_json::Value;

/// Every message an agent can send.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
#[allow(dead_code, clippy::large_enum_variant)]
enum FromAgent {
    Request(Request<AgentRequest>),
    Response(Response<AgentResponse>),
    Notification(Notification<AgentNotification>),
}

/// Every message a client can send.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
#[allow(dead_code, clippy::large_enum_variant)]
enum FromClient {
    Request(Request<ClientRequest>),
    Response(Response<ClientResponse>),
    Notification(Notification<ClientNotification>),
}

/// A frame on the wire, in either direction.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(title = "Agent Client Protocol")]
#[allow(dead_code, clippy::large_enum_variant)]
enum Frame {
    Agent(JsonRpcMessage<FromAgent>),
    Client(JsonRpcMessage<FromClient>),
    ProtocolLevel(JsonRpcMessage<Notification<ProtocolLevelNotification>>),
}

/// The schema as the pinned crate describes it, with the settings the ACP project publishes its schema with
/// (draft 2020-12, titled untagged variants, no `$ref` siblings, no boolean schemas).
pub fn generate() -> Value {
    use schemars::transform::{RemoveRefSiblings, ReplaceBoolSchemas};
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.untagged_enum_variant_titles = true;
    let mut bools = ReplaceBoolSchemas::default();
    bools.skip_additional_properties = true;
    let generator =
        settings.with_transform(RemoveRefSiblings::default()).with_transform(bools).into_generator();
    serde_json::to_value(generator.into_root_schema_for::<Frame>()).unwrap()
}

/// The version of the schema crate Cargo.lock pins.
pub fn pinned_version() -> String {
    let lock = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    let at = lock.find("name = \"agent-client-protocol-schema\"\nversion = \"").unwrap();
    let rest = &lock[at..];
    rest.lines().nth(1).unwrap().trim_start_matches("version = \"").trim_end_matches('"').to_string()
}

/// Where the schema of the pinned version is kept.
pub fn schema_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("protocol/schema")
        .join(format!("acp-v1-schema-{}.json", pinned_version()))
}

/// Who sent a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum From {
    Client,
    Agent,
}

impl From {
    /// The side that handles the sender's requests (`x-side` in the schema).
    fn handler(self) -> &'static str {
        match self {
            From::Client => "agent",
            From::Agent => "client",
        }
    }

    fn other(self) -> From {
        match self {
            From::Client => From::Agent,
            From::Agent => From::Client,
        }
    }
}

/// The compiled schema and its method tables.
pub struct Schema {
    root: Value,
    validators: jsonschema::ValidatorMap,
    /// (`x-side`, `x-method`) → the pointer of the params type and of the result type.
    params: HashMap<(String, String), String>,
    results: HashMap<(String, String), String>,
    /// The extension methods `protocol/README.md` documents.
    extensions: String,
}

pub static SCHEMA: LazyLock<Schema> = LazyLock::new(Schema::load);

fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

impl Schema {
    fn load() -> Schema {
        let path = schema_file();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (UPDATE_SNAPSHOTS=1 cargo test --test all schema writes it)", path.display())
        });
        let root: Value = serde_json::from_str(&text).unwrap();
        let validators = jsonschema::options().build_map(&root).unwrap();
        let (mut params, mut results) = (HashMap::new(), HashMap::new());
        for (name, def) in root["$defs"].as_object().unwrap() {
            let (Some(side), Some(method)) = (def["x-side"].as_str(), def["x-method"].as_str()) else {
                continue;
            };
            let table = if name.ends_with("Response") { &mut results } else { &mut params };
            let pointer = format!("#/$defs/{}", escape_pointer(name));
            let previous = table.insert((side.to_string(), method.to_string()), pointer);
            assert!(previous.is_none(), "two types for {side} {method}");
        }
        let readme = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protocol/README.md");
        let extensions = std::fs::read_to_string(readme).unwrap();
        Schema { root, validators, params, results, extensions }
    }

    fn node(&self, pointer: &str) -> &Value {
        self.root
            .pointer(pointer.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("no {pointer} in the schema"))
    }

    fn valid(&self, pointer: &str, value: &Value) -> bool {
        self.validators.get(pointer).unwrap_or_else(|| panic!("no validator for {pointer}")).is_valid(value)
    }

    /// Schema errors of `value` against the subschema at `pointer`.
    fn errors(&self, pointer: &str, value: &Value) -> Vec<String> {
        let validator = self.validators.get(pointer).unwrap_or_else(|| panic!("no validator for {pointer}"));
        validator.iter_errors(value).map(|e| format!("{}: {e}", e.instance_path())).collect()
    }

    /// The pointer of the root union's variant with this title (`Agent`, `Client`, `ProtocolLevel`).
    fn variant(&self, title: &str) -> String {
        let index = self.root["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .position(|v| v["title"] == title)
            .unwrap_or_else(|| panic!("no {title} variant in the schema"));
        format!("#/anyOf/{index}")
    }

    /// Everything wrong with `value` against the subschema at `pointer`: schema errors, then fields the schema
    /// does not know.
    pub fn check(&self, pointer: &str, value: &Value) -> Vec<String> {
        let errors = self.errors(pointer, value);
        if !errors.is_empty() {
            return errors;
        }
        self.strict(pointer, value, "")
    }

    /// Unknown fields in `value` (and below) against the subschema at `pointer`.
    fn strict(&self, pointer: &str, value: &Value, at: &str) -> Vec<String> {
        let (known, mut errors) = self.evaluate(pointer, value, at);
        if let (Value::Object(object), Some(known)) = (value, known) {
            for key in object.keys().filter(|k| *k != "_meta" && !known.contains(*k)) {
                errors.push(format!("{at}/{key}: a field the schema does not know"));
            }
        }
        errors
    }

    /// The property names the subschema at `pointer` knows for `value` (`None`: any name is allowed), with the
    /// unknown fields found below it.
    fn evaluate(&self, pointer: &str, value: &Value, at: &str) -> (Option<BTreeSet<String>>, Vec<String>) {
        let node = self.node(pointer);
        let Some(object) = node.as_object() else { return (None, Vec::new()) };
        let mut known = Some(BTreeSet::new());
        let mut errors = Vec::new();
        let merge = |more: Option<BTreeSet<String>>, known: &mut Option<BTreeSet<String>>| match (
            known.as_mut(),
            more,
        ) {
            (Some(k), Some(m)) => k.extend(m),
            _ => *known = None,
        };
        if let Some(target) = object.get("$ref").and_then(Value::as_str) {
            let (more, e) = self.evaluate(target, value, at);
            merge(more, &mut known);
            errors.extend(e);
        }
        for (i, _) in object.get("allOf").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let (more, e) = self.evaluate(&format!("{pointer}/allOf/{i}"), value, at);
            merge(more, &mut known);
            errors.extend(e);
        }
        for keyword in ["anyOf", "oneOf"] {
            let Some(branches) = object.get(keyword).and_then(Value::as_array) else { continue };
            let mut first: Option<(Option<BTreeSet<String>>, Vec<String>)> = None;
            for i in 0..branches.len() {
                let branch = format!("{pointer}/{keyword}/{i}");
                if !self.valid(&branch, value) {
                    continue;
                }
                let (more, e) = self.evaluate(&branch, value, at);
                let clean = e.is_empty()
                    && match (value, &more) {
                        (Value::Object(o), Some(m)) => o.keys().all(|k| k == "_meta" || m.contains(k)),
                        _ => true,
                    };
                if clean {
                    first = Some((more, e));
                    break;
                }
                first.get_or_insert((more, e));
            }
            if let Some((more, e)) = first {
                merge(more, &mut known);
                errors.extend(e);
            }
        }
        if let Value::Object(fields) = value {
            let open = match object.get("additionalProperties") {
                Some(Value::Bool(false)) => false,
                Some(_) => true,
                None => {
                    !object.contains_key("properties")
                        && object.get("type").is_none_or(|t| t == "object")
                        && !object.keys().any(|k| {
                            ["$ref", "allOf", "anyOf", "oneOf", "const", "enum"].contains(&k.as_str())
                        })
                }
            };
            let properties = object.get("properties").and_then(Value::as_object);
            for (key, field) in fields {
                let at = format!("{at}/{key}");
                if properties.is_some_and(|p| p.contains_key(key)) {
                    errors.extend(self.strict(
                        &format!("{pointer}/properties/{}", escape_pointer(key)),
                        field,
                        &at,
                    ));
                } else if key != "_meta"
                    && let Some(Value::Object(_)) = object.get("additionalProperties")
                {
                    errors.extend(self.strict(&format!("{pointer}/additionalProperties"), field, &at));
                }
            }
            if let (Some(k), Some(p)) = (known.as_mut(), properties) {
                k.extend(p.keys().cloned());
            }
            if open {
                known = None;
            }
        }
        if let Value::Array(items) = value {
            let prefix = object.get("prefixItems").and_then(Value::as_array).map_or(0, Vec::len);
            for (i, item) in items.iter().enumerate() {
                let at = format!("{at}/{i}");
                if i < prefix {
                    errors.extend(self.strict(&format!("{pointer}/prefixItems/{i}"), item, &at));
                } else if object.get("items").is_some_and(Value::is_object) {
                    errors.extend(self.strict(&format!("{pointer}/items"), item, &at));
                }
            }
        }
        (known, errors)
    }

    /// Problems with one frame sent by `from`. `pending` maps the ids of requests in flight to their method.
    fn frame(&self, from: From, frame: &Value, pending: &mut HashMap<(From, String), String>) -> Vec<String> {
        let method = frame.get("method").and_then(Value::as_str);
        let whole = match method {
            Some(m) if m.starts_with("$/") => self.variant("ProtocolLevel"),
            _ => self.variant(match from {
                From::Agent => "Agent",
                From::Client => "Client",
            }),
        };
        let mut problems = self.check(&whole, frame);
        let id = frame.get("id").map(Value::to_string);
        match (method, id) {
            (Some(method), id) if method.starts_with('_') => {
                if !self.extensions.contains(&format!("`{method}`")) {
                    problems
                        .push(format!("extension method {method} is not documented in protocol/README.md"));
                }
                if let Some(id) = id {
                    pending.insert((from, id), method.to_string());
                }
            }
            (Some(method), id) => {
                let side = if method.starts_with("$/") { "protocol" } else { from.handler() };
                match self.params.get(&(side.to_string(), method.to_string())) {
                    None => problems.push(format!("{method} is not a {side} method of the schema")),
                    Some(params) => {
                        let params_value = frame.get("params").unwrap_or(&Value::Null);
                        problems.extend(
                            self.check(params, params_value).into_iter().map(|p| format!("params{p}")),
                        );
                    }
                }
                if let Some(id) = id {
                    pending.insert((from, id), method.to_string());
                }
            }
            (None, Some(id)) => {
                // A response: to a request the other side sent (unless that one was sent unchecked on purpose).
                let Some(method) = pending.remove(&(from.other(), id)) else { return problems };
                if let Some(error) = frame.get("error") {
                    problems
                        .extend(self.check("#/$defs/Error", error).into_iter().map(|p| format!("error{p}")));
                } else if !method.starts_with('_') {
                    let key = (from.other().handler().to_string(), method.clone());
                    match self.results.get(&key) {
                        None => problems.push(format!("no result type for {method}")),
                        Some(result) => {
                            let value = frame.get("result").unwrap_or(&Value::Null);
                            problems
                                .extend(self.check(result, value).into_iter().map(|p| format!("result{p}")));
                        }
                    }
                }
            }
            (None, None) => problems.push("neither a request, a notification nor a response".into()),
        }
        problems
    }
}

/// Does this agent frame use the unstable subagent vocabulary (`subagent_update`, tool content of type
/// `session`)? The kept schema knows it (the agent is built with the SDK's `unstable_subagents`), so the tap
/// allows it only after a client declared `subagents`.
fn unstable_subagents(frame: &Value) -> bool {
    let update = &frame["params"]["update"];
    frame["method"] == "session/update"
        && (update["sessionUpdate"] == "subagent_update"
            || update["content"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "session")))
}

/// Checks every frame passing between a test client and an agent, in both directions.
#[derive(Default)]
pub struct Tap {
    /// The client declared `clientCapabilities.subagents` in `initialize`.
    subagents: std::sync::atomic::AtomicBool,
    pending: Mutex<HashMap<(From, String), String>>,
    violations: Mutex<Vec<String>>,
    /// Frames checked so far.
    pub count: std::sync::atomic::AtomicUsize,
}

impl Tap {
    /// Check one line as sent by `from`; problems are kept for [`Tap::assert_valid`].
    pub fn line(&self, from: From, line: &str) {
        let line = line.trim_end();
        if line.is_empty() {
            return;
        }
        self.count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let problems = match serde_json::from_str::<Value>(line) {
            Err(e) => vec![format!("not JSON: {e}")],
            Ok(frame) => {
                use std::sync::atomic::Ordering::Relaxed;
                let mut problems = SCHEMA.frame(from, &frame, &mut self.pending.lock().unwrap());
                if from == From::Client && frame["method"] == "initialize" {
                    self.subagents
                        .store(frame["params"]["clientCapabilities"]["subagents"].is_object(), Relaxed);
                }
                if from == From::Agent && unstable_subagents(&frame) && !self.subagents.load(Relaxed) {
                    problems.push("a subagent update to a client that did not declare `subagents`".into());
                }
                problems
            }
        };
        if !problems.is_empty() {
            self.violations
                .lock()
                .unwrap()
                .push(format!("{from:?} sent {line}\n  {}", problems.join("\n  ")));
        }
    }

    /// The problems found so far.
    pub fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }

    /// Panic with every frame that broke the schema.
    pub fn assert_valid(&self) {
        let violations = self.violations();
        assert!(violations.is_empty(), "frames that break the ACP schema:\n{}", violations.join("\n"));
    }
}

/// Put a [`Tap`] between a client and the agent at the other end of `write`/`read`: returns the write and read
/// ends the client uses instead. End of stream is passed on in both directions.
pub fn tap<W, R>(
    write: W,
    read: R,
    tap: std::sync::Arc<Tap>,
) -> (tokio::io::WriteHalf<tokio::io::DuplexStream>, tokio::io::ReadHalf<tokio::io::DuplexStream>)
where
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
{
    let (client_side, relay_side) = tokio::io::duplex(1 << 20);
    let (client_read, client_write) = tokio::io::split(client_side);
    let (relay_read, relay_write) = tokio::io::split(relay_side);
    tokio::spawn(relay(relay_read, write, From::Client, tap.clone()));
    tokio::spawn(relay(read, relay_write, From::Agent, tap));
    (client_write, client_read)
}

async fn relay<R, W>(read: R, mut write: W, from: From, tap: std::sync::Arc<Tap>)
where
    R: tokio::io::AsyncRead + Send + Unpin,
    W: tokio::io::AsyncWrite + Send + Unpin,
{
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut read = tokio::io::BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                tap.line(from, &String::from_utf8_lossy(&line));
                if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = write.shutdown().await;
}
