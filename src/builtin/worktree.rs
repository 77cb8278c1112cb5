//! `enter_worktree` and `exit_worktree` (seed 003): isolate risky work in a git worktree. They run git
//! themselves (never the model's shell: `.git` is protected), with the fail-closed rules: no repository, a
//! nested worktree, or uncommitted changes to tracked files refuse entering; uncommitted changes, commits beyond
//! the starting point, or state that cannot be checked refuse removal unless `discard_changes` is passed, and
//! then the user is asked (the ask names the worktree's protected `.git`, so it asks in every mode).
//!
//! Worktrees live in `<data dir>/worktrees/<repository>-<hash>/<name>`, with a `<name>.json` beside each
//! recording its branch and starting point. The move itself is applied after the tool round (`control`).
//!
//! Owns the two tools. Git commands belong to `workspace::git`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::control::Worktree;
use crate::display::{Content, Kind, Location, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_opt_str};
use crate::workspace::git::{GitError, Repo};

pub const ENTER: &str = "enter_worktree";
pub const EXIT: &str = "exit_worktree";
/// Longest worktree name.
pub const MAX_NAME: usize = 64;
/// Paths listed when explaining why a tree counts as changed.
const LISTED: usize = 10;

fn git_error(e: GitError) -> ToolError {
    match e {
        GitError::NotARepository(dir) => ToolError::retry(format!(
            "{} is not in a git repository; worktrees need one. Work in place instead.",
            dir.display()
        )),
        GitError::Failed { .. } | GitError::Unavailable(_) => ToolError::execution(e.to_string()),
    }
}

/// A valid name, or the reason it is not.
fn check_name(name: &str) -> Result<(), ToolError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with(['.', '-'])
        && !name.ends_with(".lock")
        && !name.contains("..")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        return Ok(());
    }
    Err(ToolError::retry(format!(
        "`{name}` is not a usable worktree name: use up to {MAX_NAME} letters, digits, `.`, `_` or `-`, not starting with `.` or `-`."
    )))
}

/// Where the repository whose common git directory is `common` keeps its worktrees.
fn home(ctx: &Context, repo: &Repo) -> PathBuf {
    // The tool output directory is `<data dir>/tool-output`.
    let data = ctx.output_dir.parent().unwrap_or(&ctx.output_dir).to_path_buf();
    let name =
        repo.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "repo".into());
    let digest = crate::workspace::changes::fingerprint(repo.common_dir.to_string_lossy().as_bytes());
    data.join("worktrees").join(format!("{name}-{}", &digest[..8]))
}

fn listed(paths: &[PathBuf], root: &Path) -> String {
    let mut names: Vec<String> = paths
        .iter()
        .take(LISTED)
        .map(|p| format!("`{}`", p.strip_prefix(root).unwrap_or(p).display()))
        .collect();
    if paths.len() > LISTED {
        names.push(format!("and {} more", paths.len() - LISTED));
    }
    names.join(", ")
}

/// What `enter_worktree` will do.
struct Enter {
    repo: Repo,
    worktree: Worktree,
    /// It exists already: resume it.
    resume: bool,
    untracked: Vec<PathBuf>,
}

pub fn enter() -> Def {
    Def {
        id: ENTER.into(),
        description: include_str!("descriptions/enter_worktree.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Name of the worktree (and of its branch tinycode/<name>)"}},
        }),
        permission: Some(Category::Edit),
        present: |args, _| Presentation {
            title: match args.get("name").and_then(Value::as_str) {
                Some(name) => format!("Enter worktree `{name}`"),
                None => "Enter a new worktree".into(),
            },
            kind: Kind::Other,
            ..Presentation::default()
        },
        preview: Some(Arc::new(|ctx, args| Box::pin(preview_enter(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute_enter(ctx, args))),
    }
}

async fn preview_enter(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    if let Some(current) = ctx.control.worktree() {
        return Err(ToolError::retry(format!(
            "The session already works in worktree `{}` ({}); worktrees do not nest. Call exit_worktree first.",
            current.name,
            current.path.display()
        )));
    }
    let name = match arg_opt_str(&args, "name")?.map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => name.to_string(),
        None => format!("wt-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
    };
    check_name(&name)?;
    let repo = Repo::open(&ctx.directory).await.map_err(git_error)?;
    if repo.is_linked_worktree() {
        return Err(ToolError::retry(format!(
            "{} is itself a linked git worktree; tinycode does not nest worktrees. Work in place instead.",
            repo.root.display()
        )));
    }
    let dir = home(&ctx, &repo);
    let path = dir.join(&name);
    let record = dir.join(format!("{name}.json"));
    let known = repo.worktrees().await.map_err(git_error)?.iter().any(|w| w == &path);
    let enter = if known {
        let text = std::fs::read_to_string(&record).map_err(|e| {
            ToolError::execution(format!(
                "worktree `{name}` exists but its record {} cannot be read: {e}",
                record.display()
            ))
        })?;
        let worktree: Worktree = serde_json::from_str(&text)
            .map_err(|e| ToolError::execution(format!("the record of worktree `{name}` is damaged: {e}")))?;
        Enter { repo, worktree, resume: true, untracked: Vec::new() }
    } else {
        if path.exists() {
            return Err(ToolError::retry(format!(
                "{} exists but is not a worktree of this repository; pick another name.",
                path.display()
            )));
        }
        fresh(repo, path, name, &ctx.directory).await?
    };
    let presentation = enter_presentation(&enter);
    Ok(Preview { presentation, plan: Arc::new(enter), category: None })
}

/// A new worktree from HEAD, refused when tracked files have uncommitted changes.
async fn fresh(repo: Repo, path: PathBuf, name: String, cwd: &Path) -> Result<Enter, ToolError> {
    let status = repo.status().await.map_err(git_error)?;
    let (untracked, changed): (Vec<_>, Vec<_>) = status.iter().partition(|(_, entry)| entry.untracked());
    let changed: Vec<PathBuf> = changed.into_iter().map(|(p, _)| p.clone()).collect();
    if !changed.is_empty() {
        return Err(ToolError::retry(format!(
            "The working tree has uncommitted changes to tracked files ({}). A worktree starts from the last commit and would not have them: ask the user to commit or stash them first, or work in place.",
            listed(&changed, &repo.root)
        )));
    }
    let base = repo.head().await.map_err(|_| {
        ToolError::retry("The repository has no commit yet; a worktree needs one to start from.")
    })?;
    // A session in a subdirectory of the repository works in the same subdirectory of the worktree.
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let dir = match cwd.strip_prefix(&repo.root) {
        Ok(sub) if !sub.as_os_str().is_empty() => path.join(sub),
        _ => path.clone(),
    };
    let worktree =
        Worktree { path, dir, branch: format!("tinycode/{name}"), base, name, repo: repo.root.clone() };
    Ok(Enter {
        repo,
        worktree,
        resume: false,
        untracked: untracked.into_iter().map(|(p, _)| p.clone()).collect(),
    })
}

fn enter_presentation(enter: &Enter) -> Presentation {
    let w = &enter.worktree;
    let title = if enter.resume {
        format!("Resume worktree `{}` (branch `{}`)", w.name, w.branch)
    } else {
        format!(
            "Create worktree `{}` (branch `{}` from {})",
            w.name,
            w.branch,
            &w.base[..w.base.len().min(10)]
        )
    };
    Presentation {
        title,
        kind: Kind::Other,
        locations: vec![Location::new(&w.path)],
        patterns: vec![w.path.display().to_string()],
        content: vec![Content::Text(format!(
            "The session's tools will work in {} instead of {}.",
            w.dir.display(),
            enter.repo.root.display()
        ))],
    }
}

async fn execute_enter(ctx: Context, _args: Value) -> Result<ToolOutput, ToolError> {
    let enter = ctx.plan::<Enter>()?;
    let w = &enter.worktree;
    if !enter.resume {
        if let Some(dir) = w.path.parent() {
            crate::private::dir(dir)
                .map_err(|e| ToolError::execution(format!("cannot create {}: {e}", dir.display())))?;
        }
        enter.repo.add_worktree(&w.path, &w.branch, &w.base).await.map_err(git_error)?;
        let record = w.path.with_file_name(format!("{}.json", w.name));
        let json = serde_json::to_string_pretty(w).unwrap_or_default();
        crate::private::write(&record, json.as_bytes())
            .map_err(|e| ToolError::execution(format!("cannot write {}: {e}", record.display())))?;
    }
    ctx.control.request_worktree(Some(w.clone()));
    let mut output = format!(
        "{} worktree `{}` at {} on branch `{}`. From your next step on, every tool works in {}: relative paths resolve against it and files outside it cannot be changed. Commit your work in it, then call exit_worktree (`keep` to come back and leave it, `remove` to delete it).",
        if enter.resume { "Resumed" } else { "Created" },
        w.name,
        w.path.display(),
        w.branch,
        w.dir.display()
    );
    if !enter.untracked.is_empty() {
        output.push_str(&format!(
            "\nUntracked files of the working tree are not in the worktree: {}.",
            listed(&enter.untracked, &enter.repo.root)
        ));
    }
    Ok(ToolOutput { metadata: json!(w), locations: vec![Location::new(&w.dir)], ..ToolOutput::text(output) })
}

/// What `exit_worktree` will do.
struct Exit {
    worktree: Worktree,
    remove: bool,
}

pub fn exit() -> Def {
    Def {
        id: EXIT.into(),
        description: include_str!("descriptions/exit_worktree.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["keep", "remove"], "description": "keep (default) or remove the worktree"},
                "discard_changes": {"type": "boolean", "description": "Remove even with uncommitted changes or new commits (the user is asked)"}
            }
        }),
        permission: Some(Category::Edit),
        present: |args, _| Presentation {
            title: match args.get("action").and_then(Value::as_str) {
                Some("remove") => "Leave and remove the worktree".into(),
                _ => "Leave the worktree".into(),
            },
            kind: Kind::Other,
            ..Presentation::default()
        },
        preview: Some(Arc::new(|ctx, args| Box::pin(preview_exit(ctx, args)))),
        execute: Arc::new(|ctx, _args| Box::pin(execute_exit(ctx))),
    }
}

/// Why removing the worktree would lose work (empty: it would not), or `Err` when that cannot be checked.
async fn unsaved_work(w: &Worktree) -> Result<Vec<String>, GitError> {
    let repo = Repo::open(&w.path).await?;
    let status = repo.status().await?;
    let commits = repo.commits_since(&w.base).await?;
    let mut lost = Vec::new();
    if !status.is_empty() {
        let paths: Vec<PathBuf> = status.into_keys().collect();
        lost.push(format!("uncommitted changes ({})", listed(&paths, &w.path)));
    }
    if commits > 0 {
        lost.push(format!("{commits} commit(s) on `{}` that its starting point does not have", w.branch));
    }
    Ok(lost)
}

async fn preview_exit(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let Some(worktree) = ctx.control.worktree() else {
        return Err(ToolError::retry("The session is not in a worktree; there is nothing to leave."));
    };
    let remove = match arg_opt_str(&args, "action")?.map(str::trim) {
        None | Some("" | "keep") => false,
        Some("remove") => true,
        Some(other) => {
            return Err(ToolError::retry(format!("`action` is `keep` or `remove`, not `{other}`.")));
        }
    };
    let discard = args.get("discard_changes").and_then(Value::as_bool).unwrap_or(false);
    let mut presentation = Presentation {
        title: format!("Leave worktree `{}`", worktree.name),
        kind: Kind::Other,
        locations: vec![Location::new(&worktree.repo)],
        ..Presentation::default()
    };
    let mut category = Some(Category::Read);
    if remove {
        let lost = match unsaved_work(&worktree).await {
            Ok(lost) => lost,
            Err(e) => vec![format!("state that cannot be checked ({e})")],
        };
        if !lost.is_empty() && !discard {
            return Err(ToolError::retry(format!(
                "Refusing to remove worktree `{}`: it has {}. Keep it (action `keep`), or merge or commit the work first; pass discard_changes: true only if the user agreed to lose it.",
                worktree.name,
                lost.join(" and ")
            )));
        }
        presentation.title =
            format!("Leave and remove worktree `{}` (branch `{}`)", worktree.name, worktree.branch);
        presentation.patterns = vec![worktree.path.display().to_string()];
        if !lost.is_empty() {
            // The worktree's `.git` is a protected path: the ask comes in every mode and offers no "always".
            presentation.patterns = vec![worktree.path.join(".git").display().to_string()];
            presentation.content.push(Content::Text(format!("Removing it discards {}.", lost.join(" and "))));
        }
        category = None;
    }
    Ok(Preview { presentation, plan: Arc::new(Exit { worktree, remove }), category })
}

async fn execute_exit(ctx: Context) -> Result<ToolOutput, ToolError> {
    let exit = ctx.plan::<Exit>()?;
    let w = &exit.worktree;
    let output = if exit.remove {
        let repo = Repo::open(&w.repo).await.map_err(git_error)?;
        repo.remove_worktree(&w.path, &w.branch).await.map_err(git_error)?;
        let _ = std::fs::remove_file(w.path.with_file_name(format!("{}.json", w.name)));
        format!(
            "Removed worktree `{}` and its branch `{}`. From your next step on, the tools work in {} again.",
            w.name,
            w.branch,
            w.repo.display()
        )
    } else {
        format!(
            "Left worktree `{}`; it stays at {} on branch `{}` (enter_worktree with this name resumes it). From your next step on, the tools work in {} again.",
            w.name,
            w.path.display(),
            w.branch,
            w.repo.display()
        )
    };
    ctx.control.request_worktree(None);
    Ok(ToolOutput { metadata: json!({"worktree": w, "removed": exit.remove}), ..ToolOutput::text(output) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_names_are_short_plain_words() {
        for good in ["fix-login", "v2.1", "a_b", "x"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-x", ".hidden", "a/b", "a..b", "x.lock", "spa ce", &"n".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
