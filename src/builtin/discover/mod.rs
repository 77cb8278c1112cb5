//! The `discover` tool (seed 004; parameters `query` and an optional `directory`): a natural-language code map.
//! The query becomes terms (`terms`), the directory is walked with the workspace's ignore rules (the one call to
//! `workspace::walk` with the session's ignore stack is [`walk_sources`]), files are ranked by BM25F over path, definitions (tree-sitter tags)
//! and content (`engine`), and the report groups the best 20 by folder (`report`).
//!
//! Bounded: a 24 MB content pre-scan budget (32 KB per file), at most 150 candidates read (256 KB each), 20
//! files reported, and a 2 s deadline after which the results so far are returned with a note.
//!
//! Owns the tool's contract. Reading goes through `workspace::regular`, walking through `workspace::walk`.

pub mod engine;
pub mod matcher;
pub mod report;
pub mod symbols;
pub mod terms;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::access::{self, Target};
use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_opt_str, arg_str, resolve_path};
use crate::workspace::ignore_rules::Stack;
use crate::workspace::walk::{self, Found};
use engine::{Deadline, Limits};

pub const ID: &str = "discover";
/// How long one discovery may take before it returns what it has.
pub const DEADLINE: Duration = Duration::from_secs(2);

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/discover.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to find, in plain words or identifiers, e.g. \"where is authentication handled\" or \"ToolRetryError propagation\""},
                "directory": {"type": "string", "description": "Directory to map (default: the working directory)"}
            },
            "required": ["query"]
        }),
        permission: Some(Category::Read),
        present,
        preview: Some(Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, cwd: &Path) -> Presentation {
    let query = args.get("query").and_then(Value::as_str).unwrap_or("");
    let root = args.get("directory").and_then(Value::as_str).map(|p| resolve_path(cwd, p));
    let mut title = format!("Discover `{query}`");
    if let Some(root) = root.as_ref().filter(|r| r.as_path() != cwd) {
        title.push_str(&format!(" in {}", root.display()));
    }
    Presentation {
        title,
        kind: Kind::Search,
        patterns: vec![root.unwrap_or_else(|| cwd.to_path_buf()).to_string_lossy().into_owned()],
        ..Presentation::default()
    }
}

async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let root = match arg_opt_str(&args, "directory")? {
        Some(p) if !p.trim().is_empty() => ctx.resolve(p.trim()),
        _ => ctx.directory.clone(),
    };
    let meta = tokio::fs::metadata(&root)
        .await
        .map_err(|_| ToolError::retry(format!("Directory not found: {}", root.display())))?;
    if !meta.is_dir() {
        return Err(ToolError::retry(format!(
            "{} is not a directory. Give discover a directory to map; read a single file with read.",
            root.display()
        )));
    }
    let access = access::decide(&ctx, &root, false)?;
    let mut presentation = present(&args, &ctx.directory);
    access.present(&mut presentation);
    Ok(Preview { presentation, plan: Arc::new(Target(access.path)), category: access.category })
}

/// The files discover considers: a walk of `root` with the workspace's ignore rules, source and documentation
/// extensions only. The only walk discover makes.
pub fn walk_sources(root: &Path, stack: &Stack, cancel: &tokio_util::sync::CancellationToken) -> Vec<Found> {
    let keep = |rel: &Path| {
        rel.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| terms::SOURCE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
    };
    walk::Walker::new(root, stack).keep(&keep).cancel(cancel).files().files
}

/// Walk and rank: the whole blocking part of a discovery.
pub fn map(
    root: &Path,
    stack: &Stack,
    terms: &terms::Terms,
    limits: &Limits,
    deadline: &Deadline,
) -> engine::Findings {
    let found = walk_sources(root, stack, &deadline.token);
    engine::discover(root, found, terms, limits, deadline)
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let query = arg_str(&args, "query")?.trim().to_string();
    let terms = terms::extract(&query);
    if terms.terms.is_empty() && terms.exact.is_empty() {
        return Err(ToolError::retry(
            "The query has no searchable words (words of three or more letters besides question words). Name the concept, feature or identifier to find.",
        ));
    }
    let root: PathBuf = ctx.plan::<Target>()?.0.clone();
    let deadline = Arc::new(Deadline::default());
    let timer = {
        let (deadline, cancel) = (deadline.clone(), ctx.cancel.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(DEADLINE) => {}
                () = cancel.cancelled() => {}
            }
            deadline.fire();
        })
    };
    let (walk_root, walk_deadline, stack) = (root.clone(), deadline.clone(), ctx.files.ignores());
    let findings = tokio::task::spawn_blocking(move || {
        map(&walk_root, &stack, &terms, &Limits::default(), &walk_deadline)
    })
    .await;
    timer.abort();
    let findings = findings.map_err(|e| ToolError::execution(format!("discover failed: {e}")))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let shown = root.strip_prefix(&ctx.directory).map(|p| p.display().to_string()).unwrap_or_default();
    let shown = if shown.is_empty() { root.display().to_string() } else { shown };
    let output = report::render(&query, &shown, &findings);
    let files: Vec<String> =
        report::reported(&findings).iter().map(|p| root.join(p).display().to_string()).collect();
    Ok(ToolOutput {
        output,
        metadata: json!({
            "walked": findings.walked,
            "scanned": findings.prescanned,
            "read": findings.read,
            "relevant": findings.hits.len(),
            "partial": findings.partial,
            "files": files,
        }),
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests;
