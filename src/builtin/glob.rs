//! The `glob` tool (seed 000 §8.3, seed 003): `**` patterns over a parallel walk that honours the session's
//! ignore stack; at most 1,000 files, newest first; a 20-second deadline after which what was found is
//! returned with a note. Secret files, special files and `/proc`, `/sys`, `/dev` are left out; listing outside
//! the workspace asks (`access`).
//!
//! Owns pattern matching on paths. Must not read file contents.

use std::path::{Component, Path};

use serde_json::{Value, json};

use super::access::{self, Target};
use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_opt_str, arg_str, resolve_path};
use crate::workspace::regular;
use crate::workspace::walk::{self, Walker};

pub const ID: &str = "glob";
/// Maximum paths returned.
pub const MAX_GLOB_RESULTS: usize = 1_000;
/// How long a listing may run before it returns what it found.
pub const SEARCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/glob.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, e.g. **/*.rs"},
                "path": {"type": "string", "description": "Directory to search (default: working directory)"}
            },
            "required": ["pattern"]
        }),
        permission: Some(Category::Read),
        present,
        preview: Some(std::sync::Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: std::sync::Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, cwd: &Path) -> Presentation {
    let pattern = args.get("pattern").and_then(Value::as_str).unwrap_or("");
    let root = args.get("path").and_then(Value::as_str).map(|p| resolve_path(cwd, p));
    let title = match &root {
        Some(root) if root != cwd => format!("Find `{pattern}` in {}", root.display()),
        _ => format!("Find `{pattern}`"),
    };
    let root = root.unwrap_or_else(|| cwd.to_path_buf());
    Presentation {
        title,
        kind: Kind::Search,
        // No locations: editors open and follow them, and a directory is not a file to follow.
        locations: Vec::new(),
        patterns: vec![root.to_string_lossy().into_owned()],
        content: Vec::new(),
    }
}

/// The longest glob pattern accepted (also for grep's `include`): 4 KiB, the longest path Linux takes. Far
/// longer patterns (100,000 `*`) compile past the regex engine's size limit, where the matcher panics.
pub const MAX_GLOB_PATTERN_BYTES: usize = 4096;

/// A matcher for `pattern`, where `*` does not cross `/` but `**` does.
pub fn compile(pattern: &str) -> Result<globset::GlobMatcher, ToolError> {
    if pattern.len() > MAX_GLOB_PATTERN_BYTES {
        return Err(ToolError::retry(format!(
            "the glob pattern is {} bytes long; the limit is {MAX_GLOB_PATTERN_BYTES} bytes",
            pattern.len()
        )));
    }
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::retry(format!("invalid glob pattern `{pattern}`: {e}")))
}

/// How deep a pattern can reach: unlimited with `**`, otherwise its number of components.
fn depth_of(pattern: &str) -> Option<usize> {
    if pattern.contains("**") { None } else { Some(Path::new(pattern).components().count()) }
}

/// Turn an absolute pattern under `root` into a relative one.
fn relative_pattern<'a>(pattern: &'a str, root: &Path) -> Result<&'a str, ToolError> {
    if !Path::new(pattern).is_absolute() {
        return Ok(pattern.strip_prefix("./").unwrap_or(pattern));
    }
    let root_str = root.to_string_lossy();
    pattern
        .strip_prefix(root_str.as_ref())
        .map(|rest| rest.trim_start_matches('/'))
        .filter(|rest| !rest.is_empty())
        .ok_or_else(|| {
            ToolError::retry(format!(
                "absolute pattern `{pattern}` is not inside the search path {}; pass the directory as `path` and a relative pattern",
                root.display()
            ))
        })
}

fn virtual_dir(root: &Path) -> ToolError {
    ToolError::retry(format!(
        "{} is in a virtual file system ({}), which glob does not list.",
        root.display(),
        regular::VIRTUAL_DIRS.join(", ")
    ))
}

/// Check that a search root exists, is a directory, and is not in a virtual file system.
pub async fn check_dir(root: &Path) -> Result<(), ToolError> {
    if regular::is_virtual(root) {
        return Err(virtual_dir(root));
    }
    match tokio::fs::metadata(root).await {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(ToolError::retry(format!("glob path must be a directory: {}", root.display()))),
        Err(_) => Err(ToolError::retry(format!("Search path not found: {}", root.display()))),
    }
}

fn format_results(walked: walk::Walked) -> String {
    let secret_note = match walked.secret_files {
        0 => String::new(),
        n => format!(
            "\n({n} secret files (.env, keys, credentials) matched but are not listed. To read one, name it to read; the user will be asked.)"
        ),
    };
    let timeout_note = if walked.timed_out {
        format!(
            "\n(The search stopped after {} s: these results are partial. Search a smaller path or use a narrower pattern.)",
            SEARCH_DEADLINE.as_secs()
        )
    } else {
        String::new()
    };
    let mut found = walked.files;
    if found.is_empty() {
        return format!("No files found{timeout_note}{secret_note}");
    }
    walk::sort_newest_first(&mut found);
    let total = found.len();
    let mut out: Vec<String> =
        found.iter().take(MAX_GLOB_RESULTS).map(|f| f.path.display().to_string()).collect();
    if !timeout_note.is_empty() {
        out.push(timeout_note);
    }
    if total > MAX_GLOB_RESULTS {
        out.push(format!(
            "\n(Results are truncated: showing the {MAX_GLOB_RESULTS} newest of {total} files. Consider using a more specific path or pattern.)"
        ));
    }
    if !secret_note.is_empty() {
        out.push(secret_note);
    }
    out.join("\n")
}

/// Resolve the search directory and decide what listing it asks (outside the workspace).
async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let root = match arg_opt_str(&args, "path")? {
        Some(p) if !p.trim().is_empty() => ctx.resolve(p.trim()),
        _ => ctx.directory.clone(),
    };
    let access = access::decide(&ctx, &root, false)?;
    if regular::is_virtual(&access.path) {
        return Err(virtual_dir(&access.path));
    }
    let mut presentation = present(&args, &ctx.directory);
    access.present(&mut presentation);
    Ok(Preview { presentation, plan: std::sync::Arc::new(Target(access.path)), category: access.category })
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let pattern = arg_str(&args, "pattern")?.trim();
    if pattern.is_empty() {
        return Err(ToolError::retry("pattern must not be empty"));
    }
    let root = ctx.plan::<Target>()?.0.clone();
    check_dir(&root).await?;
    let relative = relative_pattern(pattern, &root)?.to_string();
    if Path::new(&relative).components().any(|c| c == Component::ParentDir) {
        return Err(ToolError::retry("pattern must not contain `..`; pass the directory as `path` instead"));
    }
    let matcher = compile(&relative)?;
    let depth = depth_of(&relative);
    let (cancel, stack) = (ctx.cancel.clone(), ctx.files.ignores());
    let deadline = std::time::Instant::now() + SEARCH_DEADLINE;
    let walk_root = root.clone();
    let found = tokio::task::spawn_blocking(move || {
        Walker::new(&walk_root, &stack)
            .max_depth(depth)
            .keep(&|rel| matcher.is_match(rel))
            .cancel(&cancel)
            .deadline(Some(deadline))
            .files()
    })
    .await
    .map_err(|e| ToolError::execution(format!("search failed: {e}")))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let (count, timed_out) = (found.files.len(), found.timed_out);
    Ok(ToolOutput {
        output: format_results(found),
        metadata: json!({"count": count, "truncated": count > MAX_GLOB_RESULTS, "timedOut": timed_out}),
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::walk::Found;

    #[test]
    fn patterns_at_the_length_limit_compile_and_longer_ones_are_refused_without_a_panic() {
        let limit = MAX_GLOB_PATTERN_BYTES;
        for shape in ["*", "?", "**/", "[!a]", "{a,b}", "\\*", "é"] {
            let pattern: String = shape.repeat(limit / shape.len());
            let compiled = std::panic::catch_unwind(|| compile(&pattern).map(|m| m.is_match("a/b")));
            assert!(compiled.is_ok(), "`{shape}` x {} panicked", limit / shape.len());
        }
        let Err(ToolError::Retry(message)) = compile(&"*".repeat(100_000)) else { panic!("not refused") };
        assert_eq!(message, "the glob pattern is 100000 bytes long; the limit is 4096 bytes");
    }

    #[test]
    fn a_single_star_stays_in_one_directory_and_double_star_crosses() {
        let star = compile("*.rs").unwrap();
        assert!(star.is_match("main.rs"));
        assert!(!star.is_match("src/main.rs"));
        let deep = compile("**/*.rs").unwrap();
        assert!(deep.is_match("main.rs"));
        assert!(deep.is_match("src/a/main.rs"));
        let alt = compile("src/*.{ts,tsx}").unwrap();
        assert!(alt.is_match("src/a.tsx"));
        assert_eq!(depth_of("*.rs"), Some(1));
        assert_eq!(depth_of("src/*/x.rs"), Some(3));
        assert_eq!(depth_of("src/**/x.rs"), None);
    }

    #[test]
    fn absolute_patterns_under_the_root_become_relative() {
        let root = Path::new("/p");
        assert_eq!(relative_pattern("/p/src/*.rs", root).unwrap(), "src/*.rs");
        assert_eq!(relative_pattern("./src/*.rs", root).unwrap(), "src/*.rs");
        assert!(relative_pattern("/elsewhere/*.rs", root).is_err());
    }

    #[test]
    fn more_than_a_thousand_results_keep_the_newest_and_say_how_many_there_were() {
        let base = std::time::SystemTime::UNIX_EPOCH;
        let found: Vec<Found> = (0..1_001u64)
            .map(|i| Found {
                path: format!("/p/f{i:04}").into(),
                modified: base + std::time::Duration::from_secs(i),
                len: 1,
            })
            .collect();
        let out = format_results(walk::Walked { files: found, secret_files: 2, timed_out: false });
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "/p/f1000");
        assert_eq!(lines[999], "/p/f0001");
        assert_eq!(
            lines[1001],
            "(Results are truncated: showing the 1000 newest of 1001 files. Consider using a more specific path or pattern.)"
        );
        assert!(!out.contains("/p/f0000"));
        assert_eq!(
            lines[1003],
            "(2 secret files (.env, keys, credentials) matched but are not listed. To read one, name it to read; the user will be asked.)"
        );
        assert_eq!(format_results(walk::Walked::default()), "No files found");
        assert_eq!(
            format_results(walk::Walked { timed_out: true, ..walk::Walked::default() }),
            "No files found\n(The search stopped after 20 s: these results are partial. Search a smaller path or use a narrower pattern.)"
        );
    }
}
