//! The file services the tools share: file access (editor or disk, read ledger, locks, boundary), directory
//! walks, atomic writes, secret detection and formatters.
//!
//! Owns how the workspace's files are reached. Must not know the tool framework beyond its error type.

pub mod atomic;
pub mod files;
pub mod format;
pub mod secrets;
pub mod walk;
