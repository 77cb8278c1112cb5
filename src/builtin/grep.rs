//! The `grep` tool (seed 000 §8.3): regex search with an `include` filter, at most 500 matches, files over
//! 1 MB skipped, output `relPath:line:content` with the most recently modified files first.
//!
//! Owns content search. Reads each file at most once and never more than 1 MB of it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use regex::bytes::Regex;
use serde_json::{Value, json};

use super::read;
use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, ToolError, ToolOutput, arg_opt_str, arg_opt_u64, arg_str, resolve_path};
use crate::workspace::walk::{self, Found};

pub const ID: &str = "grep";
/// Maximum matches returned (also the default of `max_count`).
pub const MAX_GREP_MATCHES: usize = 500;
/// Larger files are skipped.
pub const MAX_FILE_SIZE: u64 = 1024 * 1024;
/// Matched lines are clamped to this many characters.
const MAX_LINE_CHARS: usize = 2_000;
/// The longest regex accepted: 16 KiB, room for a long alternation of names; longer ones only cost compile time.
pub const MAX_PATTERN_BYTES: usize = 16 * 1024;

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/grep.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for"},
                "path": {"type": "string", "description": "Directory or file to search (default: working directory)"},
                "include": {"type": "string", "description": "Glob of files to search, e.g. *.rs or *.{ts,tsx}"},
                "max_count": {"type": "integer", "description": "Maximum matches to return (default and maximum 500)", "minimum": 1}
            },
            "required": ["pattern"]
        }),
        permission: Some(Category::Read),
        present,
        preview: None,
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

/// The matches found in one file.
#[derive(Debug)]
struct FileMatches {
    file: Found,
    /// (1-based line, text), at most the cap.
    lines: Vec<(usize, String)>,
    /// All matches in the file, including those not kept.
    count: usize,
}

fn clamp(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches('\r');
    if text.chars().count() > MAX_LINE_CHARS {
        let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
        format!("{cut}...")
    } else {
        text.to_string()
    }
}

fn search_file(regex: &Regex, file: Found, cap: usize) -> Option<FileMatches> {
    let bytes = std::fs::read(&file.path).ok()?;
    if !regex.is_match(&bytes) || read::is_binary(&bytes) {
        return None;
    }
    let mut lines = Vec::new();
    let mut count = 0;
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if regex.is_match(line) {
            count += 1;
            if lines.len() < cap {
                lines.push((i + 1, clamp(line)));
            }
        }
    }
    (count > 0).then_some(FileMatches { file, lines, count })
}

/// Where the search runs and what it skips.
struct Scope {
    root: PathBuf,
    /// `Some` when `path` named a single file.
    single: Option<Found>,
}

async fn scope(root: PathBuf) -> Result<Scope, ToolError> {
    let meta = tokio::fs::metadata(&root)
        .await
        .map_err(|_| ToolError::retry(format!("Search path not found: {}", root.display())))?;
    if meta.is_dir() {
        return Ok(Scope { root, single: None });
    }
    if !meta.is_file() {
        return Err(ToolError::retry(format!(
            "{} is not a regular file (device, FIFO or socket)",
            root.display()
        )));
    }
    let file = Found {
        path: root.clone(),
        modified: meta.modified().unwrap_or(std::time::SystemTime::UNIX_EPOCH),
        len: meta.len(),
    };
    Ok(Scope { root, single: Some(file) })
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

fn run_search(
    scope: Scope,
    regex: Regex,
    keep: PathFilter,
    cap: usize,
    cancel: tokio_util::sync::CancellationToken,
) -> (Vec<FileMatches>, usize) {
    let results = Mutex::new(Vec::new());
    let skipped = Mutex::new(0usize);
    let handle = |file: Found| {
        if file.len > MAX_FILE_SIZE {
            if let Ok(mut n) = skipped.lock() {
                *n += 1;
            }
            return;
        }
        if let Some(found) = search_file(&regex, file, cap)
            && let Ok(mut all) = results.lock()
        {
            all.push(found);
        }
    };
    match scope.single {
        Some(file) => handle(file),
        None => walk::visit(&scope.root, None, &*keep, &cancel, &handle),
    }
    (results.into_inner().unwrap_or_default(), skipped.into_inner().unwrap_or_default())
}

fn display_path(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

fn format_results(mut found: Vec<FileMatches>, skipped: usize, cap: usize, cwd: &Path) -> (String, usize) {
    found.sort_by(|a, b| b.file.modified.cmp(&a.file.modified).then_with(|| a.file.path.cmp(&b.file.path)));
    let total: usize = found.iter().map(|f| f.count).sum();
    let mut out: Vec<String> = Vec::new();
    'files: for file in &found {
        let rel = display_path(&file.file.path, cwd);
        for (line, text) in &file.lines {
            if out.len() == cap {
                break 'files;
            }
            out.push(format!("{rel}:{line}:{text}"));
        }
    }
    if out.is_empty() {
        out.push("No matches found".into());
    }
    if total > cap {
        out.push(format!(
            "\n(Results truncated: showing {cap} of {total} matches. Consider using a more specific path, pattern or include.)"
        ));
    }
    if skipped > 0 {
        out.push(format!("\n({skipped} files larger than 1 MB were skipped.)"));
    }
    (out.join("\n"), total)
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
    let regex =
        Regex::new(pattern).map_err(|e| ToolError::retry(format!("invalid regex `{pattern}`: {e}")))?;
    let cap = match arg_opt_u64(&args, "max_count")? {
        Some(0) => return Err(ToolError::retry("max_count must be greater than zero")),
        Some(n) => (n as usize).min(MAX_GREP_MATCHES),
        None => MAX_GREP_MATCHES,
    };
    let keep = include_filter(arg_opt_str(&args, "include")?)?;
    let root = match arg_opt_str(&args, "path")? {
        Some(p) if !p.trim().is_empty() => ctx.resolve(p.trim()),
        _ => ctx.directory.clone(),
    };
    let scope = scope(root).await?;
    let cancel = ctx.cancel.clone();
    let (found, skipped) = tokio::task::spawn_blocking(move || run_search(scope, regex, keep, cap, cancel))
        .await
        .map_err(|e| ToolError::execution(format!("search failed: {e}")))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let (output, total) = format_results(found, skipped, cap, &ctx.directory);
    Ok(ToolOutput {
        output,
        metadata: json!({"matches": total, "truncated": total > cap}),
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn hit(path: &str, secs: u64, lines: &[(usize, &str)]) -> FileMatches {
        FileMatches {
            file: Found {
                path: path.into(),
                modified: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
                len: 1,
            },
            lines: lines.iter().map(|(n, t)| (*n, t.to_string())).collect(),
            count: lines.len(),
        }
    }

    #[test]
    fn matches_are_listed_newest_file_first_in_line_order() {
        let found = vec![hit("/p/old.rs", 1, &[(3, "a"), (9, "b")]), hit("/p/new.rs", 2, &[(1, "c")])];
        let (out, total) = format_results(found, 0, 500, Path::new("/p"));
        assert_eq!(out, "new.rs:1:c\nold.rs:3:a\nold.rs:9:b");
        assert_eq!(total, 3);
    }

    #[test]
    fn the_cap_keeps_exactly_that_many_matches_and_reports_the_total() {
        let lines: Vec<(usize, &str)> = (1..=501).map(|i| (i, "x")).collect();
        let (out, total) = format_results(vec![hit("/p/a", 1, &lines)], 0, 500, Path::new("/p"));
        assert_eq!(total, 501);
        let rows: Vec<&str> = out.lines().collect();
        assert_eq!(rows.len(), 502);
        assert_eq!(rows[499], "a:500:x");
        assert_eq!(
            rows[501],
            "(Results truncated: showing 500 of 501 matches. Consider using a more specific path, pattern or include.)"
        );
        let lines: Vec<(usize, &str)> = (1..=500).map(|i| (i, "x")).collect();
        let (out, _) = format_results(vec![hit("/p/a", 1, &lines)], 0, 500, Path::new("/p"));
        assert!(!out.contains("truncated"));
    }

    #[test]
    fn include_matches_file_names_unless_it_names_a_directory() {
        let by_name = include_filter(Some("*.{rs,toml}")).unwrap();
        assert!(by_name(Path::new("src/deep/main.rs")));
        assert!(!by_name(Path::new("src/main.py")));
        let by_path = include_filter(Some("src/*.rs")).unwrap();
        assert!(by_path(Path::new("src/main.rs")));
        assert!(!by_path(Path::new("tests/main.rs")));
    }

    #[test]
    fn search_file_counts_every_match_but_keeps_only_the_cap_and_skips_binary_files() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("t.txt");
        std::fs::write(&text, "alpha\nbeta\r\nalpha beta\n").unwrap();
        let regex = Regex::new("beta").unwrap();
        let found =
            |path: &Path| Found { path: path.to_path_buf(), modified: SystemTime::UNIX_EPOCH, len: 1 };
        let m = search_file(&regex, found(&text), 1).unwrap();
        assert_eq!((m.count, m.lines), (2, vec![(2, "beta".to_string())]));
        let bin = dir.path().join("b.bin");
        std::fs::write(&bin, b"beta\0\0\0\0\0\0").unwrap();
        assert!(search_file(&regex, found(&bin), 10).is_none());
    }
}
