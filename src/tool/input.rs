//! Input repair at the schema level (seed 003): argument names models commonly get wrong are renamed to the
//! tool's canonical names. A rename happens only when the tool has the canonical parameter, does not have the
//! alias as a parameter of its own, and the call did not also send the canonical name.
//!
//! Owns the alias table. Reports rule names only, never values.

use serde_json::Value;

/// Canonical name ← aliases.
const ALIASES: &[(&str, &[&str])] = &[
    (
        "file_path",
        &["path", "filePath", "filepath", "file", "filename", "absolute_path", "absolutePath", "target_file"],
    ),
    (
        "old_string",
        &["oldString", "old_str", "oldText", "old_text", "oldValue", "search", "find", "original"],
    ),
    ("new_string", &["newString", "new_str", "newText", "new_text", "newValue", "replace", "replacement"]),
    ("replace_all", &["replaceAll", "all"]),
    ("pattern", &["query", "regex", "search", "term", "grep", "glob"]),
    ("command", &["cmd", "script", "shell_command", "command_line", "bash", "code", "input"]),
    ("content", &["text", "contents", "data", "body", "file_text"]),
    ("directory", &["dir", "folder", "cwd"]),
];

/// Rename aliased keys of `args` in place; returns a note per rename (`renamed filePath→file_path`).
pub fn rename_aliases(args: &mut Value, schema: &Value) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    let Some(object) = args.as_object_mut() else { return Vec::new() };
    let mut notes = Vec::new();
    for (canonical, aliases) in ALIASES {
        if !properties.contains_key(*canonical) || object.contains_key(*canonical) {
            continue;
        }
        let alias = aliases.iter().find(|a| !properties.contains_key(**a) && object.contains_key(**a));
        if let Some(alias) = alias
            && let Some(value) = object.remove(*alias)
        {
            object.insert(canonical.to_string(), value);
            notes.push(format!("renamed {alias}→{canonical}"));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(keys: &[&str]) -> Value {
        let properties: serde_json::Map<String, Value> =
            keys.iter().map(|k| (k.to_string(), json!({}))).collect();
        json!({"properties": properties})
    }

    #[test]
    fn common_aliases_become_the_canonical_names() {
        let mut args = json!({"filePath": "/a", "oldString": "x", "newString": "y", "replaceAll": true});
        let notes =
            rename_aliases(&mut args, &schema(&["file_path", "old_string", "new_string", "replace_all"]));
        assert_eq!(
            args,
            json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": true})
        );
        assert_eq!(
            notes,
            vec![
                "renamed filePath→file_path",
                "renamed oldString→old_string",
                "renamed newString→new_string",
                "renamed replaceAll→replace_all"
            ]
        );
    }

    #[test]
    fn a_parameter_the_tool_really_has_is_never_renamed() {
        let mut args = json!({"path": "src", "query": "fn"});
        let notes = rename_aliases(&mut args, &schema(&["pattern", "path", "include"]));
        assert_eq!(args, json!({"path": "src", "pattern": "fn"}));
        assert_eq!(notes, vec!["renamed query→pattern"]);
    }

    #[test]
    fn the_canonical_name_wins_when_both_are_sent() {
        let mut args = json!({"file_path": "/a", "path": "/b"});
        assert!(rename_aliases(&mut args, &schema(&["file_path", "content"])).is_empty());
        assert_eq!(args, json!({"file_path": "/a", "path": "/b"}));
    }
}
