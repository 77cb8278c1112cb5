//! Repairs keyed by well-known parameter names, for string parameters the tool's schema declares: Markdown
//! around paths (`` `src/a.rs` ``, `**a.rs**`, `[a.rs](src/a.rs)`), a shell heredoc around a `patch`, and a
//! backspace character in a regex `pattern` (the model wrote `"\bword\b"`, which JSON reads as backspaces).
//!
//! Owns these three rules. Must not know any tool.

use serde_json::Value;

use super::fix::Fix;
use super::heredoc;

/// Does the schema declare `key` as a string parameter?
fn string_parameter(schema: &Value, key: &str) -> bool {
    schema.get("properties").and_then(|p| p.get(key)).and_then(|p| p.get("type")).and_then(Value::as_str)
        == Some("string")
}

fn is_path_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.ends_with("path") || matches!(key.as_str(), "directory" | "dir" | "cwd")
}

/// One layer of Markdown around a path, or `None`.
fn unmark(text: &str) -> Option<&str> {
    let text = text.trim();
    for mark in ["```", "**", "`"] {
        if let Some(inner) = text.strip_prefix(mark).and_then(|t| t.strip_suffix(mark))
            && !inner.trim().is_empty()
        {
            return Some(inner.trim());
        }
    }
    // `[label](target)`: the target is the path.
    let target = text.strip_prefix('[')?.split_once("](")?.1.strip_suffix(')')?;
    (!target.trim().is_empty() && !target.contains(['(', ')'])).then(|| target.trim())
}

fn strip_markdown(text: &str) -> Option<String> {
    let mut current = unmark(text)?;
    while let Some(inner) = unmark(current) {
        current = inner;
    }
    Some(current.to_string())
}

/// Apply the three rules to the top-level string arguments of `args`.
pub fn repair(args: &mut Value, schema: &Value) -> Vec<Fix> {
    let Some(object) = args.as_object_mut() else { return Vec::new() };
    let mut fixes = Vec::new();
    for (key, value) in object.iter_mut() {
        let Value::String(text) = value else { continue };
        if !string_parameter(schema, key) {
            continue;
        }
        let at = key.clone();
        if is_path_key(key)
            && let Some(plain) = strip_markdown(text)
        {
            *text = plain;
            fixes.push(Fix::StrippedMarkdown { at });
        } else if key == "patch"
            && let Some(body) = heredoc::unwrap(text)
        {
            *text = body;
            fixes.push(Fix::UnwrappedHeredoc { at });
        } else if key == "pattern" && text.contains('\u{8}') {
            *text = text.replace('\u{8}', "\\b");
            fixes.push(Fix::RestoredWordBoundary { at });
        }
    }
    fixes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "file_path": {"type": "string"}, "path": {"type": "string"}, "patch": {"type": "string"},
            "pattern": {"type": "string"}, "paths": {"type": "array"}, "other": {"type": "string"}
        }})
    }

    #[test]
    fn markdown_around_paths_is_stripped() {
        for (sent, path) in [
            ("`src/a.rs`", "src/a.rs"),
            ("**src/a.rs**", "src/a.rs"),
            ("**`src/a.rs`**", "src/a.rs"),
            ("```src/a.rs```", "src/a.rs"),
            ("[a.rs](src/a.rs)", "src/a.rs"),
            (" `/abs/x y.txt` ", "/abs/x y.txt"),
        ] {
            let mut args = json!({"file_path": sent});
            let fixes = repair(&mut args, &schema());
            assert_eq!(args, json!({"file_path": path}), "{sent}");
            assert_eq!(fixes, vec![Fix::StrippedMarkdown { at: "file_path".into() }]);
        }
    }

    #[test]
    fn plain_paths_and_other_keys_are_left_alone() {
        let mut args = json!({
            "path": "__init__.py", "file_path": "a*b*.rs", "other": "`x`", "paths": "`x`", "undeclared_path": "`x`"
        });
        let before = args.clone();
        assert!(repair(&mut args, &schema()).is_empty());
        assert_eq!(args, before);
    }

    #[test]
    fn heredoc_patches_and_backspaces_in_patterns_are_repaired() {
        let mut args =
            json!({"patch": "cat <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF", "pattern": "\u{8}fn\u{8}"});
        let fixes = repair(&mut args, &schema());
        assert_eq!(args, json!({"patch": "*** Begin Patch\n*** End Patch", "pattern": "\\bfn\\b"}));
        assert_eq!(
            fixes,
            vec![
                Fix::UnwrappedHeredoc { at: "patch".into() },
                Fix::RestoredWordBoundary { at: "pattern".into() }
            ]
        );
    }
}
