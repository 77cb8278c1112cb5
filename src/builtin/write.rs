//! The `write` tool (seed 000 §8.3): create or overwrite a file. The existing file must have been read fully;
//! CRLF, BOM and mode are kept; the formatter runs afterwards; `file.modified` is published with operation
//! "write".
//!
//! Owns the whole-file write decision. File access goes through `Context::files`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::change::{
    diff_after_write, diff_content, first_changed_line, shown, unchanged_since_preview, veto_secrets,
    writable,
};
use crate::display::{Content, Kind, Location, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_str, resolve_path};

pub const ID: &str = "write";
const BOM: char = '\u{feff}';

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/write.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to write"},
                "content": {"type": "string", "description": "The complete new content of the file"}
            },
            "required": ["file_path", "content"]
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
        title: path
            .as_ref()
            .map(|p| format!("Write {}", shown(p, cwd)))
            .unwrap_or_else(|| "Write file".into()),
        kind: Kind::Edit,
        patterns: path.iter().map(|p| p.to_string_lossy().into_owned()).collect(),
        ..Presentation::default()
    }
}

/// Bring `content` to the existing file's conventions: its line ending and its byte-order mark.
pub fn conform(old: Option<&str>, content: &str) -> String {
    let Some(old) = old else { return content.to_string() };
    let mut new = if old.contains("\r\n") {
        content.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        content.to_string()
    };
    if old.starts_with(BOM) && !new.starts_with(BOM) {
        new.insert(0, BOM);
    }
    new
}

struct Plan {
    path: PathBuf,
    old: Option<String>,
    new: String,
    /// The diff the preview showed: the result shows it again unless a formatter changed the text.
    shown: Vec<Content>,
    _lock: tokio::sync::OwnedMutexGuard<()>,
}

async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let path = writable(&ctx, arg_str(&args, "file_path")?).await?;
    let content = arg_str(&args, "content")?;
    let lock = ctx.files.lock(&path).await;
    let old = ctx.files.read_text(&path).await?;
    if let Some(old) = &old {
        ctx.files.check_fresh(&path, old, true)?;
    }
    let new = conform(old.as_deref(), content);
    veto_secrets(&path, old.as_deref().unwrap_or(""), &new)?;
    let verb = if old.is_some() { "Write" } else { "Create" };
    let presentation = Presentation {
        title: format!("{verb} {}", shown(&path, &ctx.directory)),
        kind: Kind::Edit,
        locations: vec![Location::at_line(&path, first_changed_line(old.as_deref(), &new))],
        patterns: vec![path.to_string_lossy().into_owned()],
        content: diff_content(&path, old.as_deref(), &new, ctx.files.diff_limit()),
    };
    let shown = presentation.content.clone();
    Ok(Preview { category: None, presentation, plan: Arc::new(Plan { path, old, new, shown, _lock: lock }) })
}

async fn execute(ctx: Context, _args: Value) -> Result<ToolOutput, ToolError> {
    let plan = ctx.plan::<Plan>()?;
    unchanged_since_preview(&ctx, &plan.path, plan.old.as_deref()).await?;
    let written = ctx.files.write(&plan.path, &plan.new, &ctx.directory).await?;
    ctx.file_modified(&plan.path, "write");
    let lines = written.content.lines().count();
    let verb = if plan.old.is_some() { "Overwrote" } else { "Created" };
    let mut output = format!("{verb} {} ({lines} lines).", plan.path.display());
    if let Some(error) = &written.formatter_error {
        output.push_str(&format!("\nThe formatter failed (the file was still written): {error}"));
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
        locations: vec![Location::at_line(
            &plan.path,
            first_changed_line(plan.old.as_deref(), &written.content),
        )],
        metadata: json!({"path": plan.path, "created": plan.old.is_none(), "lines": lines, "formatterError": written.formatter_error}),
        bounded: false,
        failed: false,
        end_turn: None,
    };
    super::diagnostics::after_write(&ctx, vec![(plan.path.clone(), written.content)], &mut result).await;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_content_takes_the_existing_line_ending_and_bom() {
        assert_eq!(conform(Some("a\r\nb\r\n"), "x\ny\n"), "x\r\ny\r\n");
        assert_eq!(conform(Some("a\nb\n"), "x\r\ny\r\n"), "x\r\ny\r\n", "an LF file takes content as given");
        assert_eq!(conform(Some("\u{feff}a"), "b"), "\u{feff}b");
        assert_eq!(conform(None, "x\ny"), "x\ny");
    }
}
