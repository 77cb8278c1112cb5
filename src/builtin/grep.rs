//! The `grep` tool (seed 000 §8.3): regex search with an `include` filter, at most 500 matches, files over
//! 1 MB skipped, output `relPath:line:content` with the most recently modified files first. The walk leaves
//! out secret files, special files and `/proc`, `/sys`, `/dev`; a secret file named as `path` asks, and so does
//! a search outside the workspace (`access`).
//!
//! Owns content search. Reads each file at most once and never more than 1 MB of it, and keeps only the
//! matches it may still show, so memory stays bounded whatever the tree.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use regex::bytes::Regex;
use serde_json::{Value, json};

use super::access::{self, Target};
use super::read;
use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::tool::{
    Context, Def, Preview, ToolError, ToolOutput, arg_opt_str, arg_opt_u64, arg_str, resolve_path,
};
use crate::workspace::regular;
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

/// The search regex. `^` and `$` anchor at line ends (also before `\r\n`): the whole file is matched first, so
/// without multi-line mode an anchored pattern would only ever match the file's first or last line.
fn compile(pattern: &str) -> Result<Regex, ToolError> {
    regex::bytes::RegexBuilder::new(pattern)
        .multi_line(true)
        .crlf(true)
        .build()
        .map_err(|e| ToolError::retry(format!("invalid regex `{pattern}`: {e}")))
}

/// What searching one file gave.
enum Searched {
    Matches(FileMatches),
    Nothing,
    /// Over [`MAX_FILE_SIZE`], whatever size the file system reported.
    TooLarge,
}

fn search_file(regex: &Regex, file: Found, cap: usize) -> Searched {
    let Ok(read) = regular::read(&file.path, MAX_FILE_SIZE) else { return Searched::Nothing };
    if !read.complete {
        return Searched::TooLarge;
    }
    let bytes = read.bytes;
    if !regex.is_match(&bytes) || read::is_binary(&bytes) {
        return Searched::Nothing;
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
    if count == 0 {
        return Searched::Nothing;
    }
    Searched::Matches(FileMatches { file, lines, count })
}

/// The matches that can still be shown: files newest first, and no more of them than it takes to fill the
/// cap, so a search of a whole disk holds at most `cap` lines however many files match.
struct Collector {
    kept: BTreeMap<(Reverse<SystemTime>, PathBuf), FileMatches>,
    kept_lines: usize,
    /// Every match seen, shown or not.
    total: usize,
    too_large: usize,
    cap: usize,
}

impl Collector {
    fn new(cap: usize) -> Self {
        Self { kept: BTreeMap::new(), kept_lines: 0, total: 0, too_large: 0, cap }
    }

    fn add(&mut self, found: FileMatches) {
        self.total += found.count;
        self.kept_lines += found.lines.len();
        self.kept.insert((Reverse(found.file.modified), found.file.path.clone()), found);
        while let Some((_, oldest)) = self.kept.last_key_value() {
            if self.kept_lines - oldest.lines.len() < self.cap {
                break;
            }
            self.kept_lines -= oldest.lines.len();
            self.kept.pop_last();
        }
    }
}

/// Where the search runs and what it skips.
struct Scope {
    root: PathBuf,
    /// `Some` when `path` named a single file.
    single: Option<Found>,
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
        return Ok(Scope { root, single: None });
    }
    if let Some(kind) = regular::irregular_kind(&meta) {
        return Err(ToolError::retry(format!(
            "{} is {kind}, not a regular file. Only regular files can be searched.",
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

/// What a search found, with what it left out.
struct Results {
    found: Vec<FileMatches>,
    total: usize,
    too_large: usize,
    secret_files: usize,
}

fn run_search(
    scope: Scope,
    regex: Regex,
    keep: PathFilter,
    cap: usize,
    cancel: tokio_util::sync::CancellationToken,
) -> Results {
    let collector = Mutex::new(Collector::new(cap));
    let handle = |file: Found| {
        let searched =
            if file.len > MAX_FILE_SIZE { Searched::TooLarge } else { search_file(&regex, file, cap) };
        let Ok(mut collector) = collector.lock() else { return };
        match searched {
            Searched::Matches(found) => collector.add(found),
            Searched::TooLarge => collector.too_large += 1,
            Searched::Nothing => {}
        }
    };
    let secret_files = match scope.single {
        Some(file) => {
            handle(file);
            0
        }
        None => walk::visit(&scope.root, None, &*keep, &cancel, &handle),
    };
    let collector = collector.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    Results {
        found: collector.kept.into_values().collect(),
        total: collector.total,
        too_large: collector.too_large,
        secret_files,
    }
}

fn display_path(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// The output: `found` is newest first; `total` counts every match, shown or not.
fn format_results(results: &Results, cap: usize, cwd: &Path) -> String {
    let mut out: Vec<String> = Vec::new();
    'files: for file in &results.found {
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
    let regex = compile(pattern)?;
    let cap = match arg_opt_u64(&args, "max_count")? {
        Some(0) => return Err(ToolError::retry("max_count must be greater than zero")),
        Some(n) => (n as usize).min(MAX_GREP_MATCHES),
        None => MAX_GREP_MATCHES,
    };
    let keep = include_filter(arg_opt_str(&args, "include")?)?;
    let scope = scope(ctx.plan::<Target>()?.0.clone()).await?;
    let cancel = ctx.cancel.clone();
    let results = tokio::task::spawn_blocking(move || run_search(scope, regex, keep, cap, cancel))
        .await
        .map_err(|e| ToolError::execution(format!("search failed: {e}")))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let output = format_results(&results, cap, &ctx.directory);
    Ok(ToolOutput {
        output,
        metadata: json!({"matches": results.total, "truncated": results.total > cap}),
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

    fn collect(hits: Vec<FileMatches>, cap: usize) -> Results {
        let mut collector = Collector::new(cap);
        for hit in hits {
            collector.add(hit);
        }
        Results {
            found: collector.kept.into_values().collect(),
            total: collector.total,
            too_large: collector.too_large,
            secret_files: 0,
        }
    }

    #[test]
    fn matches_are_listed_newest_file_first_in_line_order() {
        let found = vec![hit("/p/old.rs", 1, &[(3, "a"), (9, "b")]), hit("/p/new.rs", 2, &[(1, "c")])];
        let results = collect(found, 500);
        assert_eq!(format_results(&results, 500, Path::new("/p")), "new.rs:1:c\nold.rs:3:a\nold.rs:9:b");
        assert_eq!(results.total, 3);
    }

    #[test]
    fn the_collector_drops_older_files_once_newer_ones_fill_the_cap() {
        let hits = (0..1_000u64).map(|i| hit(&format!("/p/f{i:04}"), i, &[(1, "x"), (2, "y")])).collect();
        let results = collect(hits, 3);
        let kept: Vec<&Path> = results.found.iter().map(|f| f.file.path.as_path()).collect();
        assert_eq!(kept, vec![Path::new("/p/f0999"), Path::new("/p/f0998")]);
        assert_eq!(results.total, 2_000);
        assert_eq!(
            format_results(&results, 3, Path::new("/p")),
            "f0999:1:x\nf0999:2:y\nf0998:1:x\n\n(Results truncated: showing 3 of 2000 matches. Consider using a more specific path, pattern or include.)"
        );
    }

    #[test]
    fn the_cap_keeps_exactly_that_many_matches_and_reports_the_total() {
        let lines: Vec<(usize, &str)> = (1..=501).map(|i| (i, "x")).collect();
        let results = collect(vec![hit("/p/a", 1, &lines)], 500);
        let out = format_results(&results, 500, Path::new("/p"));
        assert_eq!(results.total, 501);
        let rows: Vec<&str> = out.lines().collect();
        assert_eq!(rows.len(), 502);
        assert_eq!(rows[499], "a:500:x");
        assert_eq!(
            rows[501],
            "(Results truncated: showing 500 of 501 matches. Consider using a more specific path, pattern or include.)"
        );
        let lines: Vec<(usize, &str)> = (1..=500).map(|i| (i, "x")).collect();
        let out = format_results(&collect(vec![hit("/p/a", 1, &lines)], 500), 500, Path::new("/p"));
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
        let Searched::Matches(m) = search_file(&regex, found(&text), 1) else { panic!("no match") };
        assert_eq!((m.count, m.lines), (2, vec![(2, "beta".to_string())]));
        let bin = dir.path().join("b.bin");
        std::fs::write(&bin, b"beta\0\0\0\0\0\0").unwrap();
        assert!(matches!(search_file(&regex, found(&bin), 10), Searched::Nothing));
    }

    #[test]
    fn anchored_patterns_match_any_line_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.txt");
        std::fs::write(&path, "a\r\nc\r\nd\n").unwrap();
        let file = Found { path, modified: SystemTime::UNIX_EPOCH, len: 1 };
        let Searched::Matches(m) = search_file(&compile("^c$").unwrap(), file, 10) else {
            panic!("no match")
        };
        assert_eq!(m.lines, vec![(2, "c".to_string())]);
    }

    #[test]
    fn a_procfs_file_reporting_size_zero_is_read_only_up_to_the_size_limit() {
        let regex = Regex::new("x").unwrap();
        let pagemap = Found { path: "/proc/self/pagemap".into(), modified: SystemTime::UNIX_EPOCH, len: 0 };
        assert!(matches!(search_file(&regex, pagemap, 10), Searched::TooLarge));
    }
}
