//! The shell service the shell tools share: command classification on a real shell tokenizer, process groups and
//! trees, the supervisor mode, the command environment, output capture, the session's background tasks (with their wake-ups, the untrusted-output fence and
//! finding a port's listener), and the seam to the editor's terminals.
//!
//! Owns running and classifying commands. Must not know the tool framework beyond its error type.

pub mod capture;
pub mod classify;
pub mod environment;
pub mod fence;
pub mod launch;
pub mod ports;
pub mod process;
pub mod supervisor;
pub mod tasks;
pub mod terminal;
pub mod tokenize;
pub mod tree;
