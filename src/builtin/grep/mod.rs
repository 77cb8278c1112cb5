//! The `grep` tool (seed 000 §8.3, seeds 003 and 004): regex search with an `include` filter, context lines
//! (`context`, `before`, `after`), at most 500 matches, lines clamped at 500 columns, files over 1 MB skipped,
//! output `relPath:line:content` (context lines `relPath-line-content`) with the most recently modified files
//! first, and a search deadline that returns what was found with a note. The walk uses the session's ignore
//! stack and leaves out secret files, special files and `/proc`, `/sys`, `/dev`; a secret file named as `path`
//! asks, and so does a search outside the workspace (`access`).
//!
//! Owns content search. Keeps only the matches it may still show, so memory stays bounded whatever the tree.

pub mod search;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use regex::bytes::Regex;
use serde_json::{Value, json};

use super::access::{self, Target};
use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::tool::{
    Context, Def, Preview, ToolError, ToolOutput, arg_opt_str, arg_opt_u64, arg_str, resolve_path,
};
use crate::workspace::ignore_rules::Stack;
use crate::workspace::regular;
use crate::workspace::walk::Walker;
use search::{Around, Collector, FileMatches, Searched, display_path, search_file, search_listed};

pub use search::{MAX_FILE_SIZE, MAX_LINE_CHARS};

pub const ID: &str = "grep";
/// Maximum matches returned (also the default of `max_count`).
pub const MAX_GREP_MATCHES: usize = 500;
/// Most context lines on either side of a match.
pub const MAX_CONTEXT: u64 = 20;
/// How long a search may run before it returns what it found.
pub const SEARCH_DEADLINE: Duration = Duration::from_secs(20);
/// The longest regex accepted: 16 KiB, room for a long alternation of names; longer ones only cost compile time.
pub const MAX_PATTERN_BYTES: usize = 16 * 1024;

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/grep.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for"},
                "path": {"type": "string", "description": "Directory or file to search (default: working directory)"},
                "include": {"type": "string", "description": "Glob of files to search, e.g. *.rs or *.{ts,tsx}"},
                "context": {"type": "integer", "description": "Lines of context before and after each match (default 0, max 20)", "minimum": 0},
                "before": {"type": "integer", "description": "Lines of context before each match (overrides context)", "minimum": 0},
                "after": {"type": "integer", "description": "Lines of context after each match (overrides context)", "minimum": 0},
                "max_count": {"type": "integer", "description": "Maximum matches to return (default and maximum 500)", "minimum": 1}
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
    let include = args.get("include").and_then(Value::as_str);
    let mut title = format!("Search `{pattern}`");
    if let Some(root) = root.as_ref().filter(|r| r.as_path() != cwd) {
        title.push_str(&format!(" in {}", root.display()));
    }
    if let Some(include) = include {
        title.push_str(&format!(" ({include})"));
    }
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

/// Where the search runs.
struct Scope {
    root: PathBuf,
    /// `path` named a single file.
    single: bool,
}

fn virtual_dir(root: &Path) -> ToolError {
    ToolError::retry(format!(
        "{} is in a virtual file system ({}), which grep does not search. Read one file there with read instead.",
        root.display(),
        regular::VIRTUAL_DIRS.join(", ")
    ))
}

async fn scope(root: PathBuf) -> Result<Scope, ToolError> {
    if regular::is_virtual(&root) {
        return Err(virtual_dir(&root));
    }
    let meta = tokio::fs::metadata(&root)
        .await
        .map_err(|_| ToolError::retry(format!("Search path not found: {}", root.display())))?;
    if meta.is_dir() {
        return Ok(Scope { root, single: false });
    }
    if let Some(kind) = regular::irregular_kind(&meta) {
        return Err(ToolError::retry(format!(
            "{} is {kind}, not a regular file. Only regular files can be searched.",
            root.display()
        )));
    }
    Ok(Scope { root, single: true })
}

/// Decides from a path relative to the search root whether a file is searched.
type PathFilter = Box<dyn Fn(&Path) -> bool + Send + Sync>;

fn include_filter(include: Option<&str>) -> Result<PathFilter, ToolError> {
    let Some(include) = include.map(str::trim).filter(|i| !i.is_empty()) else {
        return Ok(Box::new(|_| true));
    };
    let by_name = !include.contains('/');
    let matcher = super::glob::compile(include)?;
    Ok(Box::new(move |rel: &Path| {
        if by_name { rel.file_name().is_some_and(|n| matcher.is_match(n)) } else { matcher.is_match(rel) }
    }))
}

/// What a search found, with what it left out.
struct Results {
    found: Vec<FileMatches>,
    total: usize,
    too_large: usize,
    secret_files: usize,
    timed_out: bool,
}

/// Everything one search needs.
struct Search {
    scope: Scope,
    regex: Regex,
    keep: PathFilter,
    cap: usize,
    around: Around,
    stack: std::sync::Arc<Stack>,
    cancel: tokio_util::sync::CancellationToken,
    deadline: Instant,
}

fn run_search(search: Search) -> Results {
    let collector = Mutex::new(Collector::new(search.cap));
    let collect = |searched: Searched| {
        // Most files hold no match: the lock is taken only for those that do.
        if matches!(searched, Searched::Nothing) {
            return;
        }
        let Ok(mut collector) = collector.lock() else { return };
        match searched {
            Searched::Matches(found) => collector.add(found),
            Searched::TooLarge => collector.too_large += 1,
            Searched::Nothing => {}
        }
    };
    let handle = |path: PathBuf| collect(search_listed(&search.regex, path, search.cap, search.around));
    let summary = if search.scope.single {
        collect(search_file(&search.regex, search.scope.root.clone(), search.cap, search.around));
        Default::default()
    } else {
        Walker::new(&search.scope.root, &search.stack)
            .keep(&*search.keep)
            .cancel(&search.cancel)
            .deadline(Some(search.deadline))
            .paths(&handle)
    };
    let collector = collector.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    Results {
        found: collector.kept.into_values().collect(),
        total: collector.total,
        too_large: collector.too_large,
        secret_files: summary.secret_files,
        timed_out: summary.timed_out,
    }
}

/// The shown lines: matches as `path:line:text`, context as `path-line-text`, `--` between separate groups.
fn format_lines(results: &Results, cap: usize, cwd: &Path, with_context: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut shown = 0;
    'files: for file in &results.found {
        let rel = display_path(&file.path, cwd);
        let mut previous: Option<usize> = None;
        for line in &file.lines {
            if line.matched && shown == cap {
                break 'files;
            }
            let new_group = match previous {
                Some(p) => p + 1 != line.number,
                None => !out.is_empty(),
            };
            if with_context && new_group {
                out.push("--".into());
            }
            let separator = if line.matched { ':' } else { '-' };
            out.push(format!("{rel}{separator}{}{separator}{}", line.number, line.text));
            shown += usize::from(line.matched);
            previous = Some(line.number);
        }
    }
    out
}

/// The output: `found` is newest first; `total` counts every match, shown or not.
fn format_results(results: &Results, cap: usize, cwd: &Path, with_context: bool) -> String {
    let mut out = format_lines(results, cap, cwd, with_context);
    if out.is_empty() {
        out.push("No matches found".into());
    }
    if results.timed_out {
        out.push(format!(
            "\n(The search stopped after {} s: these results are partial. Search a smaller path, or narrow the pattern or include.)",
            SEARCH_DEADLINE.as_secs()
        ));
    }
    if results.total > cap {
        out.push(format!(
            "\n(Results truncated: showing {cap} of {} matches. Consider using a more specific path, pattern or include.)",
            results.total
        ));
    }
    if results.too_large > 0 {
        out.push(format!("\n({} files larger than 1 MB were skipped.)", results.too_large));
    }
    if results.secret_files > 0 {
        out.push(format!(
            "\n({} secret files (.env, keys, credentials) were not searched. To search one, pass it as `path`; the user will be asked.)",
            results.secret_files
        ));
    }
    out.join("\n")
}

/// Resolve the search path and decide what searching it asks (outside the workspace, a secret file).
async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let root = match arg_opt_str(&args, "path")? {
        Some(p) if !p.trim().is_empty() => ctx.resolve(p.trim()),
        _ => ctx.directory.clone(),
    };
    let access = access::decide(&ctx, &root, !root.is_dir())?;
    if regular::is_virtual(&access.path) {
        return Err(virtual_dir(&access.path));
    }
    let mut presentation = present(&args, &ctx.directory);
    access.present(&mut presentation);
    Ok(Preview { presentation, plan: std::sync::Arc::new(Target(access.path)), category: access.category })
}

/// The context lines asked for: `before`/`after` override `context` for their side.
fn around(args: &Value) -> Result<Around, ToolError> {
    let read = |name: &str| -> Result<Option<usize>, ToolError> {
        match arg_opt_u64(args, name)? {
            Some(n) if n > MAX_CONTEXT => {
                Err(ToolError::retry(format!("{name} must be at most {MAX_CONTEXT} lines, got {n}")))
            }
            other => Ok(other.map(|n| n as usize)),
        }
    };
    let both = read("context")?.unwrap_or(0);
    Ok(Around { before: read("before")?.unwrap_or(both), after: read("after")?.unwrap_or(both) })
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let pattern = arg_str(&args, "pattern")?;
    if pattern.is_empty() {
        return Err(ToolError::retry("pattern must not be empty"));
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(ToolError::retry(format!(
            "the pattern is {} bytes long; the limit is {MAX_PATTERN_BYTES} bytes",
            pattern.len()
        )));
    }
    let regex = search::compile(pattern)?;
    let cap = match arg_opt_u64(&args, "max_count")? {
        Some(0) => return Err(ToolError::retry("max_count must be greater than zero")),
        Some(n) => (n as usize).min(MAX_GREP_MATCHES),
        None => MAX_GREP_MATCHES,
    };
    let around = around(&args)?;
    let keep = include_filter(arg_opt_str(&args, "include")?)?;
    let search = Search {
        scope: scope(ctx.plan::<Target>()?.0.clone()).await?,
        regex,
        keep,
        cap,
        around,
        stack: ctx.files.ignores(),
        cancel: ctx.cancel.clone(),
        deadline: Instant::now() + SEARCH_DEADLINE,
    };
    let results = tokio::task::spawn_blocking(move || run_search(search))
        .await
        .map_err(|e| ToolError::execution(format!("search failed: {e}")))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let with_context = around != Around::default();
    let output = format_results(&results, cap, &ctx.directory, with_context);
    Ok(ToolOutput {
        output,
        metadata: json!({"matches": results.total, "truncated": results.total > cap, "timedOut": results.timed_out}),
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests;
