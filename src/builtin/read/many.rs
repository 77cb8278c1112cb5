//! Reading several files in one call (seed 003): `paths` holds files and glob patterns (or `file_path` holds a
//! glob). Literal paths are read as named; globs expand over the session's ignore stack, secret files left out.
//! The contents come back under `// File: <path> (<type>)` headers after a `Read X/Y files` summary. A file's
//! error is reported in its place and never fails the call; a secret file or one outside the workspace is
//! not read here (it asks when read on its own). An aggregate cap of one tool output (50 KB) keeps whole files
//! only and names exactly which were skipped.
//!
//! Owns the multi-file plan and its output. Reading one file is `read`'s (`show`).

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::{Shown, Window, show};
use crate::tool::{Context, ToolError, ToolOutput, truncate};
use crate::workspace::walk::Walker;

/// Files one call lists at most (globs can match many more).
pub const MAX_FILES: usize = 200;
/// Patterns in `paths` at most.
const MAX_PATTERNS: usize = 100;
/// Skipped files named at most.
const MAX_NAMED: usize = 30;

/// One thing to read: a resolved file (and how the model named it), or why it cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    File(PathBuf),
    Error { name: String, message: String },
}

/// What a multi-file read will read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    pub items: Vec<Item>,
    /// Files that matched beyond [`MAX_FILES`].
    pub over_cap: usize,
    /// Secret files globs matched, left out.
    pub secret_files: usize,
}

/// The `paths` argument, if given.
pub fn patterns(args: &Value) -> Result<Option<Vec<String>>, ToolError> {
    match args.get("paths") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if items.is_empty() => Ok(None),
        Some(Value::Array(items)) => {
            if items.len() > MAX_PATTERNS {
                return Err(ToolError::retry(format!(
                    "paths holds {} entries; at most {MAX_PATTERNS}.",
                    items.len()
                )));
            }
            items
                .iter()
                .map(|p| match p.as_str().map(str::trim) {
                    Some(p) if !p.is_empty() => Ok(p.to_string()),
                    _ => Err(ToolError::retry(
                        "paths must be a list of non-empty strings (paths or glob patterns)",
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        }
        Some(_) => Err(ToolError::retry("paths must be a list of strings (paths or glob patterns)")),
    }
}

fn has_glob(part: &str) -> bool {
    part.contains(['*', '?', '[', '{'])
}

/// Split a glob into the directory before its first wildcard and the pattern below it.
fn split_glob(path: &Path) -> (PathBuf, String) {
    let mut root = PathBuf::new();
    let mut rest: Vec<String> = Vec::new();
    for part in path.components() {
        let text = part.as_os_str().to_string_lossy();
        if rest.is_empty() && !has_glob(&text) {
            root.push(part);
        } else {
            rest.push(text.into_owned());
        }
    }
    // A pattern with no wildcard in a directory part ends in its last component.
    if rest.is_empty()
        && let Some(last) = root.file_name().map(|n| n.to_string_lossy().into_owned())
    {
        root.pop();
        rest.push(last);
    }
    (root, rest.join("/"))
}

/// Why a literal path is not read here, if it is not.
fn refusal(ctx: &Context, path: &Path) -> Result<Option<String>, ToolError> {
    let access = super::access::decide(ctx, path, true);
    Ok(match access {
        Err(e) => Some(e.to_string()),
        Ok(access) => match access.category {
            None => None,
            Some(crate::permission::Category::SecretRead) => Some(
                "a secret file: not read with other files. Read it on its own; the user will be asked.".into(),
            ),
            Some(_) => Some(
                "outside the workspace: not read with other files. Read it on its own; the user will be asked.".into(),
            ),
        },
    })
}

/// Expand one glob below the workspace into files, sorted by path.
async fn expand(ctx: &Context, pattern: &str, targets: &mut Targets) -> Result<Vec<PathBuf>, String> {
    let absolute = ctx.resolve(pattern);
    if absolute.components().any(|c| c == Component::ParentDir) {
        return Err("a glob must not contain `..`".into());
    }
    let (root, rest) = split_glob(&absolute);
    let located = ctx.files.locate(&root).map_err(|e| e.to_string())?;
    if !located.inside {
        return Err("outside the workspace: list those files with glob and read them one by one".into());
    }
    let matcher = super::super::glob::compile(&rest).map_err(|e| e.to_string())?;
    let depth = if rest.contains("**") { None } else { Some(Path::new(&rest).components().count()) };
    let (stack, cancel, walk_root) = (ctx.files.ignores(), ctx.cancel.clone(), located.path.clone());
    let walked = tokio::task::spawn_blocking(move || {
        Walker::new(&walk_root, &stack)
            .max_depth(depth)
            .keep(&|rel| matcher.is_match(rel))
            .cancel(&cancel)
            .files()
    })
    .await
    .map_err(|e| e.to_string())?;
    targets.secret_files += walked.secret_files;
    let mut files: Vec<PathBuf> = walked.files.into_iter().map(|f| f.path).collect();
    files.sort();
    Ok(files)
}

/// Resolve every pattern: literal paths checked one by one, globs expanded.
pub async fn targets(ctx: &Context, patterns: &[String]) -> Result<Targets, ToolError> {
    let mut targets = Targets::default();
    let mut seen = std::collections::HashSet::new();
    for pattern in patterns {
        let path = ctx.resolve(pattern);
        let files = if has_glob(pattern) && !path.exists() {
            match expand(ctx, pattern, &mut targets).await {
                Ok(files) if files.is_empty() => {
                    targets
                        .items
                        .push(Item::Error { name: pattern.clone(), message: "no files match".into() });
                    continue;
                }
                Ok(files) => files,
                Err(message) => {
                    targets.items.push(Item::Error { name: pattern.clone(), message });
                    continue;
                }
            }
        } else {
            if let Some(message) = refusal(ctx, &path)? {
                targets.items.push(Item::Error { name: pattern.clone(), message });
                continue;
            }
            vec![ctx.files.locate(&path).map(|l| l.path).unwrap_or(path)]
        };
        for file in files {
            if !seen.insert(file.clone()) {
                continue;
            }
            if targets.items.len() >= MAX_FILES {
                targets.over_cap += 1;
            } else {
                targets.items.push(Item::File(file));
            }
        }
    }
    Ok(targets)
}

fn shown_name(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// What one file's section showed.
enum Seen {
    /// Its text, and whether all of it (for the read ledger).
    Text(String, bool),
    /// Something else about the file (an image, a PDF).
    Other,
    Failed,
}

/// One file's section.
async fn section(ctx: &Context, path: &Path, budget: usize) -> (String, Seen) {
    let name = shown_name(path, &ctx.directory);
    let window = Window { offset: 0, limit: None, budget, stream: false };
    match show(ctx, path, window).await {
        Ok(Shown::Text { output, full, text }) => {
            let lines = text.lines().count();
            (format!("// File: {name} (text, {lines} lines)\n{output}"), Seen::Text(text, full))
        }
        Ok(Shown::Notebook { output, text }) => {
            (format!("// File: {name} (notebook)\n{output}"), Seen::Text(text, false))
        }
        Ok(Shown::Image { mime, bytes }) => (
            format!(
                "// File: {name} (image, {mime}, {bytes} bytes)\nNot inlined with other files: read it on its own to see it."
            ),
            Seen::Other,
        ),
        Ok(Shown::Described(text)) => (format!("// File: {name} (PDF)\n{text}"), Seen::Other),
        // Not asked for (`stream: false`); shown as what it is should that change.
        Ok(Shown::Streamed { output, .. }) => (format!("// File: {name} (text)\n{output}"), Seen::Other),
        Err(e) => (format!("// File: {name} (error)\n{e}"), Seen::Failed),
    }
}

/// Up to [`MAX_NAMED`] names, then how many more.
fn named(names: &[String]) -> String {
    let mut text = names.iter().take(MAX_NAMED).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > MAX_NAMED {
        text.push_str(&format!(" and {} more", names.len() - MAX_NAMED));
    }
    text
}

pub async fn execute(ctx: &Context, targets: &Targets) -> Result<ToolOutput, ToolError> {
    let budget = truncate::MAX_BYTES;
    let mut used = 0;
    let mut sections = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut read = 0;
    for item in &targets.items {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let text = match item {
            Item::Error { name, message } => format!("// File: {name} (error)\n{message}"),
            Item::File(path) => {
                // The first file may fill the budget alone (cut, with a note); later ones fit whole or wait.
                let room = if sections.is_empty() { budget } else { usize::MAX };
                let (text, seen) = section(ctx, path, room).await;
                if used + text.len() > budget && !sections.is_empty() {
                    skipped.push(shown_name(path, &ctx.directory));
                    continue;
                }
                if let Seen::Text(content, full) = &seen {
                    ctx.files.record_read(path, content, *full);
                }
                read += usize::from(!matches!(seen, Seen::Failed));
                text
            }
        };
        used += text.len() + 2;
        sections.push(text);
    }
    let total = targets.items.iter().filter(|i| matches!(i, Item::File(_))).count() + targets.over_cap;
    let mut out = format!("Read {read}/{total} files\n\n{}", sections.join("\n\n"));
    if !skipped.is_empty() {
        out.push_str(&format!(
            "\n\n(Skipped to stay within {} KB: {}. Read them separately, or narrow the paths or glob.)",
            budget / 1024,
            named(&skipped)
        ));
    }
    if targets.over_cap > 0 {
        out.push_str(&format!(
            "\n\n({} more files matched beyond the first {MAX_FILES}. Narrow the glob.)",
            targets.over_cap
        ));
    }
    if targets.secret_files > 0 {
        out.push_str(&format!(
            "\n\n({} secret files (.env, keys, credentials) matched and were not read. Read one on its own; the user will be asked.)",
            targets.secret_files
        ));
    }
    Ok(ToolOutput {
        output: out,
        metadata: json!({"read": read, "files": total, "skipped": skipped}),
        bounded: true,
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_splits_at_its_first_wildcard() {
        assert_eq!(split_glob(Path::new("/w/src/**/*.rs")), (PathBuf::from("/w/src"), "**/*.rs".to_string()));
        assert_eq!(split_glob(Path::new("/w/*.md")), (PathBuf::from("/w"), "*.md".to_string()));
        assert_eq!(split_glob(Path::new("/w/a/b.{rs,md}")), (PathBuf::from("/w/a"), "b.{rs,md}".to_string()));
    }

    #[test]
    fn paths_must_be_a_list_of_strings() {
        assert_eq!(patterns(&json!({})).unwrap(), None);
        assert_eq!(patterns(&json!({"paths": ["a", " b "]})).unwrap(), Some(vec!["a".into(), "b".into()]));
        assert_eq!(
            patterns(&json!({"paths": ["a", 3]})).unwrap_err(),
            ToolError::retry("paths must be a list of non-empty strings (paths or glob patterns)")
        );
    }
}
