//! The `read` tool (seed 000 §8.3, seed 003, seed 004): numbered lines with offset/limit (tagged `N:hh|` in
//! hashline mode), a 2,000-char line clamp, binary detection, images as data URIs, notebooks as cells with
//! outputs, PDFs described with a hint, UTF-16 text decoded (`workspace::encoding`), and a did-you-mean on a
//! missing file that leaves out what the ignore stack hides. Several files in one call through `paths` (or a
//! glob in `file_path`), see `many`. Regular files only, read with a byte cap; a secret file or a file outside
//! the workspace asks first (`access`).
//!
//! Owns how a file is shown to the model. Must not write anything.

pub mod formats;
pub mod lines;
mod many;
pub mod stream;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};

use super::access::{self, Target};
use crate::config::EditMode;
use crate::display::{Kind, Location, Presentation};
use crate::permission::Category;
use crate::tool::{
    Context, Def, Preview, ToolError, ToolOutput, arg_opt_str, arg_opt_u64, resolve_path, truncate,
};
use crate::workspace::encoding::Encoding;
use crate::workspace::ignore_rules::{Stack, VCS_DIRS};
use crate::workspace::{files, regular};
use lines::Labels;

pub use lines::MAX_LINE_LENGTH;

pub const ID: &str = "read";
/// Lines returned when `limit` is not given.
pub const DEFAULT_READ_LIMIT: usize = 2_000;
/// Bytes inspected for binary detection.
pub const BINARY_CHECK_SIZE: usize = 8_192;
/// Fraction of non-text bytes above which a file is binary.
pub const BINARY_THRESHOLD: f64 = 0.30;
/// UTF-8 files larger than this are read from disk in chunks, holding only the window asked for (`stream`).
pub const STREAM_ABOVE: u64 = 1024 * 1024;
/// The largest text file `read` scans (it counts every line, so a window near the end costs one pass).
pub const MAX_STREAMED_BYTES: u64 = 256 * 1024 * 1024;
/// Images larger than this are refused rather than inlined.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/read.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to read (or a glob pattern to read every matching file)"},
                "offset": {"type": "integer", "description": "Line offset to start from (0-based)", "minimum": 0},
                "limit": {"type": "integer", "description": "Maximum number of lines to read (default 2000)", "minimum": 1},
                "paths": {"type": "array", "items": {"type": "string"}, "description": "Several files (paths or glob patterns) to read in one call, instead of file_path"}
            }
        }),
        permission: Some(Category::Read),
        present,
        preview: Some(Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, cwd: &Path) -> Presentation {
    if let Some(paths) = args.get("paths").and_then(Value::as_array).filter(|p| !p.is_empty()) {
        let names: Vec<&str> = paths.iter().filter_map(Value::as_str).collect();
        return Presentation {
            title: format!("Read {}", names.join(", ")),
            kind: Kind::Read,
            patterns: names.iter().map(|p| resolve_path(cwd, p).to_string_lossy().into_owned()).collect(),
            ..Presentation::default()
        };
    }
    let Some(raw) = args.get("file_path").and_then(Value::as_str) else {
        return Presentation { title: "Read file".into(), kind: Kind::Read, ..Presentation::default() };
    };
    let path = resolve_path(cwd, raw);
    let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0);
    let limit = args.get("limit").and_then(Value::as_u64);
    let shown = path.strip_prefix(cwd).map(Path::to_path_buf).unwrap_or_else(|_| path.clone());
    let title = match (offset, limit) {
        (0, None) => format!("Read {}", shown.display()),
        (o, Some(l)) => {
            format!("Read {} (lines {}-{})", shown.display(), o.saturating_add(1), o.saturating_add(l))
        }
        (o, None) => format!("Read {} (from line {})", shown.display(), o.saturating_add(1)),
    };
    let line = u32::try_from(offset.saturating_add(1)).unwrap_or(u32::MAX);
    Presentation {
        title,
        kind: Kind::Read,
        locations: vec![Location::at_line(&path, line)],
        patterns: vec![path.to_string_lossy().into_owned()],
        content: Vec::new(),
    }
}

/// Seed 000 binary detection over the first [`BINARY_CHECK_SIZE`] bytes: NUL counts as 10 non-text bytes.
pub fn is_binary(bytes: &[u8]) -> bool {
    let sample = &bytes[..bytes.len().min(BINARY_CHECK_SIZE)];
    if sample.is_empty() {
        return false;
    }
    let non_text: usize = sample
        .iter()
        .map(|&b| match b {
            0 => 10,
            b'\t' | b'\n' | b'\r' | 0x0c | 0x08 | 0x1b => 0,
            b if b < 0x20 || b == 0x7f => 1,
            _ => 0,
        })
        .sum();
    non_text as f64 / sample.len() as f64 > BINARY_THRESHOLD
}

fn image_mime(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// Siblings of a missing file that share at least three leading characters with its name, leaving out what
/// the ignore stack hides (dependency folders, ignored files, version control).
pub fn suggest_similar(path: &Path, stack: &Stack) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let wanted: Vec<char> = name.to_lowercase().chars().collect();
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let level = stack.level(dir);
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let candidate: Vec<char> = e.file_name().to_string_lossy().to_lowercase().chars().collect();
            let common = candidate.iter().zip(&wanted).take_while(|(a, b)| a == b).count();
            common >= 3
        })
        .filter(|e| {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            !VCS_DIRS.iter().any(|v| e.file_name() == *v) && !level.ignores(&e.path(), is_dir)
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found.truncate(5);
    found
}

fn not_found(path: &Path, stack: &Stack) -> ToolError {
    let suggestions = suggest_similar(path, stack);
    if suggestions.is_empty() {
        return ToolError::retry(format!("File not found: {}", path.display()));
    }
    let list: Vec<String> = suggestions.iter().map(|p| p.display().to_string()).collect();
    ToolError::retry(format!(
        "File not found: {}\n\nDid you mean one of these?\n{}",
        path.display(),
        list.join("\n")
    ))
}

/// Numbered lines `[offset, offset+limit)`, bounded by line length and by [`truncate::MAX_BYTES`].
/// The flag says whether the whole file was shown.
pub fn format_lines(text: &str, offset: usize, limit: usize) -> Result<(String, bool), ToolError> {
    lines::window(text, offset, limit, truncate::MAX_BYTES, Labels::Numbers)
}

/// What a call reads: one file, or several (`paths`, or a glob in `file_path`).
enum Plan {
    One(Target),
    Many(many::Targets),
}

/// Whether `raw` is a glob pattern rather than a file that exists.
fn is_glob(ctx: &Context, raw: &str) -> bool {
    raw.contains(['*', '?', '[', '{']) && !ctx.resolve(raw).exists()
}

/// Resolve the path and decide what reading it asks (a secret file, a file outside the workspace); for several
/// files, resolve each and expand the globs.
async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let paths = many::patterns(&args)?;
    let file_path = arg_opt_str(&args, "file_path")?.filter(|p| !p.trim().is_empty());
    let patterns = match (paths, file_path) {
        (Some(_), Some(_)) => {
            return Err(ToolError::retry("Give either file_path (one file) or paths (several), not both."));
        }
        (Some(paths), None) => paths,
        (None, Some(raw)) if is_glob(&ctx, raw) => vec![raw.to_string()],
        (None, Some(raw)) => {
            let given = ctx.resolve(raw);
            let access = access::decide(&ctx, &given, true)?;
            let mut presentation = present(&args, &ctx.directory);
            access.present(&mut presentation);
            let plan = Arc::new(Plan::One(Target(access.path)));
            return Ok(Preview { presentation, plan, category: access.category });
        }
        (None, None) => {
            let sent: Vec<&str> =
                args.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
            return Err(ToolError::retry(format!(
                "Tool read needs file_path: string (the file to read) or paths: array of string (several files or \
                 glob patterns); you sent keys [{}]. Resend the call with one of them.",
                sent.join(", ")
            )));
        }
    };
    let targets = many::targets(&ctx, &patterns).await?;
    let mut presentation = present(&json!({"paths": patterns}), &ctx.directory);
    presentation.title = format!("Read {}", patterns.join(", "));
    Ok(Preview { presentation, plan: Arc::new(Plan::Many(targets)), category: None })
}

fn read_error(path: &Path, e: std::io::Error, stack: &Stack) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => not_found(path, stack),
        _ => ToolError::execution(format!("cannot read {}: {e}", path.display())),
    }
}

/// The image at `path` as a data URI output.
async fn image(path: &Path, mime: &str, location: Vec<Location>) -> Result<ToolOutput, ToolError> {
    let owned = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || regular::read(&owned, MAX_IMAGE_BYTES))
        .await
        .map_err(|e| ToolError::execution(e.to_string()))?
        .map_err(|e| files::open_error(path, e))?;
    if !read.complete {
        return Err(ToolError::retry(format!(
            "Image {} is over {MAX_IMAGE_BYTES} bytes; larger images are not inlined.",
            path.display()
        )));
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&read.bytes);
    Ok(ToolOutput {
        output: format!("data:{mime};base64,{data}"),
        locations: location,
        metadata: json!({"path": path, "mimeType": mime, "bytes": read.bytes.len()}),
        bounded: true,
        ..ToolOutput::default()
    })
}

/// What reading one file shows.
enum Shown {
    /// Lines of a text (the text itself is kept for the read ledger).
    Text {
        output: String,
        full: bool,
        text: String,
    },
    /// Lines of a large text read in chunks, with the ledger hash of the whole text (not held) when it is
    /// small enough to edit.
    Streamed {
        output: String,
        full: bool,
        hash: Option<u64>,
    },
    /// A notebook rendered as cells.
    Notebook {
        output: String,
        text: String,
    },
    Image {
        mime: &'static str,
        bytes: u64,
    },
    /// Said instead of the content (a PDF).
    Described(String),
}

/// The window of lines asked for.
#[derive(Debug, Clone, Copy)]
struct Window {
    offset: usize,
    limit: Option<usize>,
    budget: usize,
    /// Whether a large file may be read in chunks (a many-file read shows whole texts only).
    stream: bool,
}

/// Read one regular file and decide how to show it.
async fn show(ctx: &Context, path: &Path, window: Window) -> Result<Shown, ToolError> {
    let stack = ctx.files.ignores();
    // A stat never blocks, even on a FIFO; nothing is opened before the type is known.
    let meta = tokio::fs::metadata(path).await.map_err(|e| read_error(path, e, &stack))?;
    if meta.is_dir() {
        return Err(ToolError::retry(format!(
            "{} is a directory, not a file. Use list_dir to see what it holds, or glob to find files in it.",
            path.display()
        )));
    }
    if let Some(kind) = regular::irregular_kind(&meta) {
        return Err(ToolError::retry(format!(
            "{} is {kind}, not a regular file. Only regular files can be read.",
            path.display()
        )));
    }
    if let Some(mime) = image_mime(path) {
        return Ok(Shown::Image { mime, bytes: meta.len() });
    }
    let owned = path.to_path_buf();
    let head =
        tokio::task::spawn_blocking(move || regular::read(&owned, 8).map(|r| r.bytes).unwrap_or_default())
            .await
            .unwrap_or_default();
    if formats::is_pdf(path, &head) {
        return Ok(Shown::Described(formats::pdf(path, meta.len())));
    }
    let is_notebook = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("ipynb"));
    let large = meta.len() > STREAM_ABOVE && !is_notebook && Encoding::detect(&head) == Encoding::Utf8;
    // The editor's buffer wins up to the size a whole read allows; above it, the disk is read in chunks.
    if large && window.stream && (!ctx.files.reads_through_editor() || meta.len() > files::MAX_TEXT_BYTES) {
        return streamed(ctx, path, window, meta.len()).await;
    }
    let Some(text) = ctx.files.read_text(path).await? else { return Err(not_found(path, &stack)) };
    if is_binary(text.as_bytes()) {
        return Err(ToolError::retry(format!(
            "Cannot read binary file: {} ({} bytes)",
            path.display(),
            meta.len()
        )));
    }
    if is_notebook
        && window.offset == 0
        && window.limit.is_none()
        && let Some(cells) = formats::notebook(&text)
    {
        // Keep the first cells when the notebook is too long.
        let budget = window.budget.saturating_sub(200);
        let mut output =
            truncate::truncate_with(&cells, truncate::Direction::Tail, usize::MAX, budget).unwrap_or(cells);
        output.push_str(
            "\n\n(A notebook, shown as its cells. It is stored as JSON: to edit it, read its raw lines with offset/limit and edit those.)",
        );
        return Ok(Shown::Notebook { output, text });
    }
    let labels = if ctx.edit_mode == EditMode::Hashline { Labels::Hashes } else { Labels::Numbers };
    let limit = window.limit.unwrap_or(DEFAULT_READ_LIMIT);
    let (output, full) = lines::window(&text, window.offset, limit, window.budget, labels)?;
    Ok(Shown::Text { output, full, text })
}

/// Read the window of a large UTF-8 file in chunks, without holding the file.
async fn streamed(ctx: &Context, path: &Path, window: Window, size: u64) -> Result<Shown, ToolError> {
    if size > MAX_STREAMED_BYTES {
        return Err(ToolError::retry(format!(
            "{} is larger than {} MB, too large to read. Use grep to find the lines you need.",
            path.display(),
            MAX_STREAMED_BYTES / (1024 * 1024)
        )));
    }
    let labels = if ctx.edit_mode == EditMode::Hashline { Labels::Hashes } else { Labels::Numbers };
    let limit = window.limit.unwrap_or(DEFAULT_READ_LIMIT);
    let owned = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || {
        let (file, _) = regular::open(&owned).map_err(|e| files::open_error(&owned, e))?;
        // Never more than the cap, so a file that grows meanwhile cannot keep the read going.
        let file = std::io::Read::take(file, MAX_STREAMED_BYTES);
        // Only a text an edit could take needs its hash in the read ledger.
        let hashed = size <= files::MAX_TEXT_BYTES;
        let ask = stream::Ask {
            offset: window.offset,
            limit,
            budget: window.budget,
            labels,
            chunk: stream::CHUNK,
            hashed,
        };
        stream::window(file, ask).map_err(|e| match e {
            stream::StreamError::Io(e) => {
                ToolError::execution(format!("cannot read {}: {e}", owned.display()))
            }
            stream::StreamError::Window(e) => e,
        })
    })
    .await
    .map_err(|e| ToolError::execution(e.to_string()))??;
    match read {
        stream::Streamed::Binary => {
            Err(ToolError::retry(format!("Cannot read binary file: {} ({size} bytes)", path.display())))
        }
        stream::Streamed::Text { output, full, hash } => Ok(Shown::Streamed { output, full, hash }),
    }
}

fn limit_arg(args: &Value) -> Result<Option<usize>, ToolError> {
    match arg_opt_u64(args, "limit")? {
        Some(0) => Err(ToolError::retry("`limit` must be at least 1")),
        other => Ok(other.map(|n| n as usize)),
    }
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let plan = ctx.plan::<Plan>()?;
    let path = match &*plan {
        Plan::Many(targets) => return many::execute(&ctx, targets).await,
        Plan::One(Target(path)) => path.clone(),
    };
    let offset = arg_opt_u64(&args, "offset")?.unwrap_or(0) as usize;
    let limit = limit_arg(&args)?;
    let location =
        vec![Location::at_line(&path, u32::try_from(offset.saturating_add(1)).unwrap_or(u32::MAX))];
    let window = Window { offset, limit, budget: truncate::MAX_BYTES, stream: true };
    let output = match show(&ctx, &path, window).await? {
        Shown::Image { mime, .. } => return image(&path, mime, location).await,
        Shown::Described(text) => text,
        Shown::Notebook { output, text } => {
            ctx.files.record_read(&path, &text, false);
            output
        }
        Shown::Text { output, full, text } => {
            ctx.files.record_read(&path, &text, full);
            output
        }
        Shown::Streamed { output, full, hash } => {
            if let Some(hash) = hash {
                ctx.files.record_read_hash(&path, hash, full);
            }
            output
        }
    };
    Ok(ToolOutput {
        output,
        locations: location,
        metadata: json!({"path": path, "offset": offset, "limit": limit.unwrap_or(DEFAULT_READ_LIMIT)}),
        bounded: true,
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests;
