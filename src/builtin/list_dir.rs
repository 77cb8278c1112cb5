//! The `list_dir` tool (seeds 003 and 004: `path`, `depth`): a directory tree with types and sizes, breadth
//! first so a cap cuts the deepest levels, honouring the session's ignore stack (ignored entries are named in a
//! note, never expanded), with notes that name what the depth and entry caps cut. Secret files are counted,
//! not named; links are shown with their target and never followed; listing outside the workspace asks
//! (`access`).
//!
//! Owns the listing. Must not read file contents.

use std::collections::VecDeque;
use std::fs::FileType;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::access::{self, Target};
use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_opt_str, arg_opt_u64, resolve_path};
use crate::workspace::ignore_rules::{Level, Present, Stack};
use crate::workspace::regular;
use crate::workspace::secret_files::is_secret_path;

pub const ID: &str = "list_dir";
/// Levels listed when `depth` is not given.
pub const DEFAULT_DEPTH: u64 = 2;
/// Deepest `depth` accepted.
pub const MAX_DEPTH: u64 = 10;
/// Entries shown at most.
pub const MAX_ENTRIES: usize = 500;
/// Names listed in a note before "and N more".
const MAX_NAMED: usize = 12;

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/list_dir.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to list (default: working directory)"},
                "depth": {"type": "integer", "description": "Levels to list (default 2, max 10); 1 lists only the directory's own entries", "minimum": 1}
            }
        }),
        permission: Some(Category::Read),
        present,
        preview: Some(Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, cwd: &Path) -> Presentation {
    let root = args.get("path").and_then(Value::as_str).map(|p| resolve_path(cwd, p));
    let title = match &root {
        Some(root) if root != cwd => format!("List {}", root.display()),
        _ => "List the working directory".to_string(),
    };
    let root = root.unwrap_or_else(|| cwd.to_path_buf());
    Presentation {
        title,
        kind: Kind::Read,
        patterns: vec![root.to_string_lossy().into_owned()],
        ..Presentation::default()
    }
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum What {
    Dir,
    File(u64),
    Link(String),
    Special(&'static str),
}

fn what(entry: &std::fs::DirEntry, kind: FileType) -> What {
    if kind.is_dir() {
        What::Dir
    } else if kind.is_symlink() {
        What::Link(std::fs::read_link(entry.path()).map(|t| t.display().to_string()).unwrap_or_default())
    } else if kind.is_file() {
        What::File(entry.metadata().map(|m| m.len()).unwrap_or(0))
    } else if kind.is_fifo() {
        What::Special("FIFO")
    } else if kind.is_socket() {
        What::Special("socket")
    } else if kind.is_char_device() || kind.is_block_device() {
        What::Special("device")
    } else {
        What::Special("special file")
    }
}

/// One listed entry.
#[derive(Debug)]
struct Node {
    name: String,
    what: What,
    depth: usize,
    children: Vec<usize>,
    /// A directory at the depth limit: how many entries it holds (not listed).
    unexpanded: Option<usize>,
    /// A directory whose entries the entry cap cut (how many were left out).
    cut: usize,
}

/// The listing before it is rendered.
#[derive(Debug, Default)]
struct Listing {
    nodes: Vec<Node>,
    /// Children of the root.
    top: Vec<usize>,
    /// Ignored entries (relative path, directory?).
    ignored: Vec<(String, bool)>,
    secret_files: usize,
    /// Entries the cap left out, all directories together.
    cut_total: usize,
    /// Directories that were not read at all because the cap was reached.
    unread: Vec<String>,
}

/// Human-readable size.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The entries of `dir` that are listed (sorted: directories first, then by name), after the ignore stack.
fn entries(
    dir: &Path,
    above: &Level,
    is_root: bool,
    listing: &mut Listing,
    root: &Path,
) -> (Vec<(String, What)>, Level) {
    let Ok(read) = std::fs::read_dir(dir) else { return (Vec::new(), above.clone()) };
    let mut all = Vec::new();
    let mut present = Present::default();
    for entry in read.flatten() {
        present.note(&entry.file_name());
        all.push(entry);
    }
    let level = if is_root { above.clone() } else { above.enter(dir, present) };
    let mut kept = Vec::new();
    for entry in all {
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap_or(&path).display().to_string();
        if level.ignores(&path, kind.is_dir()) {
            listing.ignored.push((rel, kind.is_dir()));
            continue;
        }
        if !kind.is_dir() && is_secret_path(&path) {
            listing.secret_files += 1;
            continue;
        }
        kept.push((entry.file_name().to_string_lossy().into_owned(), what(&entry, kind)));
    }
    kept.sort_by(|a, b| (a.1 != What::Dir).cmp(&(b.1 != What::Dir)).then_with(|| a.0.cmp(&b.0)));
    (kept, level)
}

/// List `root` breadth first to `depth` levels, at most [`MAX_ENTRIES`] entries.
fn list(root: &Path, depth: usize, stack: &Stack) -> Listing {
    let mut listing = Listing::default();
    // (directory, its node (None: the root), its depth, the rules above it)
    let mut queue: VecDeque<(PathBuf, Option<usize>, usize, Level)> = VecDeque::new();
    queue.push_back((root.to_path_buf(), None, 1, stack.level(root)));
    while let Some((dir, node, level_depth, above)) = queue.pop_front() {
        if listing.nodes.len() >= MAX_ENTRIES {
            listing.unread.push(dir.strip_prefix(root).unwrap_or(&dir).display().to_string());
            continue;
        }
        let (kept, level) = entries(&dir, &above, node.is_none(), &mut listing, root);
        for (name, what) in kept {
            if listing.nodes.len() >= MAX_ENTRIES {
                listing.cut_total += 1;
                if let Some(parent) = node {
                    listing.nodes[parent].cut += 1;
                }
                continue;
            }
            let index = listing.nodes.len();
            let is_dir = what == What::Dir;
            let path = dir.join(&name);
            let unexpanded = (is_dir && level_depth >= depth)
                .then(|| std::fs::read_dir(&path).map(|r| r.count()).unwrap_or(0));
            listing.nodes.push(Node {
                name,
                what,
                depth: level_depth,
                children: Vec::new(),
                unexpanded,
                cut: 0,
            });
            match node {
                Some(parent) => listing.nodes[parent].children.push(index),
                None => listing.top.push(index),
            }
            if is_dir && level_depth < depth && !regular::is_virtual(&path) {
                queue.push_back((path, Some(index), level_depth + 1, level.clone()));
            }
        }
    }
    listing
}

fn render_node(listing: &Listing, index: usize, out: &mut Vec<String>) {
    let node = &listing.nodes[index];
    let indent = "  ".repeat(node.depth);
    let line = match &node.what {
        What::Dir => match node.unexpanded {
            Some(0) => format!("{indent}{}/ (empty)", node.name),
            Some(n) => {
                format!("{indent}{}/ ({}, not listed: deeper than depth)", node.name, count(n, "entry"))
            }
            None => format!("{indent}{}/", node.name),
        },
        What::File(bytes) => format!("{indent}{} ({})", node.name, size(*bytes)),
        What::Link(target) => format!("{indent}{} -> {target} (symbolic link)", node.name),
        What::Special(kind) => format!("{indent}{} ({kind})", node.name),
    };
    out.push(line);
    for child in &node.children {
        render_node(listing, *child, out);
    }
    if node.cut > 0 {
        out.push(format!("{indent}  ... {} not shown (entry cap)", count(node.cut, "more entry")));
    }
}

/// `n` things, singular or plural (`1 entry`, `2 entries`, `3 files`).
fn count(n: usize, what: &str) -> String {
    match (n, what.strip_suffix('y')) {
        (1, _) => format!("1 {what}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        (_, None) => format!("{n} {what}s"),
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

fn render(root: &Path, listing: &Listing) -> String {
    let mut out = vec![format!("{}/", root.display().to_string().trim_end_matches('/'))];
    for index in &listing.top {
        render_node(listing, *index, &mut out);
    }
    if listing.nodes.is_empty() {
        out.push("  (no entries)".into());
    }
    let dirs = listing.nodes.iter().filter(|n| n.what == What::Dir).count();
    let mut notes = vec![format!(
        "{} and {} shown.",
        count(dirs, "directory"),
        count(listing.nodes.len() - dirs, "other entry")
    )];
    if listing.cut_total > 0 || !listing.unread.is_empty() {
        let mut cut =
            format!("Cut at {MAX_ENTRIES} entries: {} not shown", count(listing.cut_total, "more entry"));
        if !listing.unread.is_empty() {
            cut.push_str(&format!(", and these directories were not listed: {}", named(&listing.unread)));
        }
        cut.push_str(". List a subdirectory, or use a smaller depth.");
        notes.push(cut);
    }
    if !listing.ignored.is_empty() {
        let mut names: Vec<String> = listing
            .ignored
            .iter()
            .map(|(rel, dir)| if *dir { format!("{rel}/") } else { rel.clone() })
            .collect();
        names.sort();
        notes.push(format!(
            "Left out by ignore rules (VCS, defaults, .gitignore, .ignore, .tinycodeignore): {}.",
            named(&names)
        ));
    }
    if listing.secret_files > 0 {
        notes.push(format!(
            "{} (.env, keys, credentials) not listed. To read one, name it to read; the user will be asked.",
            count(listing.secret_files, "secret file")
        ));
    }
    format!("{}\n\n({})", out.join("\n"), notes.join(" "))
}

/// Resolve the directory and decide what listing it asks (outside the workspace).
async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let root = match arg_opt_str(&args, "path")? {
        Some(p) if !p.trim().is_empty() => ctx.resolve(p.trim()),
        _ => ctx.directory.clone(),
    };
    let access = access::decide(&ctx, &root, false)?;
    let mut presentation = present(&args, &ctx.directory);
    access.present(&mut presentation);
    Ok(Preview { presentation, plan: Arc::new(Target(access.path)), category: access.category })
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let depth = match arg_opt_u64(&args, "depth")? {
        Some(0) => return Err(ToolError::retry("depth must be at least 1")),
        Some(n) if n > MAX_DEPTH => {
            return Err(ToolError::retry(format!("depth must be at most {MAX_DEPTH}, got {n}")));
        }
        Some(n) => n as usize,
        None => DEFAULT_DEPTH as usize,
    };
    let root = ctx.plan::<Target>()?.0.clone();
    if regular::is_virtual(&root) {
        return Err(ToolError::retry(format!(
            "{} is in a virtual file system ({}), which list_dir does not list.",
            root.display(),
            regular::VIRTUAL_DIRS.join(", ")
        )));
    }
    match tokio::fs::metadata(&root).await {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(ToolError::retry(format!(
                "{} is not a directory. Use read to read a file.",
                root.display()
            )));
        }
        Err(_) => return Err(ToolError::retry(format!("Directory not found: {}", root.display()))),
    }
    let stack = ctx.files.ignores();
    let walk_root = root.clone();
    let listing = tokio::task::spawn_blocking(move || list(&walk_root, depth, &stack))
        .await
        .map_err(|e| ToolError::execution(format!("listing failed: {e}")))?;
    Ok(ToolOutput {
        output: render(&root, &listing),
        metadata: json!({
            "path": root,
            "entries": listing.nodes.len(),
            "cut": listing.cut_total,
            "ignored": listing.ignored.len(),
        }),
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, rel: &str, bytes: usize) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x".repeat(bytes)).unwrap();
    }

    #[test]
    fn a_tree_shows_types_and_sizes_directories_first_and_names_what_was_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(root, "Cargo.toml", 10);
        touch(root, "src/lib.rs", 2_048);
        touch(root, "src/bin/main.rs", 5);
        touch(root, "node_modules/x/index.js", 1);
        touch(root, "target/debug/app", 1);
        touch(root, ".env", 1);
        touch(root, "notes.log", 1);
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        std::os::unix::fs::symlink("src/lib.rs", root.join("link.rs")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let out = render(root, &list(root, 2, &Stack::plain(root)));
        assert_eq!(
            out,
            format!(
                "{}/\n  src/\n    bin/ (1 entry, not listed: deeper than depth)\n    lib.rs (2.0 KB)\n  .gitignore (6 B)\n  \
                 Cargo.toml (10 B)\n  link.rs -> src/lib.rs (symbolic link)\n\n(2 directories and 4 other entries shown. \
                 Left out by ignore rules (VCS, defaults, .gitignore, .ignore, .tinycodeignore): .git/, node_modules/, \
                 notes.log, target/. 1 secret file (.env, keys, credentials) not listed. To read one, name it to read; \
                 the user will be asked.)",
                root.display()
            )
        );
    }

    #[test]
    fn the_entry_cap_keeps_shallow_levels_and_names_the_cut_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for i in 0..300 {
            touch(root, &format!("a/f{i:03}"), 1);
            touch(root, &format!("b/f{i:03}"), 1);
        }
        touch(root, "c/deep/x", 1);
        let listing = list(root, 3, &Stack::plain(root));
        assert_eq!(listing.nodes.len(), MAX_ENTRIES);
        let out = render(root, &listing);
        assert!(out.contains("  a/\n    f000 (1 B)\n"), "{out}");
        assert!(out.contains("    ... 103 more entries not shown (entry cap)"), "{out}");
        assert!(
            out.ends_with(
                "(3 directories and 497 other entries shown. Cut at 500 entries: 103 more entries not shown, and these directories were not listed: c. List a subdirectory, or use a smaller depth.)"
            ),
            "{out}"
        );
    }

    #[test]
    fn sizes_are_human_readable() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1536), "1.5 KB");
        assert_eq!(size(5 * 1024 * 1024), "5.0 MB");
    }
}
