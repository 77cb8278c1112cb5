//! The file services the tools share: file access (editor or disk, read ledger, locks), the workspace
//! boundary, safe reads of regular files, the one reader for files tinycode reads on its own, text encodings
//! (UTF-8, UTF-16), the ignore stack and directory walks, atomic writes and change sets made all or nothing
//! (`staging`), secret files and secret content, formatters, the seam to the checkers (language servers) that
//! diagnose written files, the git commands tinycode runs itself (inert) and what git says a repository's
//! configuration would run, and the record of what a turn changed (for checkpoints).
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
pub mod git_filters;
pub mod git_programs;
pub mod ignore_rules;
pub mod project_file;
pub mod regular;
pub mod secret_files;
pub mod secrets;
pub mod span;
pub mod staging;
pub mod walk;
