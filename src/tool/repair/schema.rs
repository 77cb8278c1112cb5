//! Schema-driven value repair (seed 003 "input repair"; the semantics of OpenCode's `ToolInputRepair`, pinned
//! by `tests/fixtures/tool_input_repair_cases.json`). A repair happens only where the tool's JSON Schema
//! unambiguously asks for it:
//! - a string where an object or array is wanted is parsed (`'{"count":"2"}'` → `{count: 2}`);
//! - `"42"` / `"1.5"` / `"true"` become the integer, number or boolean wanted (not `" "`, `"Infinity"`,
//!   `"1.5"` for an integer, integers beyond 2^53, `"TRUE"`);
//! - a compatible single value where an array is wanted is wrapped (`"one"` → `["one"]`);
//! - `null` and `{}` placeholders are dropped from optional, plain (single-type, non-nullable) properties;
//! - keys an object closes out (`additionalProperties: false`, nothing composed or patterned) are dropped;
//! - local `$ref`s (`#/$defs/x`, `#/definitions/x`), tuples, typed dictionaries and the unique non-null
//!   branch of a union are followed; ambiguous unions and `allOf` are left alone; below six levels nothing is
//!   touched.
//!
//! Two additions: `{"value": x}` where a scalar is wanted becomes `x` (PROVIDERS.md §6.3), and a value that
//! already matches one branch of a union or one type of a type list is still repaired inside (OpenCode stops
//! there). Valid input comes out unchanged with no fixes.
//!
//! Owns value repair against a schema. Must not know any tool or parameter name.

use serde_json::{Map, Value};

use super::fix::{self, Fix};

/// Deepest level repaired (the root object is level 0).
const MAX_DEPTH: usize = 6;

/// Largest integer a string is coerced to (2^53 - 1): beyond it, a float would change the digits.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Repair `args` against the tool's `schema` in place; returns what was done. A schema whose root is not
/// `type: object` repairs nothing.
pub fn repair(args: &mut Value, schema: &Value) -> Vec<Fix> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Vec::new();
    }
    let mut repairer = Repairer { root: schema, fixes: Vec::new() };
    repairer.value(args, schema, 0, "");
    repairer.fixes
}

struct Repairer<'s> {
    root: &'s Value,
    fixes: Vec<Fix>,
}

/// Does `value` have JSON Schema type `ty`?
fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => false,
    }
}

fn type_of(schema: &Value) -> Option<&str> {
    schema.get("type").and_then(Value::as_str)
}

/// `"42"`, `"-1.5"`, `"1e3"` as the number a schema of type `integer` (or `number`) accepts.
fn number_from(text: &str, integer: bool) -> Option<Value> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    let parsed: f64 = trimmed.parse().ok().filter(|f: &f64| f.is_finite())?;
    let whole = parsed.fract() == 0.0 && parsed.abs() <= MAX_SAFE_INTEGER;
    if whole {
        Some(Value::from(parsed as i64))
    } else if integer {
        None
    } else {
        serde_json::Number::from_f64(parsed).map(Value::Number)
    }
}

impl<'s> Repairer<'s> {
    fn value(&mut self, value: &mut Value, schema: &'s Value, depth: usize, at: &str) {
        if depth > MAX_DEPTH || !schema.is_object() {
            return;
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            if let Some(target) = self.definition(reference) {
                self.value(value, target, depth + 1, at);
            }
            return;
        }
        match schema.get("type") {
            Some(Value::String(ty)) => self.typed(value, schema, ty, depth, at),
            Some(Value::Array(types)) => self.type_list(value, schema, types, depth, at),
            None => self.union(value, schema, depth, at),
            Some(_) => {}
        }
    }

    /// `#/$defs/NAME` or `#/definitions/NAME` (with `~1` → `/`, `~0` → `~`); deeper pointers are not followed.
    fn definition(&self, reference: &str) -> Option<&'s Value> {
        let (table, name) = if let Some(name) = reference.strip_prefix("#/$defs/") {
            ("$defs", name)
        } else {
            ("definitions", reference.strip_prefix("#/definitions/")?)
        };
        if name.is_empty() || name.contains('/') {
            return None;
        }
        let name = name.replace("~1", "/").replace("~0", "~");
        self.root.get(table)?.get(&name).filter(|d| d.is_object())
    }

    /// `type: [T, "null"]`: a value of a listed type stays (containers are repaired inside); otherwise the
    /// unique non-null type is used.
    fn type_list(
        &mut self,
        value: &mut Value,
        schema: &'s Value,
        types: &'s [Value],
        depth: usize,
        at: &str,
    ) {
        let types: Vec<&'s str> = types.iter().filter_map(Value::as_str).collect();
        if value.is_null() && types.contains(&"null") {
            return;
        }
        if let Some(matching) = types.iter().find(|t| has_type(value, t)) {
            if value.is_object() || value.is_array() {
                self.typed(value, schema, matching, depth + 1, at);
            }
            return;
        }
        let non_null: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
        if let [only] = non_null[..] {
            self.typed(value, schema, only, depth + 1, at);
        }
    }

    /// `anyOf` / `oneOf` without a `type`: only an unambiguous branch is followed.
    fn union(&mut self, value: &mut Value, schema: &'s Value, depth: usize, at: &str) {
        let any = schema.get("anyOf").and_then(Value::as_array);
        let one = schema.get("oneOf").and_then(Value::as_array);
        let branches = match (any, one) {
            (Some(branches), None) | (None, Some(branches)) => branches,
            _ => return,
        };
        // A boolean schema (`true`) may accept anything, so nothing is provably wrong.
        if value.is_null() || branches.iter().any(|b| !b.is_object()) {
            return;
        }
        let matching: Vec<&'s Value> =
            branches.iter().filter(|b| type_of(b).is_some_and(|t| has_type(value, t))).collect();
        if !matching.is_empty() {
            if let [only] = matching[..]
                && (value.is_object() || value.is_array())
            {
                self.value(value, only, depth + 1, at);
            }
            return;
        }
        let candidates: Vec<&'s Value> = branches.iter().filter(|b| type_of(b) != Some("null")).collect();
        if let [only] = candidates[..] {
            self.value(value, only, depth + 1, at);
        }
    }

    fn typed(&mut self, value: &mut Value, schema: &'s Value, ty: &str, depth: usize, at: &str) {
        match ty {
            "object" => self.object(value, schema, depth, at),
            "array" => self.array(value, schema, depth, at),
            "integer" | "number" | "boolean" | "string" => self.scalar(value, ty, at),
            _ => {}
        }
    }

    fn scalar(&mut self, value: &mut Value, ty: &str, at: &str) {
        if let Value::Object(object) = value
            && object.len() == 1
            && let Some(inner) = object.get("value").filter(|v| !v.is_object() && !v.is_array())
        {
            *value = inner.clone();
            self.fixes.push(Fix::UnwrappedValue { at: at.to_string() });
        }
        let Value::String(text) = value else { return };
        let coerced = match ty {
            "integer" | "number" => number_from(text, ty == "integer"),
            "boolean" => match text.as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            _ => None,
        };
        if let Some(coerced) = coerced {
            *value = coerced;
            self.fixes.push(Fix::Coerced { at: at.to_string(), to: ty_name(ty) });
        }
    }

    fn object(&mut self, value: &mut Value, schema: &'s Value, depth: usize, at: &str) {
        if let Value::String(text) = value {
            let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(text) else { return };
            *value = parsed;
            self.fixes.push(Fix::ParsedString { at: at.to_string(), kind: "object" });
        }
        let Value::Object(object) = value else { return };
        let properties = schema.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let patterned = schema.get("patternProperties").is_some_and(Value::is_object);
        let composed =
            ["allOf", "anyOf", "oneOf"].iter().any(|k| schema.get(*k).is_some_and(Value::is_array));
        let additional = schema.get("additionalProperties");
        let closed = additional == Some(&Value::Bool(false)) && !patterned && !composed;
        let keys: Vec<String> = object.keys().cloned().collect();
        for key in keys {
            let path = fix::child(at, &key);
            let declared = properties.and_then(|p| p.get(&key));
            if declared.is_none() && closed {
                drop_key(object, &key);
                self.fixes.push(Fix::DroppedUnknown { at: path });
                continue;
            }
            let Some(property) =
                declared.or(if patterned { None } else { additional }).filter(|p| p.is_object())
            else {
                continue;
            };
            if declared.is_some() && !required.contains(&key.as_str()) && !composed && plain(property) {
                let current = &object[&key];
                let placeholder =
                    current.as_object().is_some_and(Map::is_empty) && type_of(property) != Some("object");
                if current.is_null() || placeholder {
                    drop_key(object, &key);
                    self.fixes.push(if placeholder {
                        Fix::DroppedPlaceholder { at: path }
                    } else {
                        Fix::DroppedNull { at: path }
                    });
                    continue;
                }
            }
            if let Some(current) = object.get_mut(&key) {
                self.value(current, property, depth + 1, &path);
            }
        }
    }

    fn array(&mut self, value: &mut Value, schema: &'s Value, depth: usize, at: &str) {
        let parsed = match value {
            Value::String(text) => serde_json::from_str::<Value>(text).ok(),
            _ => None,
        };
        let prefix = schema.get("prefixItems").and_then(Value::as_array);
        let tuple = prefix.or_else(|| schema.get("items").and_then(Value::as_array));
        if let Some(parsed @ Value::Array(_)) = parsed {
            *value = parsed;
            self.fixes.push(Fix::ParsedString { at: at.to_string(), kind: "array" });
        }
        if let Value::Array(items) = value {
            let path = fix::item(at);
            for (i, item) in items.iter_mut().enumerate() {
                let member = match tuple {
                    Some(positions) => positions.get(i).or_else(|| {
                        if prefix.is_some() { schema.get("items") } else { schema.get("additionalItems") }
                    }),
                    None => schema.get("items"),
                };
                if let Some(member) = member.filter(|m| m.is_object()) {
                    self.value(item, member, depth + 1, &path);
                }
            }
            return;
        }
        let Some(items) = schema.get("items").filter(|i| i.is_object() && tuple.is_none()) else { return };
        let mut single = value.clone();
        let mut inner = Repairer { root: self.root, fixes: Vec::new() };
        inner.value(&mut single, items, depth + 1, &fix::item(at));
        let compatible = match type_of(items) {
            Some("integer") => {
                single.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER)
            }
            Some("number") => single.as_f64().is_some_and(f64::is_finite),
            Some(ty @ ("object" | "array" | "string" | "boolean")) => has_type(&single, ty),
            _ => false,
        };
        if compatible {
            *value = Value::Array(vec![single]);
            self.fixes.extend(inner.fixes);
            self.fixes.push(Fix::Wrapped { at: at.to_string() });
        }
    }
}

/// Remove `key` keeping the order of the others (`Map::remove` may swap the last key into its place).
pub fn drop_key(object: &mut Map<String, Value>, key: &str) {
    object.retain(|k, _| k != key);
}

fn ty_name(ty: &str) -> &'static str {
    match ty {
        "integer" => "integer",
        "boolean" => "boolean",
        _ => "number",
    }
}

/// A bare single-type property provably rejects `null` and `{}`; compositions, enums, constants, references
/// and nullable flags may accept them.
fn plain(property: &Value) -> bool {
    type_of(property).is_some_and(|t| t != "null")
        && ["anyOf", "oneOf", "allOf", "enum", "const", "$ref", "nullable"]
            .iter()
            .all(|k| property.get(*k).is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fixes_name_the_rule_and_the_key_path_never_the_value() {
        let schema = json!({"type": "object", "properties": {
            "edits": {"type": "array", "items": {"type": "object", "properties": {"line": {"type": "integer"}}}},
            "limit": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "timeout": {"type": "integer"}
        }});
        let mut args = json!({"edits": "[{\"line\": \"3\"}, {\"line\": \"4\"}]", "limit": {"value": "20"}, "tags": "x", "timeout": null});
        let fixes = repair(&mut args, &schema);
        assert_eq!(args, json!({"edits": [{"line": 3}, {"line": 4}], "limit": 20, "tags": ["x"]}));
        let sentences: Vec<String> = fixes.iter().map(ToString::to_string).collect();
        assert_eq!(
            sentences,
            vec![
                "parsed stringified array in edits",
                "coerced string to integer in edits[].line",
                "coerced string to integer in edits[].line",
                "unwrapped {\"value\": …} in limit",
                "coerced string to integer in limit",
                "wrapped a single value into an array in tags",
                "dropped null optional timeout",
            ]
        );
        assert_eq!(
            fix::note(&fixes).unwrap(),
            "<repair_note>parsed stringified array in edits; coerced string to integer in edits[].line; unwrapped {\"value\": …} in limit; coerced string to integer in limit; wrapped a single value into an array in tags; dropped null optional timeout</repair_note>"
        );
    }

    #[test]
    fn a_matching_union_branch_is_still_repaired_inside() {
        let schema = json!({"type": "object", "properties": {
            "opts": {"anyOf": [{"type": "object", "properties": {"n": {"type": "integer"}}}, {"type": "null"}]},
            "list": {"type": ["array", "null"], "items": {"type": "boolean"}}
        }});
        let mut args = json!({"opts": {"n": "2"}, "list": ["true"]});
        repair(&mut args, &schema);
        assert_eq!(args, json!({"opts": {"n": 2}, "list": [true]}));
    }
}
