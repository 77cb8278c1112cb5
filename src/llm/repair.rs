//! Malformed tool-call repair, seed 000 §8.6: strict parse first; otherwise strip Markdown fences and drop
//! trailing commas; otherwise the caller routes the call to the `invalid` tool. A JSON string that itself
//! holds an object (double encoding) is unwrapped. Valid input is never changed.
//!
//! Owns the syntax-level repair only; schema-level fixes belong to the tool layer.

use serde_json::Value;

/// What the repair did, for the `<repair_note>` and the logs (rule names only, never values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fix {
    StrippedFence,
    DroppedTrailingCommas,
    UnwrappedString,
}

impl Fix {
    pub fn describe(self) -> &'static str {
        match self {
            Fix::StrippedFence => "stripped a Markdown code fence",
            Fix::DroppedTrailingCommas => "removed trailing commas",
            Fix::UnwrappedString => "parsed arguments that were sent as a JSON string",
        }
    }
}

fn strip_fence(text: &str) -> Option<&str> {
    let body = text.trim().strip_prefix("```")?;
    let body = body.strip_suffix("```")?;
    // Drop an info string such as `json` on the opening line.
    let body = match body.find('\n') {
        Some(newline) if body[..newline].trim().chars().all(|c| c.is_ascii_alphanumeric()) => {
            &body[newline + 1..]
        }
        _ => body,
    };
    Some(body.trim())
}

/// Remove commas that directly precede `}` or `]` (ignoring whitespace), outside strings.
fn drop_trailing_commas(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        if c == ','
            && chars[i + 1..].iter().find(|c| !c.is_whitespace()).is_some_and(|n| *n == '}' || *n == ']')
        {
            changed = true;
            continue;
        }
        out.push(c);
    }
    changed.then_some(out)
}

fn as_object(value: Value, fixes: &mut Vec<Fix>) -> Option<Value> {
    match value {
        Value::Object(_) => Some(value),
        Value::String(inner) => match serde_json::from_str::<Value>(&inner) {
            Ok(v @ Value::Object(_)) => {
                fixes.push(Fix::UnwrappedString);
                Some(v)
            }
            _ => None,
        },
        _ => None,
    }
}

/// Parse tool-call arguments, repairing what §8.6 allows. On failure returns a message for the model that
/// names the parse error.
pub fn repair_arguments(raw: &str) -> Result<(Value, Vec<Fix>), String> {
    let mut fixes = Vec::new();
    if raw.trim().is_empty() {
        return Ok((Value::Object(Default::default()), fixes));
    }
    let first_error = match serde_json::from_str::<Value>(raw) {
        Ok(value) => {
            return as_object(value, &mut fixes)
                .map(|v| (v, fixes))
                .ok_or_else(|| "arguments must be a JSON object".to_string());
        }
        Err(e) => e.to_string(),
    };
    let mut text = raw.trim().to_string();
    if let Some(inner) = strip_fence(&text) {
        text = inner.to_string();
        fixes.push(Fix::StrippedFence);
    }
    if let Some(fixed) = drop_trailing_commas(&text) {
        text = fixed;
        fixes.push(Fix::DroppedTrailingCommas);
    }
    if fixes.is_empty() {
        return Err(format!("invalid JSON: {first_error}"));
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(value) => as_object(value, &mut fixes)
            .map(|v| (v, fixes))
            .ok_or_else(|| "arguments must be a JSON object".to_string()),
        Err(_) => Err(format!("invalid JSON: {first_error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_arguments_pass_unchanged_without_notes() {
        let (value, fixes) = repair_arguments(r#"{"pattern":"a,}","n":[1, 2]}"#).unwrap();
        assert_eq!(value, json!({"pattern": "a,}", "n": [1, 2]}));
        assert!(fixes.is_empty());
    }

    #[test]
    fn fenced_arguments_are_unwrapped() {
        let (value, fixes) = repair_arguments("```json\n{\"file_path\": \"/a\"}\n```").unwrap();
        assert_eq!(value, json!({"file_path": "/a"}));
        assert_eq!(fixes, vec![Fix::StrippedFence]);
    }

    #[test]
    fn trailing_commas_are_dropped_outside_strings_only() {
        let (value, fixes) = repair_arguments(r#"{"a": "x,}", "b": [1, 2,], }"#).unwrap();
        assert_eq!(value, json!({"a": "x,}", "b": [1, 2]}));
        assert_eq!(fixes, vec![Fix::DroppedTrailingCommas]);
        let (value, fixes) = repair_arguments("```\n{\"a\": 1,}\n```").unwrap();
        assert_eq!(value, json!({"a": 1}));
        assert_eq!(fixes, vec![Fix::StrippedFence, Fix::DroppedTrailingCommas]);
    }

    #[test]
    fn double_encoded_objects_are_unwrapped() {
        let (value, fixes) = repair_arguments(r#""{\"pattern\":\"x\"}""#).unwrap();
        assert_eq!(value, json!({"pattern": "x"}));
        assert_eq!(fixes, vec![Fix::UnwrappedString]);
    }

    #[test]
    fn garbage_and_non_objects_are_errors_naming_the_problem() {
        let err = repair_arguments("{\"a\": ").unwrap_err();
        assert_eq!(err, "invalid JSON: EOF while parsing a value at line 1 column 6");
        assert_eq!(repair_arguments("[1,2]").unwrap_err(), "arguments must be a JSON object");
        assert!(repair_arguments("garbage").unwrap_err().starts_with("invalid JSON: expected value"));
        assert_eq!(repair_arguments("  ").unwrap().0, json!({}));
    }
}
