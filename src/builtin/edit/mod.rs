//! The `edit` tool (seed 000 §8.3): search-and-replace through the ten-strategy cascade, computed in memory,
//! shown to the user as a diff, then written. Binary files and files over 10 MB are refused up front.

pub mod budget;
pub mod cascade;
pub mod levenshtein;
pub mod replacers;

#[cfg(test)]
mod vectors;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::change::{
    diff_after_write, diff_content, line_of, line_of_bytes, line_start as line_start_from, shown,
    unchanged_since_stamped, veto_secrets, writable,
};
use super::read;
use crate::display::{Kind, Location, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, Progress, ToolError, ToolOutput, arg_str, resolve_path};
use crate::workspace::files::Stamp;
use budget::Budget;
use replacers::Strategy;

pub const ID: &str = "edit";
/// Larger files are refused.
pub const MAX_EDIT_BYTES: u64 = 10 * 1024 * 1024;
/// Lines of context around the edited region in the result.
const SNIPPET_CONTEXT: u32 = 3;

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/edit.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to edit"},
                "old_string": {"type": "string", "description": "The text to replace"},
                "new_string": {"type": "string", "description": "The replacement text"},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)", "default": false}
            },
            "required": ["file_path", "old_string", "new_string"]
        }),
        permission: Some(Category::Edit),
        present,
        preview: Some(Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, cwd: &Path) -> Presentation {
    let path = args.get("file_path").and_then(Value::as_str).map(|p| resolve_path(cwd, p));
    Presentation {
        title: path.as_ref().map(|p| format!("Edit {}", shown(p, cwd))).unwrap_or_else(|| "Edit file".into()),
        kind: Kind::Edit,
        patterns: path.iter().map(|p| p.to_string_lossy().into_owned()).collect(),
        ..Presentation::default()
    }
}

struct Plan {
    path: PathBuf,
    old: Option<String>,
    new: String,
    strategy: Option<Strategy>,
    count: usize,
    first_line: u32,
    last_line: u32,
    /// The byte of `new` where the replacement starts.
    offset: usize,
    /// The diff the preview showed: the result shows it again unless a formatter changed the text.
    shown: Vec<crate::display::Content>,
    /// What the read behind `old` saw of the file, to tell it unchanged without reading it again.
    stamp: Option<Stamp>,
    _lock: tokio::sync::OwnedMutexGuard<()>,
}

fn bool_arg(args: &Value, name: &str) -> Result<bool, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(s == "true"),
        Some(other) => Err(ToolError::retry(format!("`{name}` must be a boolean, got {other}"))),
    }
}

/// The current text of an existing file, refusing what the edit tool cannot handle.
async fn editable_text(ctx: &Context, path: &Path) -> Result<(Option<String>, Option<Stamp>), ToolError> {
    if let Ok(meta) = tokio::fs::metadata(path).await
        && meta.len() > MAX_EDIT_BYTES
    {
        return Err(ToolError::retry(format!(
            "{} is {} bytes; files over 10 MB cannot be edited. Use apply_patch with small hunks or a shell tool.",
            path.display(),
            meta.len()
        )));
    }
    let (text, stamp) = ctx.files.read_text_stamped(path).await?;
    if let Some(text) = &text
        && read::is_binary(text.as_bytes())
    {
        return Err(ToolError::retry(format!("{} is a binary file and cannot be edited.", path.display())));
    }
    Ok((text, stamp))
}

fn not_found(path: &Path, stack: &crate::workspace::ignore_rules::Stack) -> ToolError {
    let similar: Vec<String> =
        read::suggest_similar(path, stack).iter().map(|p| p.display().to_string()).collect();
    let mut message = format!(
        "File not found: {}. To create it, use write (or edit with an empty old_string).",
        path.display()
    );
    if !similar.is_empty() {
        message.push_str(&format!("\n\nDid you mean one of these?\n{}", similar.join("\n")));
    }
    ToolError::retry(message)
}

async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let path = writable(&ctx, arg_str(&args, "file_path")?).await?;
    let (old_string, new_string) = (arg_str(&args, "old_string")?, arg_str(&args, "new_string")?);
    let replace_all = bool_arg(&args, "replace_all")?;
    let lock = ctx.files.lock(&path).await;
    let (old, stamp) = editable_text(&ctx, &path).await?;
    match &old {
        Some(text) => ctx.files.check_fresh(&path, text, false)?,
        None if !old_string.is_empty() => return Err(not_found(&path, &ctx.files.ignores())),
        None => {}
    }
    // The editor hears of the call before the matching starts: fuzzy matching on a large file takes a while.
    ctx.report(Progress::Presented(Presentation {
        title: format!("Edit {} (matching…)", shown(&path, &ctx.directory)),
        kind: Kind::Edit,
        locations: vec![Location::new(&path)],
        patterns: vec![path.to_string_lossy().into_owned()],
        content: Vec::new(),
    }));
    // The cascade is CPU work (fuzzy matching over large files): keep it off the async runtime, within its
    // budget, checking the turn's cancellation between windows.
    // The file's text moves into the task and back (a 10 MB file is not copied).
    let (find, replacement) = (old_string.to_string(), new_string.to_string());
    let token = ctx.cancel.clone();
    let (edited, cancelled, old) = tokio::task::spawn_blocking(move || {
        let cancelled = || token.is_cancelled();
        let budget = Budget::new(Some(&cancelled));
        let text = old.as_deref().unwrap_or("");
        let edited = cascade::edit_within(text, &find, &replacement, replace_all, &budget);
        (edited, budget.is_cancelled(), old)
    })
    .await
    .map_err(|e| ToolError::execution(format!("the edit failed: {e}")))?;
    if cancelled {
        return Err(ToolError::Cancelled);
    }
    let edited = edited.map_err(|e| ToolError::retry(e.message(&path.display().to_string())))?;
    veto_secrets(&path, old.as_deref().unwrap_or(""), &edited.content)?;
    let first_line = line_of(&edited.content, edited.offset);
    let inserted = &edited.content.as_bytes()[edited.offset..edited.offset + edited.inserted_len];
    let last_line = first_line.saturating_add(line_of_bytes(inserted));
    let presentation = Presentation {
        title: format!("Edit {}", shown(&path, &ctx.directory)),
        kind: Kind::Edit,
        locations: vec![Location::at_line(&path, first_line)],
        patterns: vec![path.to_string_lossy().into_owned()],
        content: diff_content(&path, old.as_deref(), &edited.content, ctx.files.diff_limit()),
    };
    let plan = Plan {
        shown: presentation.content.clone(),
        stamp,
        path,
        old,
        new: edited.content,
        strategy: edited.strategy,
        count: edited.count,
        first_line,
        last_line,
        offset: edited.offset,
        _lock: lock,
    };
    Ok(Preview { category: None, presentation, plan: Arc::new(plan) })
}

async fn execute(ctx: Context, _args: Value) -> Result<ToolOutput, ToolError> {
    let plan = ctx.plan::<Plan>()?;
    unchanged_since_stamped(&ctx, &plan.path, plan.old.as_deref(), plan.stamp).await?;
    let written = ctx.files.write(&plan.path, &plan.new, &ctx.directory).await?;
    ctx.file_modified(&plan.path, "edit");
    let how = match plan.strategy {
        Some(strategy) => format!(
            "{} replacement{} ({} matched)",
            plan.count,
            if plan.count == 1 { "" } else { "s" },
            strategy.name()
        ),
        None if plan.old.is_some() => "whole file replaced".to_string(),
        None => "file created".to_string(),
    };
    let first = plan.first_line.saturating_sub(SNIPPET_CONTEXT).max(1) as usize;
    let last = (plan.last_line + SNIPPET_CONTEXT) as usize;
    let snippet = match &written.content {
        // The line the replacement starts on is known: the excerpt starts from there, not from the top.
        Cow::Borrowed(text) => {
            let line_start = memchr::memrchr(b'\n', &text.as_bytes()[..plan.offset]).map_or(0, |i| i + 1);
            let start =
                line_start_from(text.as_bytes(), (plan.first_line as usize - 1, line_start), first - 1);
            cascade::numbered_lines(text.get(start..).unwrap_or(""), first, last)
        }
        Cow::Owned(formatted) => cascade::numbered_excerpt(formatted, first, last),
    };
    let mut output = format!("Edited {}: {how}.\n\n{snippet}", plan.path.display());
    if let Some(error) = &written.formatter_error {
        output.push_str(&format!("\n\nThe formatter failed (the edit was still written): {error}"));
    }
    let mut result = ToolOutput {
        output,
        display: diff_after_write(
            &plan.shown,
            &plan.path,
            plan.old.as_deref(),
            &written,
            ctx.files.diff_limit(),
        ),
        locations: vec![Location::at_line(&plan.path, plan.first_line)],
        metadata: json!({
            "path": plan.path,
            "strategy": plan.strategy.map(Strategy::name),
            "replacements": plan.count,
            "formatterError": written.formatter_error,
        }),
        bounded: false,
        failed: false,
        end_turn: None,
    };
    super::diagnostics::after_write(&ctx, vec![(plan.path.clone(), written.content)], &mut result).await;
    Ok(result)
}
