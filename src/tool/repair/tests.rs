//! The pipeline end to end on a registry of stand-in tools with the built-ins' schemas.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::display::Presentation;
use crate::tool::{Def, ToolOutput};

fn def(id: &str, parameters: Value) -> Def {
    Def {
        id: id.into(),
        description: String::new(),
        parameters,
        permission: None,
        present: |_, _| Presentation::default(),
        preview: None,
        execute: Arc::new(|_, _| Box::pin(async { Ok(ToolOutput::text("ran")) })),
    }
}

fn registry() -> Registry {
    let registry = Registry::default();
    registry.register(def(
        "read",
        json!({"type": "object", "properties": {
            "file_path": {"type": "string", "description": "Absolute path of the file to read"},
            "offset": {"type": "integer"}, "limit": {"type": "integer"}
        }, "required": ["file_path"]}),
    ));
    registry.register(def(
        "edit",
        json!({"type": "object", "properties": {
            "file_path": {"type": "string", "description": "Absolute path of the file to edit"},
            "old_string": {"type": "string", "description": "The text to replace"},
            "new_string": {"type": "string", "description": "The replacement text"},
            "replace_all": {"type": "boolean"}
        }, "required": ["file_path", "old_string", "new_string"]}),
    ));
    registry.register(def(
        "apply_patch",
        json!({"type": "object", "properties": {"patch": {"type": "string"}}, "required": ["patch"]}),
    ));
    registry.register(def(
        "question",
        json!({"type": "object", "properties": {
            "question": {"type": "string"}, "options": {"type": "array", "items": {"type": "string"}}
        }, "required": ["question"]}),
    ));
    registry.register(invalid::def());
    registry
}

fn sentences(prepared: &Prepared) -> Vec<String> {
    prepared.fixes.iter().map(ToString::to_string).collect()
}

#[test]
fn valid_input_passes_untouched_with_no_note() {
    let raw = r#"{"file_path": "/a \\d \u00e9", "offset": 2}"#;
    let prepared = prepare(&registry(), "read", raw, false);
    assert_eq!(
        prepared,
        Prepared { tool: "read".into(), args: serde_json::from_str(raw).unwrap(), fixes: vec![] }
    );
    assert_eq!(with_note(&prepared.fixes, "out".into()), "out");
}

#[test]
fn a_sloppy_call_is_healed_and_the_note_lists_every_rule_in_order() {
    let raw = "```json\n{\"path\": \"`/src/a.rs`\", \"offset\": \"10\", \"limit\": null,}\n```";
    let prepared = prepare(&registry(), "default_api.Read", raw, false);
    assert_eq!(prepared.tool, "read");
    assert_eq!(prepared.args, json!({"file_path": "/src/a.rs", "offset": 10}));
    assert_eq!(
        with_note(&prepared.fixes, "1\tx".into()),
        "<repair_note>called tool read (sent as default_api.Read); stripped a Markdown code fence; repaired invalid JSON syntax; renamed path→file_path; coerced string to integer in offset; dropped null optional limit; stripped Markdown from file_path</repair_note>\n1\tx"
    );
}

#[test]
fn other_agents_tool_and_argument_names_reach_ours() {
    let raw = r#"{"filePath": "/a", "old_str": "x", "new_str": "y", "replaceAll": "true"}"#;
    let prepared = prepare(&registry(), "str_replace", raw, false);
    assert_eq!(prepared.tool, "edit");
    assert_eq!(
        prepared.args,
        json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": true})
    );
    assert_eq!(
        sentences(&prepared),
        vec![
            "called tool edit (sent as str_replace)",
            "renamed filePath→file_path",
            "renamed old_str→old_string",
            "renamed new_str→new_string",
            "renamed replaceAll→replace_all",
            "coerced string to boolean in replace_all"
        ]
    );
}

#[test]
fn stringified_arrays_and_scalars_for_arrays_are_repaired() {
    let stringified =
        prepare(&registry(), "question", r#"{"question": "q", "options": "[\"a\", \"b\"]"}"#, false);
    assert_eq!(stringified.args, json!({"question": "q", "options": ["a", "b"]}));
    assert_eq!(sentences(&stringified), vec!["parsed stringified array in options"]);
    let single = prepare(&registry(), "question", r#"{"question": "q", "options": "a"}"#, false);
    assert_eq!(single.args, json!({"question": "q", "options": ["a"]}));
}

#[test]
fn an_apply_patch_heredoc_is_unwrapped_even_under_an_alias() {
    let body = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch";
    let raw = json!({"patchText": format!("apply_patch <<'EOF'\n{body}\nEOF\n")}).to_string();
    let prepared = prepare(&registry(), "apply_patch", &raw, false);
    assert_eq!(prepared.args, json!({"patch": body}));
    assert_eq!(sentences(&prepared), vec!["renamed patchText→patch", "unwrapped a shell heredoc in patch"]);
}

#[test]
fn missing_required_fields_get_one_correction_and_the_tool_does_not_run() {
    let prepared = prepare(&registry(), "Edit", r#"{"path": "/a", "old": "x"}"#, false);
    assert_eq!(prepared.tool, invalid::ID);
    assert_eq!(prepared.args["original_name"], "Edit");
    assert_eq!(
        prepared.args["error"],
        "Tool edit needs old_string: string (The text to replace), new_string: string (The replacement text); you sent keys [file_path, old]. Resend the call with every required argument."
    );
    assert_eq!(sentences(&prepared), vec!["called tool edit (sent as Edit)", "renamed path→file_path"]);
}

#[test]
fn a_call_cut_off_by_the_output_limit_is_answered_truncated_and_never_guessed() {
    let raw = "{\"file_path\": \"/some/fi";
    let cut = prepare(&registry(), "read", raw, true);
    assert_eq!(cut.tool, invalid::ID);
    assert_eq!(cut.args, invalid::args("read", TRUNCATED, raw));
    assert!(TRUNCATED.contains("truncated") && TRUNCATED.contains("Resend it smaller"));
}

#[test]
fn unparseable_arguments_go_to_invalid_with_serdes_complaint() {
    let prepared = prepare(&registry(), "read", "[1, 2", false);
    assert_eq!(prepared.tool, invalid::ID);
    assert_eq!(
        prepared.args["error"],
        "The arguments provided to the tool `read` are invalid: invalid JSON: EOF while parsing a list at line 1 column 5\nPlease resend the call with a single valid JSON object as its arguments."
    );
}

#[test]
fn the_history_keeps_valid_arguments_verbatim_and_only_parseable_objects_otherwise() {
    assert_eq!(history_arguments("{\"a\":  1}"), None);
    assert_eq!(history_arguments("```json\n{\"a\": 1,}\n```").as_deref(), Some("{\"a\":1}"));
    assert_eq!(history_arguments("\"{\\\"a\\\":1}\"").as_deref(), Some("{\"a\":1}"));
    assert_eq!(
        history_arguments("{\"content\": \"fn main() {").as_deref(),
        Some("{}"),
        "cut off: not completed"
    );
    assert_eq!(history_arguments("[1, 2]").as_deref(), Some("{}"));
}

#[test]
fn unknown_tools_keep_their_name_for_the_registry_to_answer() {
    let prepared = prepare(&registry(), "fly", "{\"to\": 1}", false);
    assert_eq!(prepared, Prepared { tool: "fly".into(), args: json!({"to": 1}), fixes: vec![] });
    assert!(
        prepare(&registry(), "Invalid", "{}", false).tool == "Invalid",
        "the hidden tool is never guessed"
    );
}
