//! The `hashline_edit` tool (seed 004), offered in hashline mode (`edit_mode = "hashline"`) in place of `edit`
//! and `apply_patch`: lines are addressed by the `N:hh` tags `read` shows, with the seed's parameters
//! (`filepath`, `operation` = `replace` | `replace_range` | `insert_after`, `line`, `start`, `end`, `after`,
//! `new`) or an `edits` list of such operations applied all or nothing. References are checked against the
//! file as it is now (the editor's buffer or the disk), never a cache, so a stale one is refused with the
//! current tags. Like `edit`, the change is computed before the ask, shown as a diff in it, and written
//! through the same checks and write path; the result carries a unified diff and the new tags of the changed
//! lines, so the model can go on editing without reading again.
//!
//! Owns the tool. Line tags live in `tags`, the operations in `apply`, the reported diff in `diff`.

pub mod apply;
mod diff;
pub mod tags;

#[cfg(test)]
mod vectors;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::change::{
    diff_content, first_changed_line, shown, unchanged_since_preview, veto_secrets, writable,
};
use super::read;
use crate::display::{Content, Kind, Location, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_str, resolve_path};
use apply::Op;
use diff::LineDiff;

pub const ID: &str = "hashline_edit";
/// Larger files are refused (as by `edit`).
pub const MAX_EDIT_BYTES: u64 = 10 * 1024 * 1024;
/// Operations in one `edits` list at most.
pub const MAX_EDITS: usize = 100;
/// Lines of context around each change in the diff and in the new tags.
const CONTEXT: usize = 3;
/// New tags shown at most.
const MAX_TAGS: usize = 80;

fn op_schema() -> Value {
    json!({
        "operation": {"type": "string", "enum": ["replace", "replace_range", "insert_after"], "description": "replace: one line; replace_range: lines start..end; insert_after: new lines after a line"},
        "line": {"type": "string", "description": "replace: the line's reference, e.g. \"12:a3\""},
        "start": {"type": "string", "description": "replace_range: reference of the first line to replace"},
        "end": {"type": "string", "description": "replace_range: reference of the last line to replace"},
        "after": {"type": "string", "description": "insert_after: reference of the line to insert after (\"0\" inserts before line 1)"},
        "new": {"type": "string", "description": "The new text; several lines allowed; empty deletes (replace_range) or leaves an empty line (replace)"}
    })
}

pub fn def() -> Def {
    let mut properties = op_schema();
    if let Some(map) = properties.as_object_mut() {
        map.insert(
            "filepath".into(),
            json!({"type": "string", "description": "Absolute path of the file to edit"}),
        );
        map.insert(
            "edits".into(),
            json!({
                "type": "array",
                "description": "Several operations on the same file, all checked against the file as it is now and applied together or not at all; references are to the lines as read, before any of these edits",
                "items": {"type": "object", "properties": op_schema(), "required": ["operation"]}
            }),
        );
    }
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/hashline_edit.md").into(),
        parameters: json!({"type": "object", "properties": properties, "required": ["filepath"]}),
        permission: Some(Category::Edit),
        present,
        preview: Some(Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, cwd: &Path) -> Presentation {
    let path = args.get("filepath").and_then(Value::as_str).map(|p| resolve_path(cwd, p));
    Presentation {
        title: path.as_ref().map(|p| format!("Edit {}", shown(p, cwd))).unwrap_or_else(|| "Edit file".into()),
        kind: Kind::Edit,
        patterns: path.iter().map(|p| p.to_string_lossy().into_owned()).collect(),
        ..Presentation::default()
    }
}

/// A reference argument of `op`, required by `operation`.
fn reference(op: &Value, name: &str, operation: &str) -> Result<String, String> {
    match op.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Err(format!("The '{name}' parameter is required for the '{operation}' operation.")),
    }
}

/// One operation from its arguments (the top-level call or an item of `edits`).
pub fn parse_op(op: &Value) -> Result<Op, String> {
    let operation = op.get("operation").and_then(Value::as_str).unwrap_or("");
    let new = match op.get("new") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("'new' must be a string, got {other}")),
    };
    let kind = match operation {
        "replace" => apply::Kind::Replace { line: reference(op, "line", operation)? },
        "replace_range" => apply::Kind::ReplaceRange {
            start: reference(op, "start", operation)?,
            end: reference(op, "end", operation)?,
        },
        "insert_after" => apply::Kind::InsertAfter { after: reference(op, "after", operation)? },
        other => {
            return Err(format!(
                "Unknown operation '{other}'. Use 'replace', 'replace_range', or 'insert_after'."
            ));
        }
    };
    Ok(Op { kind, new })
}

/// The operations of a call: the top-level one, or the `edits` list.
fn parse_ops(args: &Value) -> Result<Vec<Op>, String> {
    let list = match args.get("edits") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items),
        Some(_) => return Err("'edits' must be a list of operations".into()),
    };
    let top = args.get("operation").is_some_and(|o| !o.is_null());
    match (list, top) {
        (Some(_), true) => {
            Err("Give either one operation (operation, line, ...) or an 'edits' list, not both.".into())
        }
        (Some(items), false) if items.is_empty() => {
            Err("'edits' is empty: give at least one operation.".into())
        }
        (Some(items), false) if items.len() > MAX_EDITS => {
            Err(format!("'edits' holds {} operations; at most {MAX_EDITS} fit in one call.", items.len()))
        }
        (Some(items), false) => items
            .iter()
            .enumerate()
            .map(|(i, item)| parse_op(item).map_err(|e| format!("Edit {}: {e}", i + 1)))
            .collect(),
        (None, _) => parse_op(args).map(|op| vec![op]),
    }
}

/// `text` for a diff: without carriage returns and ending with a newline (the diff shows content, not endings).
fn for_diff(text: &str) -> String {
    let mut plain = text.strip_prefix(tags::BOM).unwrap_or(text).replace("\r\n", "\n");
    if !plain.is_empty() && !plain.ends_with('\n') {
        plain.push('\n');
    }
    plain
}

/// The message and unified diff the model gets (`shown` names the file in the diff's headers).
pub fn report(path: &Path, shown: &str, old: &str, new: &str, summaries: &[String]) -> String {
    let (old, new) = (for_diff(old), for_diff(new));
    message(path, shown, &LineDiff::new(&old, &new), summaries)
}

/// What the tool returns: the report, then the new tags of the changed lines.
pub fn result(path: &Path, shown: &str, old: &str, new: &str, summaries: &[String]) -> String {
    let (old, new) = (for_diff(old), for_diff(new));
    let diff = LineDiff::new(&old, &new);
    let mut text = message(path, shown, &diff, summaries);
    text.push_str(&new_tags(&diff, &new));
    text
}

fn message(path: &Path, shown: &str, diff: &LineDiff, summaries: &[String]) -> String {
    let diff = diff.unified(CONTEXT, &format!("a/{shown}"), &format!("b/{shown}"));
    format!("File '{}' updated: {}.\n\n{diff}", path.display(), summaries.join("; "))
}

/// The new tags of the changed lines and one line around each change, so the next edit needs no read.
fn new_tags(diff: &LineDiff, new: &str) -> String {
    let lines = tags::split_lines(new);
    let mut wanted = vec![false; lines.len()];
    for range in diff.changed() {
        for slot in wanted.iter_mut().take(range.end + 1).skip(range.start.saturating_sub(1)) {
            *slot = true;
        }
    }
    let shown: Vec<String> =
        wanted.iter().enumerate().filter(|(_, w)| **w).map(|(i, _)| tags::tag(i + 1, lines[i])).collect();
    if shown.is_empty() {
        return String::new();
    }
    let listed: Vec<&str> = shown.iter().take(MAX_TAGS).map(String::as_str).collect();
    let mut text = format!("\nCurrent references around the change:\n{}", listed.join("\n"));
    if shown.len() > MAX_TAGS {
        text.push_str(&format!(
            "\n({} more changed lines: read the file for their references.)",
            shown.len() - MAX_TAGS
        ));
    }
    text
}

struct Plan {
    path: PathBuf,
    old: String,
    new: String,
    summaries: Vec<String>,
    _lock: tokio::sync::OwnedMutexGuard<()>,
}

/// The current text of the file to edit, refusing what cannot be edited.
async fn current_text(ctx: &Context, path: &Path) -> Result<String, ToolError> {
    if let Ok(meta) = tokio::fs::metadata(path).await
        && meta.len() > MAX_EDIT_BYTES
    {
        return Err(ToolError::retry(format!(
            "{} is {} bytes; files over 10 MB cannot be edited.",
            path.display(),
            meta.len()
        )));
    }
    let Some(text) = ctx.files.read_text(path).await? else {
        return Err(ToolError::retry(format!(
            "File '{}' not found. Cannot edit. To create it, use write.",
            path.display()
        )));
    };
    if read::is_binary(text.as_bytes()) {
        return Err(ToolError::retry(format!("{} is a binary file and cannot be edited.", path.display())));
    }
    if !ctx.files.was_read(path) {
        return Err(ToolError::retry(format!(
            "You must read {} before changing it. Use the read tool first: it shows each line's reference.",
            path.display()
        )));
    }
    Ok(text)
}

async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let path = writable(&ctx, arg_str(&args, "filepath")?).await?;
    let ops = parse_ops(&args).map_err(ToolError::retry)?;
    let lock = ctx.files.lock(&path).await;
    let old = current_text(&ctx, &path).await?;
    let applied = apply::apply(&old, &ops).map_err(ToolError::retry)?;
    if applied.text == old {
        return Err(ToolError::retry(format!(
            "These edits leave {} unchanged: the new text equals the old.",
            path.display()
        )));
    }
    veto_secrets(&path, &old, &applied.text)?;
    let presentation = Presentation {
        title: format!("Edit {}", shown(&path, &ctx.directory)),
        kind: Kind::Edit,
        locations: vec![Location::at_line(&path, first_changed_line(Some(&old), &applied.text))],
        patterns: vec![path.to_string_lossy().into_owned()],
        content: vec![Content::Diff {
            path: path.clone(),
            old_text: Some(old.clone()),
            new_text: applied.text.clone(),
        }],
    };
    let plan = Plan { path, old, new: applied.text, summaries: applied.summaries, _lock: lock };
    Ok(Preview { category: None, presentation, plan: Arc::new(plan) })
}

async fn execute(ctx: Context, _args: Value) -> Result<ToolOutput, ToolError> {
    let plan = ctx.plan::<Plan>()?;
    unchanged_since_preview(&ctx, &plan.path, Some(&plan.old)).await?;
    let written = ctx.files.write(&plan.path, &plan.new, &ctx.directory).await?;
    ctx.file_modified(&plan.path, "edit");
    let name = shown(&plan.path, &ctx.directory);
    let mut output = result(&plan.path, &name, &plan.old, &written.content, &plan.summaries);
    if written.content != plan.new {
        output
            .push_str("\n(The formatter changed the file after the edit; the references above are current.)");
    }
    if let Some(error) = &written.formatter_error {
        output.push_str(&format!("\n\nThe formatter failed (the edit was still written): {error}"));
    }
    let line = first_changed_line(Some(&plan.old), &written.content);
    let mut result = ToolOutput {
        output,
        display: diff_content(&plan.path, Some(&plan.old), &written.content, ctx.files.diff_limit()),
        locations: vec![Location::at_line(&plan.path, line)],
        metadata: json!({"path": plan.path, "edits": plan.summaries, "formatterError": written.formatter_error}),
        ..ToolOutput::default()
    };
    super::diagnostics::after_write(&ctx, vec![(plan.path.clone(), written.content)], &mut result).await;
    Ok(result)
}
