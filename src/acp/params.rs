//! Request params checked against the types the ACP schema gives them, before the SDK decodes them. The SDK
//! decodes leniently on purpose (a wrongly typed capability becomes its default, `params: []` fills a struct by
//! position), which would silently change behaviour on a client bug; here such a request is `-32602` naming
//! the field. Only types are checked (the SDK still decides required fields, enum values and ranges); `null`
//! passes where the schema says a field defaults on null (`mcpServers`), and params left out stay the SDK's call.
//!
//! Owns the type check and the handler that answers with it. Must not decide anything about a request's content.

use std::sync::OnceLock;

#[cfg(test)]
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, ConnectionTo, Dispatch, Error, ErrorCode, HandleDispatchFrom, Handled};
use serde_json::{Map, Value};

/// The methods checked here, in the order [`warm`] builds their schemas.
const METHODS: [&str; 10] = [
    "initialize",
    "session/new",
    "session/prompt",
    "session/load",
    "session/resume",
    "session/list",
    "session/close",
    "session/delete",
    "session/set_mode",
    "session/set_config_option",
];

/// The schema of each checked request, as the SDK's types give it (`schemars`), stored in `schemas/` and compiled
/// in: generating one at run time took up to a millisecond (the first `initialize` waited for it). A test
/// regenerates them and fails when the SDK's types changed (`UPDATE_SCHEMAS=1 cargo test --lib acp::params`
/// rewrites the files).
macro_rules! stored_schemas {
    ($($method:literal => $file:literal, $t:ty;)*) => {
        /// The stored schema file of `method`.
        fn file(method: &str) -> Option<&'static str> {
            match method {
                $($method => Some($file),)*
                _ => None,
            }
        }

        /// Each method with its stored file name and the schema the SDK's types give it now.
        #[cfg(test)]
        fn generated() -> Vec<(&'static str, &'static str, Value)> {
            vec![$(($method, $file, schemars::schema_for!($t).to_value()),)*]
        }
    };
}

stored_schemas! {
    "initialize" => "initialize.json", acp::InitializeRequest;
    "session/new" => "session_new.json", acp::NewSessionRequest;
    "session/load" => "session_load.json", acp::LoadSessionRequest;
    "session/resume" => "session_resume.json", acp::ResumeSessionRequest;
    "session/list" => "session_list.json", acp::ListSessionsRequest;
    "session/close" => "session_close.json", acp::CloseSessionRequest;
    "session/delete" => "session_delete.json", acp::DeleteSessionRequest;
    "session/set_mode" => "session_set_mode.json", acp::SetSessionModeRequest;
    "session/set_config_option" => "session_set_config_option.json", acp::SetSessionConfigOptionRequest;
    "session/prompt" => "session_prompt.json", acp::PromptRequest;
}

include!(concat!(env!("OUT_DIR"), "/schemas.rs"));

/// A stored schema: its root parsed, each of its `$defs` only the first time a `$ref` reaches it (a request
/// touches a few of them; parsing all of `initialize`'s up front held up the first answer). `build.rs` splits
/// the stored files into these texts.
struct Schema {
    root: Value,
    /// Sorted by name.
    defs: &'static [(&'static str, &'static str)],
    parsed: Vec<OnceLock<Option<Value>>>,
}

impl Schema {
    fn parse(method: &str, file: &str) -> Option<Self> {
        let (root, defs) = stored_parts(file)?;
        let root = serde_json::from_str(root)
            .map_err(|e| tracing::error!(method, error = %e, "a stored params schema does not parse"))
            .ok()?;
        Some(Self { root, defs, parsed: defs.iter().map(|_| OnceLock::new()).collect() })
    }

    /// The definition `name`, parsed on first use.
    fn def(&self, name: &str) -> Option<&Value> {
        let index = self.defs.binary_search_by(|(def, _)| (*def).cmp(name)).ok()?;
        let text = self.defs[index].1;
        self.parsed[index].get_or_init(|| serde_json::from_str(text).ok()).as_ref()
    }
}

/// The schema of `method`, parsed the first time it is needed (one method at a time).
fn schema_of(method: &str) -> Option<&'static Schema> {
    static PARSED: [OnceLock<Option<Schema>>; METHODS.len()] = [const { OnceLock::new() }; METHODS.len()];
    let index = METHODS.iter().position(|m| *m == method)?;
    PARSED[index].get_or_init(|| Schema::parse(method, file(method)?)).as_ref()
}

/// Parse every schema now (on a start-up thread of its own, beside the first requests).
pub fn warm() {
    for method in METHODS.into_iter().skip(1) {
        schema_of(method);
    }
}

/// Parse the schema of `initialize`, the first request (the others are parsed by [`warm`]).
pub fn warm_initialize() {
    schema_of(METHODS[0]);
}

/// Check `params` of `method`; methods without a schema here pass.
pub fn check(method: &str, params: &Value) -> Result<(), Error> {
    let Some(schema) = schema_of(method) else { return Ok(()) };
    if params.is_null() {
        return Ok(());
    }
    let checker = Checker { schema };
    checker.value(&schema.root, params, "params").map_err(|wrong| {
        let message = format!(
            "Invalid params: `{}` must be {}, got {}",
            wrong.path,
            wrong.expected(),
            shown(&wrong.got)
        );
        Error::new(ErrorCode::INVALID_PARAMS, message).data(serde_json::json!({"field": wrong.path}))
    })
}

/// The handler, first in the agent's chain: answers badly typed requests, passes everything else on.
pub struct ParamsCheck;

impl HandleDispatchFrom<Client> for ParamsCheck {
    async fn handle_dispatch_from(
        &mut self,
        message: Dispatch,
        _cx: ConnectionTo<Client>,
    ) -> Result<Handled<Dispatch>, Error> {
        if let Dispatch::Request(request, _) = &message
            && let Err(error) = check(&request.method, &request.params)
        {
            tracing::warn!(method = %request.method, error = %error.message, "refused a request with mistyped params");
            if let Dispatch::Request(_, responder) = message {
                responder.respond_with_error(error)?;
            }
            return Ok(Handled::Yes);
        }
        Ok(Handled::No { message, retry: false })
    }

    fn describe_chain(&self) -> impl std::fmt::Debug {
        "params type check"
    }
}

/// A value whose type the schema does not allow.
#[derive(Debug)]
struct Wrong {
    path: String,
    expected: Vec<String>,
    got: Value,
}

impl Wrong {
    fn expected(&self) -> String {
        let mut names: Vec<&str> = self.expected.iter().map(|t| article(t)).collect();
        names.dedup();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => "something else".into(),
        }
    }
}

fn article(json_type: &str) -> &'static str {
    match json_type {
        "object" => "an object",
        "array" => "an array",
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "a boolean",
        "null" => "null",
        _ => "another type",
    }
}

/// A value as shown in an error: compact, and short.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 60 {
        return text;
    }
    let cut: String = text.chars().take(60).collect();
    format!("{cut}…")
}

/// Walks a value against a schema node, resolving `$ref`s in the root's `$defs`.
struct Checker<'a> {
    schema: &'a Schema,
}

impl Checker<'_> {
    fn value(&self, schema: &Value, value: &Value, path: &str) -> Result<(), Wrong> {
        let Some(schema) = schema.as_object() else { return Ok(()) };
        if value.is_null() && schema.get("x-deserialize-default-on-null") == Some(&Value::Bool(true)) {
            return Ok(());
        }
        if let Some(types) = schema.get("type") {
            let allowed: Vec<String> = match types {
                Value::String(t) => vec![t.clone()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).map(String::from).collect(),
                _ => Vec::new(),
            };
            if !allowed.is_empty() && !allowed.iter().any(|t| is_type(value, t)) {
                return Err(Wrong { path: path.into(), expected: allowed, got: value.clone() });
            }
        }
        if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
            let name = target.strip_prefix("#/$defs/").unwrap_or(target);
            if let Some(def) = self.schema.def(name) {
                self.value(def, value, path)?;
            }
        }
        for all in schema.get("allOf").and_then(Value::as_array).into_iter().flatten() {
            self.value(all, value, path)?;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = schema.get(key).and_then(Value::as_array) {
                self.any(branches, value, path)?;
            }
        }
        match value {
            Value::Object(fields) => self.fields(schema, fields, path),
            Value::Array(items) => match schema.get("items") {
                Some(item) if item.is_object() => items
                    .iter()
                    .enumerate()
                    .try_for_each(|(i, element)| self.value(item, element, &format!("{path}[{i}]"))),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// Some branch must accept the value; otherwise the deepest complaint (types merged at the same depth).
    fn any(&self, branches: &[Value], value: &Value, path: &str) -> Result<(), Wrong> {
        let mut complaints = Vec::new();
        for branch in branches {
            match self.value(branch, value, path) {
                Ok(()) => return Ok(()),
                Err(wrong) => complaints.push(wrong),
            }
        }
        let deepest = complaints.iter().map(|w| w.path.len()).max().unwrap_or(0);
        let mut at_depth = complaints.into_iter().filter(|w| w.path.len() == deepest);
        let Some(mut wrong) = at_depth.next() else { return Ok(()) };
        for other in at_depth.filter(|o| o.path == wrong.path) {
            wrong.expected.extend(other.expected);
        }
        Err(wrong)
    }

    fn fields(
        &self,
        schema: &Map<String, Value>,
        fields: &Map<String, Value>,
        path: &str,
    ) -> Result<(), Wrong> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let rest = schema.get("additionalProperties").filter(|s| s.is_object());
        for (name, field) in fields {
            let inner = if path == "params" { name.clone() } else { format!("{path}.{name}") };
            if let Some(field_schema) = properties.and_then(|p| p.get(name)).or(rest) {
                self.value(field_schema, field, &inner)?;
            }
        }
        Ok(())
    }
}

fn is_type(value: &Value, json_type: &str) -> bool {
    match json_type {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_stored_schemas_are_what_the_sdk_types_give_for_every_checked_method() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/acp/schemas");
        let generated = generated();
        let methods: Vec<&str> = generated.iter().map(|(method, _, _)| *method).collect();
        assert_eq!(methods.len(), METHODS.len());
        assert!(METHODS.iter().all(|m| methods.contains(m)), "{methods:?}");
        for (method, file, schema) in generated {
            let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            if std::env::var_os("UPDATE_SCHEMAS").is_some() {
                std::fs::write(dir.join(file), &text).unwrap();
                continue;
            }
            assert!(
                std::fs::read_to_string(dir.join(file)).unwrap() == text,
                "{method}: the SDK's types changed; run UPDATE_SCHEMAS=1 cargo test --lib acp::params"
            );
            // What build.rs compiled in is that file: its root and its definitions.
            let (root, defs) = stored_parts(file).unwrap();
            let mut whole: Value = serde_json::from_str(root).unwrap();
            let defs: Map<String, Value> = defs
                .iter()
                .map(|(name, def)| (name.to_string(), serde_json::from_str(def).unwrap()))
                .collect();
            if !defs.is_empty() {
                whole["$defs"] = Value::Object(defs);
            }
            assert_eq!(whole, schema, "{method}");
        }
    }

    fn refused(method: &str, params: Value) -> (String, Value) {
        let error = check(method, &params).expect_err("accepted");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        (error.message, error.data.unwrap_or_default())
    }

    #[test]
    fn mistyped_capabilities_and_client_info_are_refused_naming_the_field() {
        assert_eq!(
            refused("initialize", json!({"protocolVersion": 1, "clientCapabilities": {"fs": 5}})),
            (
                "Invalid params: `clientCapabilities.fs` must be an object, got 5".into(),
                json!({"field": "clientCapabilities.fs"})
            )
        );
        assert_eq!(
            refused(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": "yes"}}})
            )
            .0,
            "Invalid params: `clientCapabilities.fs.readTextFile` must be a boolean, got \"yes\""
        );
        assert_eq!(
            refused("initialize", json!({"protocolVersion": 1, "clientCapabilities": {"terminal": null}})).0,
            "Invalid params: `clientCapabilities.terminal` must be a boolean, got null"
        );
        assert_eq!(
            refused("initialize", json!({"protocolVersion": 1, "clientInfo": ["zed"]})).0,
            "Invalid params: `clientInfo` must be an object or null, got [\"zed\"]"
        );
        assert_eq!(
            refused("initialize", json!({"protocolVersion": 1, "clientInfo": {"name": 7, "version": "1"}})).0,
            "Invalid params: `clientInfo.name` must be a string, got 7"
        );
        assert_eq!(
            refused("initialize", json!({"protocolVersion": 1, "_meta": "x"})).0,
            "Invalid params: `_meta` must be an object or null, got \"x\""
        );
    }

    #[test]
    fn params_that_are_not_an_object_are_refused() {
        assert_eq!(
            refused("session/list", json!([])).0,
            "Invalid params: `params` must be an object, got []"
        );
        assert_eq!(
            refused("session/new", json!("cwd")).0,
            "Invalid params: `params` must be an object, got \"cwd\""
        );
    }

    #[test]
    fn well_typed_requests_pass_and_so_do_fields_that_default_on_null() {
        let accepted = [
            ("initialize", json!({"protocolVersion": 1})),
            (
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true, "_meta": {"terminal_output": true}}, "clientInfo": {"name": "zed", "title": "Zed", "version": "0.200.0"}, "futureField": [1]}),
            ),
            ("session/new", json!({"cwd": "/w", "mcpServers": null})),
            (
                "session/new",
                json!({"cwd": "/w", "mcpServers": [{"name": "s", "command": "x", "args": [], "env": []}, {"type": "http", "name": "h", "url": "http://127.0.0.1", "headers": []}]}),
            ),
            ("session/list", json!({})),
            ("session/list", json!({"cwd": null, "cursor": "c"})),
            (
                "session/prompt",
                json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}, {"type": "resource_link", "uri": "file:///a", "name": "a"}]}),
            ),
            ("session/set_config_option", json!({"sessionId": "s", "configId": "mode", "value": "plan"})),
            ("no/such_method", json!([1, 2])),
            ("session/list", Value::Null),
        ];
        for (method, params) in accepted {
            assert!(check(method, &params).is_ok(), "{method} {params}: {:?}", check(method, &params));
        }
    }

    #[test]
    fn nested_mistakes_inside_arrays_name_the_element() {
        assert_eq!(
            refused(
                "session/prompt",
                json!({"sessionId": "s", "prompt": [{"type": "text", "text": "a"}, 5]})
            )
            .0,
            "Invalid params: `prompt[1]` must be an object, got 5"
        );
        assert_eq!(
            refused("session/new", json!({"cwd": 5, "mcpServers": []})).0,
            "Invalid params: `cwd` must be a string, got 5"
        );
    }
}
