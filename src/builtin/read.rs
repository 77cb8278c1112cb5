//! The `read` tool (seed 000 §8.3): numbered lines with offset/limit, a 2,000-char line clamp, binary
//! detection, images as data URIs, and a did-you-mean on a missing file. Regular files only, read with a byte
//! cap; a secret file or a file outside the workspace asks first (`access`).
//!
//! Owns how a file is shown to the model. Must not write anything.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::{Value, json};

use super::access::{self, Target};
use crate::display::{Kind, Location, Presentation};
use crate::permission::Category;
use crate::tool::{
    Context, Def, Preview, ToolError, ToolOutput, arg_opt_u64, arg_str, resolve_path, truncate,
};
use crate::workspace::{files, regular};

pub const ID: &str = "read";
/// Lines returned when `limit` is not given.
pub const DEFAULT_READ_LIMIT: usize = 2_000;
/// Longer lines are cut and end with `...`.
pub const MAX_LINE_LENGTH: usize = 2_000;
/// Bytes inspected for binary detection.
pub const BINARY_CHECK_SIZE: usize = 8_192;
/// Fraction of non-text bytes above which a file is binary.
pub const BINARY_THRESHOLD: f64 = 0.30;
/// Images larger than this are refused rather than inlined.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/read.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to read"},
                "offset": {"type": "integer", "description": "Line offset to start from (0-based)", "minimum": 0},
                "limit": {"type": "integer", "description": "Maximum number of lines to read (default 2000)", "minimum": 1}
            },
            "required": ["file_path"]
        }),
        permission: Some(Category::Read),
        present,
        preview: Some(std::sync::Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: std::sync::Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, cwd: &Path) -> Presentation {
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

/// Siblings of a missing file that share at least three leading characters with its name.
pub fn suggest_similar(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let wanted: Vec<char> = name.to_lowercase().chars().collect();
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let candidate: Vec<char> = e.file_name().to_string_lossy().to_lowercase().chars().collect();
            let common = candidate.iter().zip(&wanted).take_while(|(a, b)| a == b).count();
            common >= 3
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found.truncate(5);
    found
}

fn not_found(path: &Path) -> ToolError {
    let suggestions = suggest_similar(path);
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
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    if total == 0 {
        return Ok(("(empty file)".into(), true));
    }
    if offset >= total {
        return Err(ToolError::retry(format!(
            "offset {offset} is beyond the end of the file ({total} lines); use an offset below {total}"
        )));
    }
    let mut out = String::new();
    let mut next = offset;
    for (i, line) in lines.iter().enumerate().skip(offset).take(limit) {
        let clamped = if line.chars().count() > MAX_LINE_LENGTH {
            let cut: String = line.chars().take(MAX_LINE_LENGTH).collect();
            format!("{cut}...")
        } else {
            (*line).to_string()
        };
        let entry = format!("{}\t{clamped}\n", i + 1);
        if out.len() + entry.len() > truncate::MAX_BYTES {
            out.push_str(&format!(
                "\n(Output capped at {} KB. Use offset={i} to continue reading from line {}.)",
                truncate::MAX_BYTES / 1024,
                i + 1
            ));
            return Ok((out, false));
        }
        out.push_str(&entry);
        next = i + 1;
    }
    if next < total {
        out.push_str(&format!("\n(File has {total} lines. Use offset={next} to read beyond line {next}.)"));
        return Ok((out, false));
    }
    out.push_str(&format!("\n(End of file: {total} lines)"));
    let clamped = lines.iter().any(|l| l.chars().count() > MAX_LINE_LENGTH);
    Ok((out, offset == 0 && !clamped))
}

/// Resolve the path and decide what reading it asks (a secret file, a file outside the workspace).
async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let given = ctx.resolve(arg_str(&args, "file_path")?);
    let access = access::decide(&ctx, &given, true)?;
    let mut presentation = present(&args, &ctx.directory);
    access.present(&mut presentation);
    Ok(Preview { presentation, plan: std::sync::Arc::new(Target(access.path)), category: access.category })
}

fn read_error(path: &Path, e: std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => not_found(path),
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

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let path = ctx.plan::<Target>()?.0.clone();
    let offset = arg_opt_u64(&args, "offset")?.unwrap_or(0) as usize;
    let limit = match arg_opt_u64(&args, "limit")? {
        Some(0) => return Err(ToolError::retry("`limit` must be at least 1")),
        Some(n) => n as usize,
        None => DEFAULT_READ_LIMIT,
    };
    // A stat never blocks, even on a FIFO; nothing is opened before the type is known.
    let meta = tokio::fs::metadata(&path).await.map_err(|e| read_error(&path, e))?;
    if meta.is_dir() {
        return Err(ToolError::retry(format!(
            "{} is a directory, not a file. Use glob to list its files.",
            path.display()
        )));
    }
    if let Some(kind) = regular::irregular_kind(&meta) {
        return Err(ToolError::retry(format!(
            "{} is {kind}, not a regular file. Only regular files can be read.",
            path.display()
        )));
    }
    let location =
        vec![Location::at_line(&path, u32::try_from(offset.saturating_add(1)).unwrap_or(u32::MAX))];
    if let Some(mime) = image_mime(&path) {
        return image(&path, mime, location).await;
    }
    let text = match ctx.files.read_text(&path).await? {
        Some(text) => text,
        None => return Err(not_found(&path)),
    };
    if is_binary(text.as_bytes()) {
        return Err(ToolError::retry(format!(
            "Cannot read binary file: {} ({} bytes)",
            path.display(),
            meta.len()
        )));
    }
    let (output, full) = format_lines(&text, offset, limit)?;
    ctx.files.record_read(&path, &text, full);
    Ok(ToolOutput {
        output,
        locations: location,
        metadata: json!({"path": path, "offset": offset, "limit": limit}),
        bounded: true,
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_offset_and_limit_are_presented_without_overflowing() {
        let shown =
            present(&json!({"file_path": "a", "offset": u64::MAX, "limit": u64::MAX}), Path::new("/w"));
        assert_eq!(shown.title, format!("Read a (lines {}-{})", u64::MAX, u64::MAX));
        let shown = present(&json!({"file_path": "a", "offset": u64::MAX}), Path::new("/w"));
        assert_eq!(shown.title, format!("Read a (from line {})", u64::MAX));
    }

    #[test]
    fn lines_are_numbered_from_one_and_windowed_by_offset_and_limit() {
        let text = "a\nb\nc\nd\n";
        assert_eq!(
            format_lines(text, 0, 2000).unwrap(),
            ("1\ta\n2\tb\n3\tc\n4\td\n\n(End of file: 4 lines)".to_string(), true)
        );
        assert_eq!(
            format_lines(text, 1, 2).unwrap(),
            ("2\tb\n3\tc\n\n(File has 4 lines. Use offset=3 to read beyond line 3.)".to_string(), false)
        );
        assert!(!format_lines(text, 1, 10).unwrap().1, "a read from an offset is partial");
    }

    #[test]
    fn long_lines_are_clamped_to_two_thousand_characters() {
        let line = "é".repeat(2_500);
        let (out, full) = format_lines(&line, 0, 10).unwrap();
        assert_eq!(out, format!("1\t{}...\n\n(End of file: 1 lines)", "é".repeat(2_000)));
        assert!(!full, "a clamped line was not seen in full");
    }

    #[test]
    fn an_offset_past_the_end_is_an_error_the_model_can_fix() {
        assert_eq!(
            format_lines("a\nb\n", 5, 10).unwrap_err(),
            ToolError::retry("offset 5 is beyond the end of the file (2 lines); use an offset below 2")
        );
    }

    #[test]
    fn output_is_capped_at_the_byte_limit_with_a_continuation_hint() {
        let text: String = (0..1_900).map(|i| format!("{i:0>60}\n")).collect();
        let (out, full) = format_lines(&text, 0, 2_000).unwrap();
        assert!(!full);
        assert!(out.len() <= truncate::MAX_BYTES + 100);
        let last = out.lines().last().unwrap();
        assert!(last.starts_with("(Output capped at 50 KB. Use offset="), "{last}");
    }

    #[test]
    fn binary_detection_weighs_nul_bytes_heavily() {
        assert!(!is_binary(b"plain text\n\twith tabs\r\n"));
        assert!(!is_binary(b""));
        let mut some_nul = vec![b'a'; 100];
        some_nul[..3].fill(0); // 30 weighted of 100
        assert!(!is_binary(&some_nul));
        some_nul[3] = 0; // 40 weighted
        assert!(is_binary(&some_nul));
        assert!(is_binary(&[1u8, 2, 3, 4, 5]));
    }

    #[test]
    fn missing_files_suggest_siblings_sharing_a_three_character_prefix() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["config.toml", "confirm.rs", "main.rs"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let found = suggest_similar(&dir.path().join("conf.toml"));
        assert_eq!(found, vec![dir.path().join("config.toml"), dir.path().join("confirm.rs")]);
        assert!(suggest_similar(&dir.path().join("zz.rs")).is_empty());
    }
}
