//! Shell execution: the `bash` tool, background tasks and their tools, command classification on a real shell
//! tokenizer, process groups, and output capture.

pub mod capture;
pub mod classify;
pub mod process;
pub mod tokenize;
