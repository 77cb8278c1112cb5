//! Parameter aliases (seed 003, PROVIDERS.md §6.1): argument names models commonly use instead of ours. The
//! table is keyed by canonical parameter name, so it is per tool through the tool's schema: a rename happens
//! only when the tool has the canonical parameter, does not have the alias as a parameter of its own, and the
//! call did not also send the canonical name (the canonical key always wins).
//!
//! `start_line` is deliberately not an alias of `offset`: it counts from 1 and `offset` from 0, so a rename
//! would read the wrong line.
//!
//! Owns the alias table. Must not know any tool.

use serde_json::{Map, Value};

use super::fix::Fix;

/// Canonical name ← aliases, tried in this order.
const ALIASES: &[(&str, &[&str])] = &[
    (
        "file_path",
        &["path", "filePath", "filepath", "file", "filename", "absolute_path", "absolutePath", "target_file"],
    ),
    ("path", &["directory", "dir", "folder", "cwd", "search_path", "file_path", "filePath"]),
    (
        "old_string",
        &["oldString", "old_str", "oldText", "old_text", "oldValue", "search", "find", "original"],
    ),
    ("new_string", &["newString", "new_str", "newText", "new_text", "newValue", "replace", "replacement"]),
    ("replace_all", &["replaceAll", "all"]),
    ("pattern", &["query", "regex", "search", "term", "grep", "glob"]),
    ("command", &["cmd", "script", "shell_command", "command_line", "bash", "code", "input"]),
    ("content", &["text", "contents", "data", "body", "file_text"]),
    ("patch", &["patchText", "patch_text", "diff", "input"]),
    ("limit", &["line_count", "lines", "max_lines", "num_lines"]),
    ("max_count", &["max_results", "limit", "max_matches", "head_limit"]),
    ("timeout", &["timeout_ms", "timeoutMs"]),
    ("directory", &["dir", "folder", "cwd"]),
    // Seed 003's names (read_multiple_files' `include`, camelCase task options) and other agents' names.
    ("paths", &["include", "files", "file_paths", "filePaths"]),
    ("filepath", &["file_path", "filePath", "path", "file"]),
    ("task_id", &["taskId", "id", "task", "shell_id", "bash_id"]),
    ("include_stopped", &["includeStopped"]),
    ("check_after_ms", &["checkAfterMs"]),
    ("max_duration_ms", &["maxDurationMs"]),
    ("depth", &["max_depth", "maxDepth", "levels"]),
    ("context", &["context_lines", "-C", "C"]),
    ("before", &["before_context", "-B", "B"]),
    ("after", &["after_context", "-A", "A"]),
];

/// Rename aliased keys of `args` in place, keeping their position.
pub fn rename(args: &mut Value, schema: &Value) -> Vec<Fix> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    let Some(object) = args.as_object_mut() else { return Vec::new() };
    let mut fixes = Vec::new();
    for (canonical, aliases) in ALIASES {
        if !properties.contains_key(*canonical) || object.contains_key(*canonical) {
            continue;
        }
        if let Some(alias) =
            aliases.iter().find(|a| !properties.contains_key(**a) && object.contains_key(**a))
        {
            rename_key(object, alias, canonical);
            fixes.push(Fix::Renamed { from: alias.to_string(), to: canonical });
        }
    }
    fixes
}

fn rename_key(object: &mut Map<String, Value>, from: &str, to: &str) {
    *object = std::mem::take(object)
        .into_iter()
        .map(|(key, value)| if key == from { (to.to_string(), value) } else { (key, value) })
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(keys: &[&str]) -> Value {
        let properties: Map<String, Value> = keys.iter().map(|k| (k.to_string(), json!({}))).collect();
        json!({"properties": properties})
    }

    fn renamed(fixes: &[Fix]) -> Vec<String> {
        fixes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn common_aliases_become_the_canonical_names() {
        let mut args = json!({"filePath": "/a", "oldString": "x", "newString": "y", "replaceAll": true});
        let fixes = rename(&mut args, &schema(&["file_path", "old_string", "new_string", "replace_all"]));
        assert_eq!(
            args,
            json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": true})
        );
        assert_eq!(
            renamed(&fixes),
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
        let fixes = rename(&mut args, &schema(&["pattern", "path", "include"]));
        assert_eq!(args, json!({"path": "src", "pattern": "fn"}));
        assert_eq!(renamed(&fixes), vec!["renamed query→pattern"]);
    }

    #[test]
    fn seed_003_names_reach_the_merged_and_renamed_parameters() {
        let mut read = json!({"include": ["src/*.rs"]});
        rename(&mut read, &schema(&["file_path", "offset", "limit", "paths"]));
        assert_eq!(read, json!({"paths": ["src/*.rs"]}));
        let mut tasks = json!({"includeStopped": false});
        rename(&mut tasks, &schema(&["include_stopped"]));
        assert_eq!(tasks, json!({"include_stopped": false}));
        let mut output = json!({"taskId": "task_1"});
        rename(&mut output, &schema(&["task_id", "wait"]));
        assert_eq!(output, json!({"task_id": "task_1"}));
        let mut monitor = json!({"command": "make", "checkAfterMs": 500, "maxDurationMs": 9});
        rename(&mut monitor, &schema(&["command", "check_after_ms", "max_duration_ms", "notify"]));
        assert_eq!(monitor, json!({"command": "make", "check_after_ms": 500, "max_duration_ms": 9}));
        let mut hashline = json!({"file_path": "/a", "operation": "replace"});
        rename(&mut hashline, &schema(&["filepath", "operation", "line"]));
        assert_eq!(hashline, json!({"filepath": "/a", "operation": "replace"}));
    }

    #[test]
    fn the_canonical_name_wins_when_both_are_sent() {
        let mut args = json!({"file_path": "/a", "path": "/b"});
        assert!(rename(&mut args, &schema(&["file_path", "content"])).is_empty());
        assert_eq!(args, json!({"file_path": "/a", "path": "/b"}));
    }

    #[test]
    fn the_same_alias_goes_where_each_tool_wants_it() {
        let mut shell = json!({"input": "ls"});
        rename(&mut shell, &schema(&["command", "timeout"]));
        assert_eq!(shell, json!({"command": "ls"}));
        let mut patch = json!({"input": "*** Begin Patch"});
        rename(&mut patch, &schema(&["patch"]));
        assert_eq!(patch, json!({"patch": "*** Begin Patch"}));
        let mut search = json!({"dir": "src", "pattern": "x", "limit": 5});
        rename(&mut search, &schema(&["pattern", "path", "max_count"]));
        assert_eq!(search, json!({"path": "src", "pattern": "x", "max_count": 5}));
    }
}
