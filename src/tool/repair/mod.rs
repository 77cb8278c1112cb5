//! The tool input repair pipeline (seed 003 "input repair" and "repair notes", seed 000 §8.6,
//! PROVIDERS.md §6), run once per call before the execution flow:
//!
//! 1. the tool name: exact, else forgiving case, whitespace, `-`/`_`, `default_api.` and other agents' names
//!    (`names`);
//! 2. the argument text: strict parse, else a pre-pass (trim, fence, first balanced object, backslashes that
//!    start no escape) and the JSON-repair crate; a call the output limit cut off is answered "truncated,
//!    resend it smaller", never completed by guessing (`text`);
//! 3. alias rename, only when the canonical key is absent (`aliases`). It runs before the value repair so a
//!    renamed value is coerced too and a closed schema does not drop it as unknown;
//! 4. schema-driven value repair: stringified arrays/objects, `"42"`/`"true"`, scalars into arrays, null
//!    optionals (`schema`);
//! 5. Markdown around paths, a heredoc around a patch, backspaces in a regex (`fields`, `heredoc`);
//! 6. the required-field check with ONE consolidated correction (`required`).
//!
//! Whatever fired is put in front of the tool result the model sees as `<repair_note>…</repair_note>` (rule
//! and key names only, never values) and logged the same way. Valid input passes untouched, with no note.
//! A call that cannot be repaired goes to the hidden `invalid` tool, so the user sees a failed call and the
//! model a result it can learn from.
//!
//! Owns the order of the stages and the messages for calls that cannot run. Must not know any tool beyond the
//! names in its data tables.

mod aliases;
mod fields;
pub mod fix;
mod heredoc;
mod names;
mod required;
mod schema;
mod text;
#[cfg(test)]
mod vectors;

pub use fix::Fix;
pub use names::canonical as canonical_name;

use serde_json::{Value, json};

use super::{Registry, invalid};

/// What the model gets for a tool call the output token limit cut off.
pub const TRUNCATED: &str = "Your tool call was truncated: it was cut off at the output token limit (max_tokens) before its arguments were complete, so it was not run. Resend it smaller (for example, split a large write into several edits).";

/// A call ready for the registry: the tool to run (the `invalid` tool when the call cannot run), its
/// arguments, and the repairs that fired.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub tool: String,
    pub args: Value,
    pub fixes: Vec<Fix>,
}

/// The tool result as the model sees it: the repair note for `fixes`, if any, in front of `output`.
pub fn with_note(fixes: &[Fix], output: String) -> String {
    match fix::note(fixes) {
        Some(note) => format!("{note}\n{output}"),
        None => output,
    }
}

/// Repair the argument values of a parsed call against the tool's schema: aliases, values, fields.
pub fn repair_arguments(args: &mut Value, schema: &Value) -> Vec<Fix> {
    let mut fixes = aliases::rename(args, schema);
    fixes.extend(schema::repair(args, schema));
    fixes.extend(fields::repair(args, schema));
    fixes
}

/// The arguments to keep in the conversation history for a call the model sent as `raw`: `None` (keep `raw`)
/// when it is a JSON object, else the object the text stages make of it, else `{}`. Providers get the history
/// back on every request, and some re-parse it (llama.cpp answers HTTP 500 to unparseable arguments, on every
/// request after). A call cut off by the output limit is never shown completed.
pub fn history_arguments(raw: &str) -> Option<String> {
    if matches!(serde_json::from_str::<Value>(raw), Ok(Value::Object(_))) {
        return None;
    }
    Some(text::parse(raw, true).map(|(args, _)| args.to_string()).unwrap_or_else(|_| "{}".into()))
}

/// Run the pipeline on the call `name(raw)`. `cut_off`: the response stopped at the output token limit and
/// this is its last call.
pub fn prepare(registry: &Registry, name: &str, raw: &str, cut_off: bool) -> Prepared {
    let Some(def) = registry.resolve(name) else {
        // The registry answers an unknown tool with the list of tools; the arguments do not matter then.
        let args = text::parse(raw, false).map(|(args, _)| args).unwrap_or_else(|_| json!({}));
        return Prepared { tool: name.to_string(), args, fixes: Vec::new() };
    };
    let mut fixes = Vec::new();
    if def.id != name {
        fixes.push(Fix::RenamedTool { from: name.to_string(), to: def.id.clone() });
    }
    let reject = |message: String, fixes: Vec<Fix>| {
        log(&def.id, &fixes);
        Prepared { tool: invalid::ID.into(), args: invalid::args(name, &message, raw), fixes }
    };
    let mut args = match text::parse(raw, cut_off) {
        Ok((args, parsed)) => {
            fixes.extend(parsed);
            args
        }
        Err(text::Failure::Truncated) => return reject(TRUNCATED.into(), fixes),
        Err(text::Failure::Invalid(error)) => {
            return reject(
                format!(
                    "The arguments provided to the tool `{name}` are invalid: {error}\nPlease resend the call with a single valid JSON object as its arguments."
                ),
                fixes,
            );
        }
    };
    fixes.extend(repair_arguments(&mut args, &def.parameters));
    if def.id != name
        && let Some(object) = args.as_object_mut()
    {
        // An old name's meaning survives the rename (`task_output` waited for the exit).
        for (key, value) in names::implied_arguments(name) {
            object.entry(key).or_insert_with(|| Value::String(value.into()));
        }
    }
    if let Some(correction) = required::check(&def.id, &args, &def.parameters) {
        return reject(correction, fixes);
    }
    log(&def.id, &fixes);
    Prepared { tool: def.id.clone(), args, fixes }
}

/// The telemetry of seed 003: rule and key names only.
fn log(tool: &str, fixes: &[Fix]) {
    if !fixes.is_empty() {
        let rules: Vec<String> = fixes.iter().map(|f| format!("{}: {f}", f.rule())).collect();
        tracing::info!(tool, rules = ?rules, "tool input repaired");
    }
}

#[cfg(test)]
mod tests;
