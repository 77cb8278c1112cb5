//! The required-field check after repair (seed 003): when the schema's required arguments are still missing,
//! the model gets ONE correction naming every missing field with its type and description, and the keys it
//! did send, instead of the first error the tool would have hit.
//!
//! Owns that message. Must not know any tool.

use serde_json::Value;

/// `string`, `integer|null`, `array of string`, or `value` when the schema does not say.
fn type_name(property: &Value) -> String {
    match property.get("type") {
        Some(Value::String(ty)) if ty == "array" => {
            match property.pointer("/items/type").and_then(Value::as_str) {
                Some(item) => format!("array of {item}"),
                None => "array".into(),
            }
        }
        Some(Value::String(ty)) => ty.clone(),
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("|"),
        _ => "value".into(),
    }
}

/// The correction for `tool`, or `None` when every required argument is there. `null` counts as missing
/// where the property has a single type other than `null`.
pub fn check(tool: &str, args: &Value, schema: &Value) -> Option<String> {
    let required = schema.get("required").and_then(Value::as_array)?;
    let properties = schema.get("properties");
    let missing: Vec<String> = required
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|key| {
            let property = properties.and_then(|p| p.get(key)).unwrap_or(&Value::Null);
            let single = property.get("type").and_then(Value::as_str).is_some_and(|t| t != "null");
            let absent = match args.get(key) {
                None => true,
                Some(value) => value.is_null() && single,
            };
            absent.then(|| match property.get("description").and_then(Value::as_str) {
                Some(description) => format!("{key}: {} ({description})", type_name(property)),
                None => format!("{key}: {}", type_name(property)),
            })
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    let sent: Vec<&str> =
        args.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    Some(format!(
        "Tool {tool} needs {}; you sent keys [{}]. Resend the call with every required argument.",
        missing.join(", "),
        sent.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "file_path": {"type": "string", "description": "Absolute path of the file to edit"},
            "old_string": {"type": "string", "description": "The text to replace"},
            "edits": {"type": "array", "items": {"type": "object"}},
            "n": {"type": ["integer", "null"]}
        }, "required": ["file_path", "old_string", "edits", "n"]})
    }

    #[test]
    fn every_missing_field_is_named_once_with_type_and_description() {
        let message = check("edit", &json!({"old_string": "x", "oldText": "y", "edits": null}), &schema());
        assert_eq!(
            check("edit", &json!({"file_path": "/a", "old_string": "x", "edits": [], "n": null}), &schema()),
            None
        );
        assert_eq!(
            message.as_deref(),
            Some(
                "Tool edit needs file_path: string (Absolute path of the file to edit), edits: array of object, n: integer|null; you sent keys [old_string, oldText, edits]. Resend the call with every required argument."
            )
        );
    }

    #[test]
    fn complete_arguments_and_schemas_without_requirements_pass() {
        let args = json!({"file_path": "/a", "old_string": "x", "edits": [], "n": 1});
        assert_eq!(check("edit", &args, &schema()), None);
        assert_eq!(check("t", &json!({}), &json!({"type": "object"})), None);
    }
}
