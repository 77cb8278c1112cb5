//! The file services the tools share: file access (editor or disk, read ledger, locks), the workspace
//! boundary, safe reads of regular files, text encodings (UTF-8, UTF-16), the ignore stack and directory walks,
//! atomic writes and change sets made all or nothing (`staging`), secret files and secret content, formatters,
//! the seam to the checkers (language servers) that diagnose written files, the git commands tinycode runs itself, and the record of what a turn changed (for
//! checkpoints).
//!
//! Owns how the workspace's files are reached. Must not know the tool framework beyond its error type.

pub mod atomic;
pub mod boundary;
pub mod changes;
pub mod diagnostics;
pub mod encoding;
pub mod files;
pub mod format;
pub mod git;
pub mod ignore_rules;
pub mod regular;
pub mod secret_files;
pub mod secrets;
pub mod span;
pub mod staging;
pub mod walk;
