//! The `apply_patch` tool: the Codex patch format, validated as a whole before anything is written, shown to
//! the user as one diff per file, then applied all or nothing through the session's file access (a write that
//! fails undoes the others, and the model is told that nothing changed).

pub mod apply;
pub mod parser;
pub mod seek;

#[cfg(test)]
mod vectors;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::change::{first_changed_line, shown, unchanged_since_preview, veto_secrets};
use crate::display::{Content, Kind, Location, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput};
use crate::workspace::files::{self, SetError, SetFailure};
use apply::{Change, Existing};
use parser::{Hunk, Mode};

pub const ID: &str = "apply_patch";
/// Argument names accepted for the patch text, in order of preference.
const PATCH_KEYS: [&str; 3] = ["patch", "patchText", "input"];

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/apply_patch.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "patch": {"type": "string", "description": "The whole patch, from '*** Begin Patch' to '*** End Patch'"}
            },
            "required": ["patch"]
        }),
        permission: Some(Category::Edit),
        present,
        preview: Some(Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn patch_text(args: &Value) -> Option<&str> {
    PATCH_KEYS.iter().filter_map(|k| args.get(*k).and_then(Value::as_str)).find(|t| !t.trim().is_empty())
}

fn present(args: &Value, cwd: &Path) -> Presentation {
    let paths: Vec<String> = patch_text(args)
        .and_then(|text| parser::parse(text, Mode::Lenient).ok())
        .map(|p| p.hunks.iter().map(|h| h.path().to_string()).collect())
        .unwrap_or_default();
    Presentation {
        title: title(&paths),
        kind: Kind::Edit,
        patterns: paths
            .iter()
            .map(|p| crate::tool::resolve_path(cwd, p).to_string_lossy().into_owned())
            .collect(),
        ..Presentation::default()
    }
}

fn title(paths: &[String]) -> String {
    match paths.len() {
        0 => "Apply patch".into(),
        1..=3 => format!("Patch {}", paths.join(", ")),
        n => format!("Patch {}, +{} more", paths[..3].join(", "), n - 3),
    }
}

/// One resolved file operation.
enum Step {
    Write { path: PathBuf, old: Option<String>, new: String, operation: &'static str },
    Delete { path: PathBuf, old: String },
}

struct Plan {
    steps: Vec<Step>,
    summary: String,
    _locks: Vec<tokio::sync::OwnedMutexGuard<()>>,
}

/// Every path the patch touches, resolved and checked against the workspace boundary.
fn paths(ctx: &Context, hunks: &[Hunk]) -> Result<BTreeMap<String, PathBuf>, ToolError> {
    let mut all = BTreeMap::new();
    for hunk in hunks {
        let mut names = vec![hunk.path()];
        if let Hunk::Update { move_path: Some(to), .. } = hunk {
            names.push(to);
        }
        for name in names {
            all.insert(name.to_string(), ctx.files.check_boundary(&ctx.resolve(name))?);
        }
    }
    Ok(all)
}

async fn existing(ctx: &Context, path: &Path) -> Result<Existing, ToolError> {
    if tokio::fs::metadata(path).await.is_ok_and(|m| m.is_dir()) {
        return Ok(Existing::Directory);
    }
    Ok(match ctx.files.read_text(path).await? {
        Some(text) => Existing::Text(text),
        None => Existing::Missing,
    })
}

/// Resolve the planned changes to paths, checking freshness and secrets.
fn steps(
    ctx: &Context,
    changes: Vec<Change>,
    resolved: &BTreeMap<String, PathBuf>,
) -> Result<Vec<Step>, ToolError> {
    let path = |name: &str| resolved.get(name).cloned().unwrap_or_else(|| ctx.resolve(name));
    // Only a path's first touch meets the file as the model read it; later hunks see the patch's own result.
    let seen = std::cell::RefCell::new(std::collections::HashSet::new());
    let fresh = |p: &Path, old: &str, full: bool| {
        if seen.borrow_mut().insert(p.to_path_buf()) { ctx.files.check_fresh(p, old, full) } else { Ok(()) }
    };
    let mut steps = Vec::new();
    for change in changes {
        match change {
            Change::Write { path: name, old, new } => {
                let p = path(&name);
                match &old {
                    Some(old) => fresh(&p, old, true)?,
                    None => drop(seen.borrow_mut().insert(p.clone())),
                }
                veto_secrets(&p, old.as_deref().unwrap_or(""), &new)?;
                steps.push(Step::Write { path: p, old, new, operation: "add" });
            }
            Change::Delete { path: name, old } => {
                let p = path(&name);
                fresh(&p, &old, false)?;
                steps.push(Step::Delete { path: p, old });
            }
            Change::Move { from, to, old, new, to_old } => {
                let (source, target) = (path(&from), path(&to));
                fresh(&source, &old, false)?;
                match &to_old {
                    Some(existing) if target != source => fresh(&target, existing, true)?,
                    _ => drop(seen.borrow_mut().insert(target.clone())),
                }
                veto_secrets(&target, &old, &new)?;
                if source == target {
                    steps.push(Step::Write { path: target, old: Some(old), new, operation: "update" });
                } else {
                    steps.push(Step::Write { path: target, old: to_old, new, operation: "move" });
                    steps.push(Step::Delete { path: source, old });
                }
            }
        }
    }
    Ok(steps)
}

fn content(steps: &[Step]) -> (Vec<Content>, Vec<Location>) {
    let mut diffs = Vec::new();
    let mut locations = Vec::new();
    for step in steps {
        match step {
            Step::Write { path, old, new, .. } => {
                diffs.push(Content::Diff {
                    path: path.clone(),
                    old_text: old.clone(),
                    new_text: new.clone(),
                });
                locations.push(Location::at_line(path, first_changed_line(old.as_deref(), new)));
            }
            Step::Delete { path, old } => {
                diffs.push(Content::Diff {
                    path: path.clone(),
                    old_text: Some(old.clone()),
                    new_text: String::new(),
                });
            }
        }
    }
    (diffs, locations)
}

/// Each path's change from before the patch to after it, in the order the patch first touches it (a path the
/// patch creates and then deletes is left out).
fn final_changes(steps: &[Step]) -> Vec<files::Change<'_>> {
    let mut changes: Vec<files::Change<'_>> = Vec::new();
    for step in steps {
        let (path, old, new) = match step {
            Step::Write { path, old, new, .. } => (path, old.as_deref(), Some(new.as_str())),
            Step::Delete { path, old } => (path, Some(old.as_str()), None),
        };
        match changes.iter_mut().find(|c| c.path == path.as_path()) {
            Some(earlier) => earlier.new = new,
            None => changes.push(files::Change { path, old, new }),
        }
    }
    changes.retain(|c| c.old.is_some() || c.new.is_some());
    changes
}

/// The model's message for a patch whose writing failed: which file, why, and that nothing changed (or, if the
/// undo itself failed, which files are left changed).
fn write_failed(failure: &SetFailure) -> ToolError {
    let verb = if failure.deleting { "delete" } else { "write" };
    let mut message =
        format!("apply_patch could not {verb} {}: {}\n", failure.path.display(), failure.reason);
    if failure.unrestored.is_empty() {
        message.push_str("No files were changed.");
    } else {
        message.push_str("The patch was not applied, but these files could not be put back as they were:");
        for (path, why) in &failure.unrestored {
            message.push_str(&format!("\n- {}: {why}", path.display()));
        }
        message.push_str("\nRead them again before changing them.");
    }
    ToolError::execution(message)
}

fn verification_failed(reason: impl std::fmt::Display) -> ToolError {
    ToolError::retry(format!("apply_patch verification failed: {reason}\nNo files were changed."))
}

async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let Some(text) = patch_text(&args) else {
        return Err(ToolError::retry(
            "patch is required: pass the whole patch text, from '*** Begin Patch' to '*** End Patch', in `patch`.",
        ));
    };
    let patch = parser::parse(text, Mode::Lenient).map_err(verification_failed)?;
    let resolved = paths(&ctx, &patch.hunks)?;
    let mut locks = Vec::new();
    for path in resolved.values().collect::<std::collections::BTreeSet<_>>() {
        locks.push(ctx.files.lock(path).await);
    }
    let mut before = BTreeMap::new();
    for (name, path) in &resolved {
        before.insert(name.clone(), existing(&ctx, path).await?);
    }
    let lookup = |name: &str| before.get(name).cloned().unwrap_or(Existing::Missing);
    let display =
        |name: &str| resolved.get(name).map(|p| p.display().to_string()).unwrap_or_else(|| name.to_string());
    let changes = apply::plan(&patch, &lookup, &display).map_err(verification_failed)?;
    let summary = apply::summary(&changes);
    let steps = steps(&ctx, changes, &resolved)?;
    let (diffs, locations) = content(&steps);
    let names: Vec<String> = patch.hunks.iter().map(|h| h.path().to_string()).collect();
    let presentation = Presentation {
        title: title(&names),
        kind: Kind::Edit,
        locations,
        patterns: resolved.values().map(|p| p.to_string_lossy().into_owned()).collect(),
        content: diffs,
    };
    Ok(Preview { category: None, presentation, plan: Arc::new(Plan { steps, summary, _locks: locks }) })
}

async fn execute(ctx: Context, _args: Value) -> Result<ToolOutput, ToolError> {
    let plan = ctx.plan::<Plan>()?;
    let mut checked = std::collections::HashSet::new();
    for step in &plan.steps {
        let (path, old) = match step {
            Step::Write { path, old, .. } => (path, old.as_deref()),
            Step::Delete { path, old } => (path, Some(old.as_str())),
        };
        if checked.insert(path.clone()) {
            unchanged_since_preview(&ctx, path, old).await?;
        }
    }
    let changes = final_changes(&plan.steps);
    let written = match ctx.files.change_all(&changes, &ctx.directory).await {
        Ok(written) => written,
        Err(SetError::Refused(error)) => return Err(error),
        Err(SetError::Failed(failure)) => return Err(write_failed(&failure)),
    };
    let mut notes = Vec::new();
    let mut written_files = Vec::new();
    for (change, written) in changes.iter().zip(written) {
        let Some(written) = written else { continue };
        if let Some(error) = written.formatter_error {
            notes.push(format!(
                "The formatter failed on {} (the file was still written): {error}",
                shown(change.path, &ctx.directory)
            ));
        }
        written_files.push((change.path.to_path_buf(), written.content));
    }
    for step in &plan.steps {
        match step {
            Step::Write { path, operation, .. } => ctx.file_modified(path, operation),
            Step::Delete { path, .. } => ctx.file_modified(path, "delete"),
        }
    }
    let (display, locations) = content(&plan.steps);
    let mut output = plan.summary.trim_end().to_string();
    for note in notes {
        output.push_str(&format!("\n{note}"));
    }
    let mut result = ToolOutput {
        output,
        display,
        locations,
        metadata: json!({"files": plan.steps.len()}),
        bounded: false,
        failed: false,
        end_turn: None,
    };
    super::diagnostics::after_write(&ctx, written_files, &mut result).await;
    Ok(result)
}
