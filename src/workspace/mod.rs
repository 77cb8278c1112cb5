//! The file services the tools share: file access (editor or disk, read ledger, locks), the workspace
//! boundary, safe reads of regular files, directory walks, atomic writes, secret files and secret content,
//! and formatters.
//!
//! Owns how the workspace's files are reached. Must not know the tool framework beyond its error type.

pub mod atomic;
pub mod boundary;
pub mod files;
pub mod format;
pub mod ignore_rules;
pub mod regular;
pub mod secret_files;
pub mod secrets;
pub mod walk;
