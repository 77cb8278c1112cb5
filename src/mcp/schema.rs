//! An MCP tool's input schema made acceptable to the providers: the root must be an object schema with
//! `properties` (OpenAI rejects one without), and may not be a combinator (`anyOf`, `oneOf`, `allOf`, `not`,
//! `enum`) at the top; meta keys (`$schema`, `$id`, `$comment`) are dropped everywhere since some
//! OpenAI-compatible servers refuse them. Everything else is passed through for the model.
//!
//! Owns that cleaning only.

use serde_json::{Map, Value, json};

const META_KEYS: [&str; 3] = ["$schema", "$id", "$comment"];
const ROOT_COMBINATORS: [&str; 5] = ["anyOf", "oneOf", "allOf", "not", "enum"];

fn strip_meta(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in META_KEYS {
                map.remove(key);
            }
            map.values_mut().for_each(strip_meta);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_meta),
        _ => {}
    }
}

/// The schema the model is offered for `schema` (an MCP `inputSchema`).
pub fn sanitize(schema: &Map<String, Value>) -> Value {
    let mut root = Value::Object(schema.clone());
    strip_meta(&mut root);
    let Value::Object(mut root) = root else { return json!({"type": "object", "properties": {}}) };
    for key in ROOT_COMBINATORS {
        root.remove(key);
    }
    if root.get("type").and_then(Value::as_str) != Some("object") {
        root.insert("type".into(), json!("object"));
    }
    if !root.get("properties").is_some_and(Value::is_object) {
        root.insert("properties".into(), json!({}));
    }
    if root.get("required").is_some_and(|r| !r.is_array()) {
        root.remove("required");
    }
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_plain_object_schema_passes_through_without_its_meta_keys() {
        let schema = object(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"text": {"type": "string", "$comment": "x"}},
            "required": ["text"],
            "additionalProperties": false
        }));
        assert_eq!(
            sanitize(&schema),
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false})
        );
    }

    #[test]
    fn an_empty_or_combinator_root_becomes_an_object_with_properties() {
        assert_eq!(sanitize(&Map::new()), json!({"type": "object", "properties": {}}));
        let schema = object(json!({"anyOf": [{"type": "object"}], "required": "text"}));
        assert_eq!(sanitize(&schema), json!({"type": "object", "properties": {}}));
    }
}
