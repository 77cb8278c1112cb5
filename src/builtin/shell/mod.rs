//! The shell tools: `bash`, and the background-task tools `monitor`, `shell_output`, `shell_tasks` and
//! `kill_shell`. Process groups, capture, classification and the task table are the `shell` service's.

pub mod bash;
pub mod kill_shell;
pub mod monitor;
pub mod shell_output;
pub mod shell_tasks;
