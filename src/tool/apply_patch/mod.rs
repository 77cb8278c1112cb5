//! The `apply_patch` tool: the Codex patch format, validated as a whole before anything is written, shown to
//! the user as one diff per file.

pub mod apply;
pub mod parser;
pub mod seek;

#[cfg(test)]
mod vectors;
