//! The JSON-text stages of input repair (PROVIDERS.md §6.3 steps 1-3, seed 000 §8.6): strict parse; else a
//! pre-pass (trim, strip a Markdown fence, cut to the first balanced object, keep backslashes that start no
//! JSON escape) and a strict parse again; else the JSON-repair crate. A call the output limit cut off is never
//! completed by guessing: it is reported as truncated.
//!
//! Owns turning the raw argument text into a JSON object. Must not look at any schema.

use serde_json::Value;

use super::fix::Fix;

/// Why the arguments could not become an object. Handled by the pipeline, which answers the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Not JSON even after repair; the message names serde's first complaint.
    Invalid(String),
    /// The output limit stopped the model inside the arguments.
    Truncated,
}

/// Largest argument text handed to the JSON-repair crate; bigger text must be valid JSON already.
const MAX_REPAIR_BYTES: usize = 8 * 1024 * 1024;

/// Parse `raw` into an object. `cut_off`: the response stopped at the output limit with this call last.
pub fn parse(raw: &str, cut_off: bool) -> Result<(Value, Vec<Fix>), Failure> {
    let mut fixes = Vec::new();
    if raw.trim().is_empty() {
        return Ok((Value::Object(Default::default()), fixes));
    }
    let first_error = match serde_json::from_str::<Value>(raw) {
        Ok(value) => return as_object(value, fixes),
        Err(e) => e.to_string(),
    };
    let mut text = raw.trim();
    if let Some(inner) = strip_fence(text) {
        text = inner;
        fixes.push(Fix::StrippedFence);
    }
    match balanced_object(text) {
        Some((start, end)) => {
            if start > 0 || end < text.len() {
                fixes.push(Fix::CutToObject);
            }
            text = &text[start..end];
        }
        None if cut_off => return Err(Failure::Truncated),
        None => {}
    }
    let text = match keep_backslashes(text) {
        Some(escaped) => {
            fixes.push(Fix::KeptBackslashes);
            escaped
        }
        None => text.to_string(),
    };
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        return as_object(value, fixes);
    }
    let options = jsonrepair_rs::RepairOptions::new().with_max_input_bytes(MAX_REPAIR_BYTES);
    let repaired = jsonrepair_rs::jsonrepair_with_options(&text, options).ok();
    match repaired.and_then(|r| serde_json::from_str::<Value>(&r).ok()) {
        Some(value) => {
            fixes.push(Fix::RepairedSyntax);
            // A repair that yields no object (`garbage` → `"garbage"`) explains less than serde's complaint.
            as_object(value, fixes).map_err(|_| Failure::Invalid(format!("invalid JSON: {first_error}")))
        }
        None => Err(Failure::Invalid(format!("invalid JSON: {first_error}"))),
    }
}

/// An object, or a JSON string that holds one (double encoding); anything else is not arguments.
fn as_object(value: Value, mut fixes: Vec<Fix>) -> Result<(Value, Vec<Fix>), Failure> {
    match value {
        Value::Object(_) => Ok((value, fixes)),
        Value::String(inner) => match serde_json::from_str::<Value>(&inner) {
            Ok(object @ Value::Object(_)) => {
                fixes.push(Fix::UnwrappedString);
                Ok((object, fixes))
            }
            _ => Err(Failure::Invalid("arguments must be a JSON object".into())),
        },
        _ => Err(Failure::Invalid("arguments must be a JSON object".into())),
    }
}

/// The inside of a ```` ``` ```` fence (with or without an info string such as `json`).
fn strip_fence(text: &str) -> Option<&str> {
    let body = text.strip_prefix("```")?.strip_suffix("```")?;
    let body = match body.find('\n') {
        Some(newline) if body[..newline].trim().chars().all(|c| c.is_ascii_alphanumeric()) => {
            &body[newline + 1..]
        }
        _ => body,
    };
    Some(body.trim())
}

/// Byte range of the first `{` and the `}` that closes it (braces inside double-quoted strings do not
/// count); `None` when there is no `{` or it never closes.
fn balanced_object(text: &str) -> Option<(usize, usize)> {
    let start = text.find('{')?;
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text[start..].char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((start, start + i + 1));
                }
            }
            _ => {}
        }
    }
    None
}

/// Inside quoted strings, double every `\` that starts no JSON escape, so `"\d+"` means the regex `\d+` and
/// `"C:\Users"` the path; otherwise every repairer drops the backslash. `\b` and `\f` count as no escape too:
/// in arguments that need repair they are a path (`\bob`) or a regex (`\b`), never a backspace or form feed.
/// Single-quoted strings (which the JSON-repair crate accepts) are treated alike. `None` when nothing changed.
fn keep_backslashes(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let (mut quote, mut changed, mut i) = (None, false, 0);
    while i < chars.len() {
        let c = chars[i];
        out.push(c);
        i += 1;
        let Some(open) = quote else {
            quote = matches!(c, '"' | '\'').then_some(c);
            continue;
        };
        if c == open {
            quote = None;
        } else if c == '\\' {
            let next = chars.get(i).copied();
            let unicode = next == Some('u')
                && chars.get(i + 1..i + 5).is_some_and(|h| h.iter().all(char::is_ascii_hexdigit));
            if unicode || next.is_some_and(|n| matches!(n, '"' | '\\' | '/' | 'n' | 'r' | 't') || n == open) {
                out.push(chars[i]);
                i += 1;
            } else {
                out.push('\\');
                changed = true;
            }
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(raw: &str) -> (Value, Vec<Fix>) {
        parse(raw, false).unwrap()
    }

    #[test]
    fn valid_arguments_pass_unchanged_without_fixes() {
        assert_eq!(ok(r#"{"pattern":"a,}","n":[1, 2]}"#), (json!({"pattern": "a,}", "n": [1, 2]}), vec![]));
        assert_eq!(ok("  "), (json!({}), vec![]));
    }

    #[test]
    fn fences_and_surrounding_prose_are_removed() {
        assert_eq!(
            ok("```json\n{\"file_path\": \"/a\"}\n```"),
            (json!({"file_path": "/a"}), vec![Fix::StrippedFence])
        );
        assert_eq!(
            ok("Sure! Here it is: {\"a\": \"}\"} I hope this helps."),
            (json!({"a": "}"}), vec![Fix::CutToObject])
        );
        assert_eq!(ok("{\"a\": 1}{\"b\": 2}"), (json!({"a": 1}), vec![Fix::CutToObject]));
    }

    #[test]
    fn regex_and_windows_backslashes_survive() {
        assert_eq!(
            ok(r#"{"pattern": "\d+\.rs"}"#),
            (json!({"pattern": "\\d+\\.rs"}), vec![Fix::KeptBackslashes])
        );
        assert_eq!(
            ok(r#"{"file_path": "C:\Users\bob\x.rs", "n": "\u00e9\n"}"#),
            (json!({"file_path": "C:\\Users\\bob\\x.rs", "n": "é\n"}), vec![Fix::KeptBackslashes])
        );
        // `\u` without four hex digits is not an escape either; a trailing backslash is kept too. A backspace
        // (`\b`) is never meant where the arguments needed repair.
        assert_eq!(ok(r#"{"p": "C:\users\"#).0, json!({"p": "C:\\users\\"}));
    }

    #[test]
    fn the_json_repair_crate_fixes_syntax_after_the_pre_pass() {
        assert_eq!(
            ok(r#"{"a": "x,}", "b": [1, 2,], }"#),
            (json!({"a": "x,}", "b": [1, 2]}), vec![Fix::RepairedSyntax])
        );
        assert_eq!(
            ok("{'pattern': '\\d+', flag: True, none: None, // note\n}"),
            (
                json!({"pattern": "\\d+", "flag": true, "none": null}),
                vec![Fix::KeptBackslashes, Fix::RepairedSyntax]
            )
        );
        assert_eq!(
            ok("```\n{\"a\": 1,}\n```"),
            (json!({"a": 1}), vec![Fix::StrippedFence, Fix::RepairedSyntax])
        );
    }

    #[test]
    fn double_encoded_objects_are_unwrapped() {
        assert_eq!(ok(r#""{\"pattern\":\"x\"}""#), (json!({"pattern": "x"}), vec![Fix::UnwrappedString]));
    }

    #[test]
    fn a_call_cut_off_by_the_output_limit_is_truncated_never_completed() {
        let cut = "{\"file_path\": \"/a\", \"content\": \"fn main() {";
        assert_eq!(parse(cut, true), Err(Failure::Truncated));
        assert_eq!(parse("```json\n{\"a\": ", true), Err(Failure::Truncated));
        // A complete call in a response that hit the limit still runs.
        assert_eq!(parse("{\"a\": 1,}", true), Ok((json!({"a": 1}), vec![Fix::RepairedSyntax])));
    }

    #[test]
    fn garbage_and_non_objects_are_errors_naming_serdes_first_complaint() {
        assert_eq!(parse("[1,2]", false), Err(Failure::Invalid("arguments must be a JSON object".into())));
        assert_eq!(parse("42", false), Err(Failure::Invalid("arguments must be a JSON object".into())));
        let Err(Failure::Invalid(message)) = parse("garbage", false) else { panic!("garbage parsed") };
        assert!(message.starts_with("invalid JSON: expected value at line 1 column 1"), "{message}");
    }
}
