//! Shell execution: the `bash` tool, background tasks and their tools (`monitor`, `shell_output`,
//! `shell_tasks`, `kill_shell`), command classification on a real shell tokenizer, process groups, output
//! capture, and the seam to the editor's terminals.

pub mod bash;
pub mod capture;
pub mod classify;
pub mod kill_shell;
pub mod monitor;
pub mod process;
pub mod shell_output;
pub mod shell_tasks;
pub mod tasks;
pub mod terminal;
pub mod tokenize;
