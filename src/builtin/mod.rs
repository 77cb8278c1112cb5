//! The built-in tools of seed 000 chapter 8 (and the seeds' hardening), one file or folder each, and the one
//! place that registers them.
//!
//! Owns which tools a build offers and in what order. Must not change the framework (`tool`) or the services
//! the tools share (`workspace`, `shell`, `control`).

pub mod access;
pub mod apply_patch;
pub mod change;
pub mod cron;
pub mod diagnostics;
pub mod discover;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod hashline;
pub mod list_dir;
pub mod plan_switch;
pub mod question;
pub mod read;
pub mod shell;
pub mod skill;
pub mod sleep;
pub mod task;
pub mod todowrite;
pub mod webfetch;
pub mod websearch;
pub mod worktree;
pub mod write;

use std::sync::Arc;

use crate::config::EditMode;
use crate::config::web::WebSettings;
use crate::tool::{Registry, invalid};
use crate::web::{Allowed, Policy};

/// A registry with every always-available built-in tool, in the order the model sees them; webfetch reaches
/// public addresses only and websearch is absent. Sessions use [`registry_with`]. The edit mode decides how
/// files are edited: by text (`edit`, `apply_patch`) or by line references (`hashline_edit`).
pub fn registry() -> Registry {
    registry_with(&WebSettings::default())
}

/// Every built-in tool, plus the conditional ones of seed 000 §8.1 (`websearch` when the user has a key),
/// with webfetch allowed the private hosts of the user's own configuration.
pub fn registry_with(web: &WebSettings) -> Registry {
    let registry = Registry::default();
    registry.register(read::def());
    registry.register(write::def());
    registry.register(edit::def());
    registry.register(apply_patch::def());
    registry.register(hashline::def());
    registry.register(shell::bash::def());
    registry.register(glob::def());
    registry.register(grep::def());
    registry.register(list_dir::def());
    registry.register(discover::def());
    registry.register(diagnostics::def());
    registry.register(shell::monitor::def());
    registry.register(shell::shell_output::def());
    registry.register(shell::shell_tasks::def());
    registry.register(shell::kill_shell::def());
    registry.register(todowrite::def());
    registry.register(question::def());
    registry.register(task::def());
    let allowed = web.allow_private.iter().map(|p| Allowed { host: p.host.clone(), port: p.port }).collect();
    registry.register(webfetch::def(Arc::new(webfetch::WebFetch::new(Policy::new(allowed)))));
    if let Some(search) = &web.search {
        registry.register(websearch::def(Arc::new(websearch::WebSearch::new(search.clone()))));
    }
    registry.register(plan_switch::enter());
    registry.register(plan_switch::exit());
    registry.register(worktree::enter());
    registry.register(worktree::exit());
    registry.register(sleep::def());
    registry.register(cron::create());
    registry.register(cron::list());
    registry.register(cron::delete());
    registry.register(invalid::def());
    registry.offer_only_in(edit::ID, EditMode::Replace);
    registry.offer_only_in(apply_patch::ID, EditMode::Replace);
    registry.offer_only_in(hashline::ID, EditMode::Hashline);
    registry
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::config::EditMode;
    use crate::config::web::{Search, WebSettings};
    use crate::tool::tests::context;

    #[tokio::test]
    async fn an_unknown_tool_lists_the_tools_offered_in_the_sessions_edit_mode() {
        let dir = tempfile::tempdir().unwrap();
        let registry = super::registry();
        let outcome = registry.execute("nope", context(dir.path(), None), json!({})).await;
        assert_eq!(
            outcome.output,
            "Unknown tool `nope`. Available tools: read, write, edit, apply_patch, bash, glob, grep, list_dir, discover, diagnostics, monitor, shell_output, shell_tasks, kill_shell, todowrite, question, task, webfetch, plan_enter, plan_exit, enter_worktree, exit_worktree, sleep, cron_create, cron_list, cron_delete."
        );
        assert!(outcome.is_error);
        let mut ctx = context(dir.path(), None);
        ctx.edit_mode = EditMode::Hashline;
        let outcome = registry.execute("nope", ctx, json!({})).await;
        assert_eq!(
            outcome.output,
            "Unknown tool `nope`. Available tools: read, write, hashline_edit, bash, glob, grep, list_dir, discover, diagnostics, monitor, shell_output, shell_tasks, kill_shell, todowrite, question, task, webfetch, plan_enter, plan_exit, enter_worktree, exit_worktree, sleep, cron_create, cron_list, cron_delete."
        );
    }

    #[test]
    fn the_edit_mode_decides_which_editing_tools_are_offered() {
        let registry = super::registry();
        let ids = |mode| registry.offered(mode).iter().map(|d| d.id.clone()).collect::<Vec<_>>();
        let replace = ids(EditMode::Replace);
        assert!(replace.contains(&"edit".to_string()) && replace.contains(&"apply_patch".to_string()));
        assert!(!replace.contains(&"hashline_edit".to_string()));
        let hashline = ids(EditMode::Hashline);
        assert!(hashline.contains(&"hashline_edit".to_string()));
        assert!(!hashline.contains(&"edit".to_string()) && !hashline.contains(&"apply_patch".to_string()));
        assert_eq!(replace.len(), hashline.len() + 1);
    }

    #[test]
    fn websearch_is_registered_only_when_the_user_has_a_key() {
        let names = |registry: crate::tool::Registry| -> Vec<String> {
            registry.model_tools().iter().map(|d| d.id.clone()).filter(|id| id.starts_with("web")).collect()
        };
        assert_eq!(names(super::registry()), vec!["webfetch"]);
        let keyed = WebSettings {
            search: Some(Search { api_key: "k".into(), url: "http://127.0.0.1:9/search".into() }),
            ..WebSettings::default()
        };
        assert_eq!(names(super::registry_with(&keyed)), vec!["webfetch", "websearch"]);
    }
}
