//! The Codex `*** Begin Patch` format: Add / Delete / Update File hunks, `*** Move to:`, `@@` context markers,
//! `*** End of File`. Errors carry the 1-based line number of the offending line.
//!
//! Owns parsing only. `Mode::Lenient` (what the tool uses) also accepts a `<<EOF` heredoc wrapper.

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";
const ENVIRONMENT: &str = "*** Environment ID:";

/// How strictly the patch boundaries are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The trimmed text must start with `*** Begin Patch` and end with `*** End Patch`.
    Strict,
    /// Strict, or the same wrapped in a `<<EOF` / `<<'EOF'` / `<<"EOF"` heredoc.
    Lenient,
    /// Line by line as text arrives: hunk errors are reported before a missing end marker.
    Streaming,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The `@@ <context>` line, if any.
    pub change_context: Option<String>,
    pub old_lines: Vec<String>,
    pub new_lines: Vec<String>,
    /// (index in old_lines, index in new_lines) of each context line.
    pub context_line_indices: Vec<(usize, usize)>,
    pub is_end_of_file: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hunk {
    Add { path: String, contents: String },
    Delete { path: String },
    Update { path: String, move_path: Option<String>, chunks: Vec<Chunk> },
}

impl Hunk {
    pub fn path(&self) -> &str {
        match self {
            Hunk::Add { path, .. } | Hunk::Delete { path } | Hunk::Update { path, .. } => path,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Patch {
    pub hunks: Vec<Hunk>,
    pub environment_id: Option<String>,
}

/// A patch that cannot be parsed. Goes back to the model as a retryable tool error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    InvalidPatch(String),
    InvalidHunk { message: String, line_number: usize },
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::InvalidPatch(message) => write!(f, "Invalid patch: {message}"),
            ParseError::InvalidHunk { message, line_number } => {
                write!(f, "Invalid patch hunk on line {line_number}: {message}")
            }
        }
    }
}

fn hunk_error(message: String, line_number: usize) -> ParseError {
    ParseError::InvalidHunk { message, line_number }
}

fn invalid(message: &str) -> ParseError {
    ParseError::InvalidPatch(message.to_string())
}

/// Split into lines, stripping one `\r` before each `\n` (and at the very end).
fn split_lines(text: &str) -> Vec<&str> {
    text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect()
}

/// Parse a patch.
pub fn parse(text: &str, mode: Mode) -> Result<Patch, ParseError> {
    match mode {
        Mode::Streaming => parse_streaming(text),
        Mode::Strict => parse_strict(&split_lines(text.trim())),
        Mode::Lenient => {
            let lines = split_lines(text.trim());
            match parse_strict(&lines) {
                Err(ParseError::InvalidPatch(message)) => match unwrap_heredoc(&lines) {
                    Some(inner) => parse_strict(inner),
                    None => Err(ParseError::InvalidPatch(message)),
                },
                other => other,
            }
        }
    }
}

/// The lines inside a `<<EOF ... EOF` wrapper.
fn unwrap_heredoc<'a>(lines: &'a [&'a str]) -> Option<&'a [&'a str]> {
    let first = *lines.first()?;
    let last = *lines.last()?;
    let opener = matches!(first, "<<EOF" | "<<'EOF'" | "<<\"EOF\"");
    (lines.len() >= 4 && opener && last.ends_with("EOF")).then(|| &lines[1..lines.len() - 1])
}

fn parse_strict(lines: &[&str]) -> Result<Patch, ParseError> {
    if lines.first().map(|l| l.trim()) != Some(BEGIN) {
        return Err(invalid("The first line of the patch must be '*** Begin Patch'"));
    }
    if lines.len() < 2 || lines.last().map(|l| l.trim()) != Some(END) {
        return Err(invalid("The last line of the patch must be '*** End Patch'"));
    }
    parse_body(&lines[1..lines.len() - 1], 2)
}

fn parse_streaming(text: &str) -> Result<Patch, ParseError> {
    let lines = split_lines(text);
    if lines.first().map(|l| l.trim()) != Some(BEGIN) {
        return Err(invalid("The first line of the patch must be '*** Begin Patch'"));
    }
    let end = lines.iter().skip(1).position(|l| l.trim() == END).map(|i| i + 1);
    let body_end = end.unwrap_or(lines.len());
    let patch = parse_body(&lines[1..body_end], 2)?;
    match end {
        Some(end) if lines[end + 1..].iter().all(|l| l.trim().is_empty()) => Ok(patch),
        _ => Err(invalid("The last line of the patch must be '*** End Patch'")),
    }
}

/// The hunks between the markers; `first_line` is the line number of `lines[0]`.
fn parse_body(lines: &[&str], first_line: usize) -> Result<Patch, ParseError> {
    let mut patch = Patch::default();
    let mut rest = lines;
    let mut line_number = first_line;
    if let Some(id) = rest.first().and_then(|l| l.trim().strip_prefix(ENVIRONMENT)) {
        let id = id.trim();
        if id.is_empty() {
            return Err(invalid("apply_patch environment_id cannot be empty"));
        }
        patch.environment_id = Some(id.to_string());
        rest = &rest[1..];
        line_number += 1;
    }
    while !rest.is_empty() {
        if rest[0].trim().is_empty() && rest.iter().all(|l| l.trim().is_empty()) {
            break;
        }
        let (hunk, used) = parse_hunk(rest, line_number)?;
        patch.hunks.push(hunk);
        rest = &rest[used..];
        line_number += used;
    }
    Ok(patch)
}

fn parse_hunk(lines: &[&str], line_number: usize) -> Result<(Hunk, usize), ParseError> {
    let header = lines[0].trim();
    if let Some(path) = header.strip_prefix(ADD) {
        let added: Vec<&str> = lines[1..].iter().map_while(|l| l.strip_prefix('+')).collect();
        let contents: String = added.iter().map(|l| format!("{l}\n")).collect();
        return Ok((Hunk::Add { path: path.to_string(), contents }, 1 + added.len()));
    }
    if let Some(path) = header.strip_prefix(DELETE) {
        return Ok((Hunk::Delete { path: path.to_string() }, 1));
    }
    let Some(path) = header.strip_prefix(UPDATE) else {
        return Err(hunk_error(
            format!(
                "'{header}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', '*** Delete File: {{path}}', '*** Update File: {{path}}'"
            ),
            line_number,
        ));
    };
    let mut used = 1;
    let move_path = lines.get(1).and_then(|l| l.trim().strip_prefix(MOVE_TO)).map(String::from);
    if move_path.is_some() {
        used += 1;
    }
    let mut chunks = Vec::new();
    while used < lines.len() && !lines[used].starts_with("***") {
        // Blank lines between chunks are skipped (inside a chunk a blank line is an empty context line).
        if lines[used].trim().is_empty() {
            used += 1;
            continue;
        }
        let (chunk, chunk_lines) = parse_chunk(&lines[used..], line_number + used, chunks.is_empty())?;
        chunks.push(chunk);
        used += chunk_lines;
    }
    if chunks.is_empty() {
        return Err(hunk_error(format!("Update file hunk for path '{path}' is empty"), line_number));
    }
    Ok((Hunk::Update { path: path.to_string(), move_path, chunks }, used))
}

fn parse_chunk(lines: &[&str], line_number: usize, first: bool) -> Result<(Chunk, usize), ParseError> {
    let marker = lines[0].trim_end();
    let (change_context, start) = if marker == "@@" {
        (None, 1)
    } else if let Some(context) = marker.strip_prefix("@@ ") {
        (Some(context.to_string()), 1)
    } else if first {
        (None, 0)
    } else {
        return Err(hunk_error(
            format!("Expected update hunk to start with a @@ context marker, got: '{}'", lines[0]),
            line_number,
        ));
    };
    if start >= lines.len() {
        return Err(hunk_error("Update hunk does not contain any lines".into(), line_number + 1));
    }
    let mut chunk = Chunk {
        change_context,
        old_lines: vec![],
        new_lines: vec![],
        context_line_indices: vec![],
        is_end_of_file: false,
    };
    let mut parsed = 0;
    for line in &lines[start..] {
        if line.trim_end() == END_OF_FILE {
            if parsed == 0 {
                return Err(hunk_error("Update hunk does not contain any lines".into(), line_number + 1));
            }
            chunk.is_end_of_file = true;
            parsed += 1;
            break;
        }
        match line.chars().next() {
            None => push_context(&mut chunk, ""),
            Some(' ') => push_context(&mut chunk, &line[1..]),
            Some('+') => chunk.new_lines.push(line[1..].to_string()),
            Some('-') => chunk.old_lines.push(line[1..].to_string()),
            Some(_) if parsed == 0 => {
                return Err(hunk_error(
                    format!(
                        "Unexpected line found in update hunk: '{line}'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"
                    ),
                    line_number + start,
                ));
            }
            Some(_) => break,
        }
        parsed += 1;
    }
    Ok((chunk, start + parsed))
}

fn push_context(chunk: &mut Chunk, text: &str) {
    chunk.context_line_indices.push((chunk.old_lines.len(), chunk.new_lines.len()));
    chunk.old_lines.push(text.to_string());
    chunk.new_lines.push(text.to_string());
}
