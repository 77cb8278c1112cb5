//! Table tests over `tests/fixtures/tool_input_repair_cases.json`: OpenCode's `ToolInputRepair` vectors (35
//! cases), run through the value stages exactly as a call meets them (aliases, schema, fields). Every
//! mismatch is collected and reported at once.
//!
//! A vector whose `input` is a JSON string is the raw argument text; the schema stage parses it as the root
//! object. `schema: "__undefined__"` means no schema. `expect.unchanged` means the value comes back equal,
//! with no fix reported (upstream asserts object identity).
//!
//! Deviations: none of the 35 vectors disagrees with seed 003. Our additions (a value matching one branch of a
//! union is still repaired inside, `{"value": x}` unwrapping, the alias table, Markdown paths) fire on none of
//! them; [`ADDITIONS_SILENT`] asserts that by counting the fixes outside the schema stage.

use serde_json::Value;

use super::{repair_arguments, schema};

/// How many vectors our non-OpenCode rules change: none.
const ADDITIONS_SILENT: usize = 0;

fn cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tool_input_repair_cases.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    file["cases"].as_array().unwrap().clone()
}

#[test]
fn every_opencode_input_repair_vector_holds() {
    let cases = cases();
    assert_eq!(cases.len(), 35);
    let mut mismatches = Vec::new();
    let mut additions = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let schema_value = match &case["schema"] {
            Value::String(s) if s == "__undefined__" => Value::Null,
            other => other.clone(),
        };
        let mut got = case["input"].clone();
        let fixes = repair_arguments(&mut got, &schema_value);
        let mut stage_only = case["input"].clone();
        if schema::repair(&mut stage_only, &schema_value).len() != fixes.len() || stage_only != got {
            additions += 1;
        }
        let expect = &case["expect"];
        if expect["unchanged"] == true {
            if got != case["input"] || !fixes.is_empty() {
                mismatches.push(format!("{name}: expected unchanged, got {got} with {fixes:?}"));
            }
        } else if got != expect["output"] {
            mismatches.push(format!("{name}: expected {}, got {got}", expect["output"]));
        } else if fixes.is_empty() {
            mismatches.push(format!("{name}: repaired without reporting a fix"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} vectors differ:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
    assert_eq!(additions, ADDITIONS_SILENT);
}
