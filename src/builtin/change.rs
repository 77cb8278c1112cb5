//! What the file-changing tools (`write`, `edit`, `apply_patch`) share: where they may write (resolved through
//! every symlink, inside the workspace, regular files only), the stale-write check right before writing, the
//! secret veto, and how a change is located and named.
//!
//! Owns those checks. Must not write files (that is `workspace::files`).

use std::path::{Path, PathBuf};

use crate::tool::{Context, ToolError};
use crate::workspace::{regular, secrets};

/// `path` relative to the session directory when it is inside it, for titles and summaries.
pub fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// The 1-based line holding byte `offset` of `text`.
pub fn line_of(text: &str, offset: usize) -> u32 {
    let offset = offset.min(text.len());
    u32::try_from(text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1).unwrap_or(u32::MAX)
}

/// The first 1-based line where `old` and `new` differ (1 for a new file).
pub fn first_changed_line(old: Option<&str>, new: &str) -> u32 {
    let Some(old) = old else { return 1 };
    let same = old.split('\n').zip(new.split('\n')).take_while(|(a, b)| a == b).count();
    u32::try_from(same + 1).unwrap_or(u32::MAX)
}

/// Refuse writes that would put a new secret into a file.
pub fn veto_secrets(path: &Path, old: &str, new: &str) -> Result<(), ToolError> {
    let kinds = secrets::introduced(old, new);
    if kinds.is_empty() {
        return Ok(());
    }
    Err(ToolError::retry(format!(
        "Refusing to write {}: the new content contains what looks like a {}. Secrets must not be written into files by the agent; reference an environment variable instead and let the user add the value.",
        path.display(),
        kinds.join(" and a ")
    )))
}

/// The path a file-changing tool may write: every symlink resolved (the ask and the write use the real path),
/// inside the workspace, and a regular file if it exists (a FIFO, socket or device is never opened).
pub async fn writable(ctx: &Context, raw: &str) -> Result<PathBuf, ToolError> {
    let path = ctx.files.check_boundary(&ctx.resolve(raw))?;
    match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.is_dir() => {
            Err(ToolError::retry(format!("{} is a directory, not a file.", path.display())))
        }
        Ok(meta) => match regular::irregular_kind(&meta) {
            Some(kind) => Err(ToolError::retry(format!(
                "{} is {kind}, not a regular file. Only regular files can be changed.",
                path.display()
            ))),
            None => Ok(path),
        },
        Err(_) => Ok(path),
    }
}

/// Check, right before writing, that `path` still holds what the preview saw (the user may take a while to
/// approve, and the file may change meanwhile).
pub async fn unchanged_since_preview(
    ctx: &Context,
    path: &Path,
    seen: Option<&str>,
) -> Result<(), ToolError> {
    let now = ctx.files.read_text(path).await?;
    if now.as_deref() == seen {
        return Ok(());
    }
    Err(ToolError::retry(format!(
        "{} changed while the change was waiting for approval. Read it again and redo the change.",
        path.display()
    )))
}
