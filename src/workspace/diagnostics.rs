//! The seam between the file-changing tools and whatever checks files after they are written (the language
//! servers of `lsp`), and the diagnostics it reports. The tools call a [`Checker`] they find in their context;
//! they never know what is behind it.
//!
//! Owns the seam and the plain data crossing it. Must not start processes or format text for the model.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;

/// How serious a diagnostic is (LSP's four levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One diagnostic, positions 1-based (columns in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub line: u32,
    pub column: u32,
    pub severity: Severity,
    pub code: Option<String>,
    /// Who reported it (`rustc`, `Pyright`…).
    pub source: Option<String>,
    /// As the server sent it: untrusted text, to be sanitised before it reaches the model.
    pub message: String,
}

/// The diagnostics of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiagnostics {
    pub path: PathBuf,
    pub diagnostics: Vec<Diagnostic>,
}

/// What the checkers said after a write or when asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The files asked about first (in the order given, each once), then other files with diagnostics.
    pub files: Vec<FileDiagnostics>,
    /// Things the user and model should know once: a server that broke and is now off, diagnostics still
    /// pending when the wait ended.
    pub notes: Vec<String>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.files.iter().all(|f| f.diagnostics.is_empty()) && self.notes.is_empty()
    }
}

/// A checker of written files. Implemented by `lsp`; the file tools call it after each write.
pub trait Checker: Send + Sync {
    /// `files` (absolute path, new content) were just written: let the checkers see them and wait, within the
    /// checker's own time budget, for what they report. Never fails: problems become notes.
    fn written<'a>(&'a self, files: &'a [(PathBuf, String)]) -> BoxFuture<'a, Report>;

    /// The current diagnostics of `paths` (every file known to a checker when empty). `None` when no checker
    /// handles any of them.
    fn current<'a>(&'a self, paths: &'a [PathBuf]) -> BoxFuture<'a, Option<Report>>;

    /// Whether some checker handles files like `path`.
    fn handles(&self, path: &Path) -> bool;
}
