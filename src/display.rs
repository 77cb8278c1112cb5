//! What a tool call looks like to the user: its title, kind, file locations and content (text, diffs).
//!
//! These are plain data shared by `tool` (which produces them) and `permission` (which shows them in an ask).
//! The `acp` layer converts them into ACP types; this module must not know about ACP.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The category of a tool call, used by editors to pick an icon. Mirrors ACP's `ToolKind` without depending on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Kind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    #[default]
    Other,
}

/// A file a tool call touches: an absolute path and an optional 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub path: PathBuf,
    pub line: Option<u32>,
}

impl Location {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), line: None }
    }

    pub fn at_line(path: impl Into<PathBuf>, line: u32) -> Self {
        Self { path: path.into(), line: Some(line) }
    }
}

/// One piece of content shown in a tool call card.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Content {
    /// Plain or Markdown text.
    Text(String),
    /// A whole-file diff. `old_text: None` means the file is being created.
    Diff { path: PathBuf, old_text: Option<String>, new_text: String },
    /// A terminal the editor owns (created through the editor's terminal methods), shown live.
    Terminal(String),
    /// An image (base64 data), as an MCP tool returned it.
    Image { data: String, mime_type: String },
}

/// How a tool call with given arguments is presented, before it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Presentation {
    /// Human readable; names the real path, pattern or command.
    pub title: String,
    pub kind: Kind,
    pub locations: Vec<Location>,
    /// The values permission rules match against (paths, command prefixes, hosts).
    pub patterns: Vec<String>,
    /// Content shown in the card and in a permission ask (a diff, the command).
    pub content: Vec<Content>,
}
