//! The built-in tools of seed 000 chapter 8 (and the seeds' hardening), one file or folder each, and the one
//! place that registers them.
//!
//! Owns which tools a build offers and in what order. Must not change the framework (`tool`) or the services
//! the tools share (`workspace`, `shell`, `control`).

pub mod access;
pub mod apply_patch;
pub mod change;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod plan_switch;
pub mod question;
pub mod read;
pub mod shell;
pub mod skill;
pub mod todowrite;
pub mod write;

use crate::tool::{Registry, invalid};

/// A registry with every built-in tool of this build, in the order the model sees them.
pub fn registry() -> Registry {
    let registry = Registry::default();
    registry.register(read::def());
    registry.register(write::def());
    registry.register(edit::def());
    registry.register(apply_patch::def());
    registry.register(shell::bash::def());
    registry.register(glob::def());
    registry.register(grep::def());
    registry.register(shell::monitor::def());
    registry.register(shell::shell_output::def());
    registry.register(shell::shell_tasks::def());
    registry.register(shell::kill_shell::def());
    registry.register(todowrite::def());
    registry.register(question::def());
    registry.register(plan_switch::enter());
    registry.register(plan_switch::exit());
    registry.register(invalid::def());
    registry
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::tool::tests::context;

    #[tokio::test]
    async fn an_unknown_tool_lists_the_available_ones() {
        let dir = tempfile::tempdir().unwrap();
        let registry = super::registry();
        let outcome = registry.execute("nope", context(dir.path(), None), json!({})).await;
        assert_eq!(
            outcome.output,
            "Unknown tool `nope`. Available tools: read, write, edit, apply_patch, bash, glob, grep, monitor, shell_output, shell_tasks, kill_shell, todowrite, question, plan_enter, plan_exit."
        );
        assert!(outcome.is_error);
    }
}
