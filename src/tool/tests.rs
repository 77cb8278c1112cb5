//! The execution flow of seed 000 §8.1, step by step.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::permission::remembered::Remembered;
use crate::permission::{Rule, Service};

fn def(id: &str, permission: Option<Category>, output: &'static str, bounded: bool) -> Def {
    Def {
        id: id.into(),
        description: format!("{id} tool"),
        parameters: json!({"type": "object"}),
        permission,
        present: |_, _| Presentation {
            title: "t".into(),
            patterns: vec!["p".into()],
            ..Presentation::default()
        },
        preview: None,
        execute: Arc::new(move |_, _| {
            Box::pin(
                async move { Ok(ToolOutput { output: output.into(), bounded, ..ToolOutput::default() }) },
            )
        }),
    }
}

fn failing(id: &str, error: ToolError) -> Def {
    Def {
        execute: Arc::new(move |_, _| {
            let error = error.clone();
            Box::pin(async move { Err(error) })
        }),
        ..def(id, None, "", false)
    }
}

pub(crate) fn context(dir: &std::path::Path, perms: Option<Arc<Service>>) -> Context {
    Context {
        session_id: "s".into(),
        call_id: "c".into(),
        directory: dir.to_path_buf(),
        perms,
        bus: Bus::new(),
        subagent_depth: 0,
        after_hook: None,
        before_run: None,
        cancel: CancellationToken::new(),
        output_dir: dir.join("out"),
        progress: None,
        files: Arc::new(files::Files::new(
            vec![dir.to_path_buf()],
            None,
            Arc::new(files::FileLocks::default()),
            Default::default(),
        )),
        plan: None,
        tasks: Arc::new(shell::tasks::Tasks::new(dir.join("tasks"))),
        terminals: None,
        diagnostics: None,
        control: Default::default(),
        subagents: None,
        edit_mode: Default::default(),
    }
}

#[test]
fn registration_keeps_insertion_order_replaces_in_place_and_never_offers_invalid() {
    let registry = Registry::default();
    registry.register(def("b", None, "", false));
    registry.register(invalid::def());
    registry.register(def("a", None, "", false));
    registry.register(Def { description: "new b".into(), ..def("b", None, "", false) });
    let offered: Vec<String> = registry.model_tools().iter().map(|d| d.id.clone()).collect();
    assert_eq!(offered, vec!["b", "a"]);
    assert_eq!(registry.get("b").unwrap().description, "new b");
    assert_eq!(registry.resolve(" B ").unwrap().id, "b");
    assert!(registry.get("B").is_none());
}

#[tokio::test]
async fn a_successful_call_publishes_before_and_after_and_applies_the_after_hook() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    registry.register(def("echo", Some(Category::Read), "out", false));
    let mut ctx = context(
        dir.path(),
        Some(Arc::new(Service::new("build", Arc::new(Remembered::new("/p")), vec![], None))),
    );
    ctx.after_hook = Some(Arc::new(|tool, output| output.output.push_str(&format!(" (after {tool})"))));
    let mut events = ctx.bus.subscribe();
    let outcome = registry.execute("echo", ctx, json!({"x": 1})).await;
    assert_eq!(outcome.output, "out (after echo)");
    assert!(!outcome.is_error && !outcome.cancelled);
    assert_eq!(
        events.recv().await.unwrap(),
        Event::ToolExecuteBefore {
            session_id: "s".into(),
            call_id: "c".into(),
            tool: "echo".into(),
            args: json!({"x": 1})
        }
    );
    assert_eq!(
        events.recv().await.unwrap(),
        Event::ToolExecuteAfter {
            session_id: "s".into(),
            call_id: "c".into(),
            tool: "echo".into(),
            success: true
        }
    );
}

#[tokio::test]
async fn a_denied_call_never_executes_and_names_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    registry.register(def("echo", Some(Category::Read), "out", false));
    let rules = vec![Rule::new("read", "p", permission::Action::Deny)];
    let ctx = context(
        dir.path(),
        Some(Arc::new(Service::new("build", Arc::new(Remembered::new("/p")), rules, None))),
    );
    let mut events = ctx.bus.subscribe();
    let outcome = registry.execute("echo", ctx, json!({})).await;
    assert_eq!(
        outcome.output,
        "Permission denied by rule {permission: \"read\", pattern: \"p\", action: deny}. Do not retry this call."
    );
    assert!(outcome.is_error);
    assert!(events.try_recv().is_err(), "no tool.execute.before for a denied call");
}

#[tokio::test]
async fn errors_publish_a_failed_after_event_and_keep_the_retry_execution_distinction() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    registry.register(failing("retry", ToolError::retry("fix your args")));
    registry.register(failing("boom", ToolError::execution("disk on fire")));
    let ctx = context(dir.path(), None);
    let mut events = ctx.bus.subscribe();
    let retry = registry.execute("retry", ctx.clone(), json!({})).await;
    assert_eq!((retry.output.as_str(), retry.is_error), ("fix your args", true));
    let boom = registry.execute("boom", ctx, json!({})).await;
    assert_eq!((boom.output.as_str(), boom.is_error, boom.cancelled), ("Error: disk on fire", true, false));
    let _before = events.recv().await.unwrap();
    assert!(matches!(events.recv().await.unwrap(), Event::ToolExecuteAfter { success: false, .. }));
}

#[tokio::test]
async fn a_panic_in_a_tool_fails_that_call_alone_and_the_registry_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    registry.register(Def {
        execute: Arc::new(|_, _| Box::pin(async { panic!("index out of bounds") })),
        ..def("crash", None, "", false)
    });
    registry.register(Def {
        preview: Some(Arc::new(|_, _| Box::pin(async { panic!("preview broke") }))),
        ..def("crash_preview", Some(Category::Edit), "", false)
    });
    registry
        .register(Def { present: |_, _| panic!("present broke"), ..def("crash_present", None, "", false) });
    registry.register(def("echo", None, "still here", false));
    let ctx = context(dir.path(), None);
    let mut events = ctx.bus.subscribe();
    let outcome = registry.execute("crash", ctx.clone(), json!({})).await;
    assert_eq!(
        (outcome.output.as_str(), outcome.is_error, outcome.cancelled),
        ("Error: the tool crashed: index out of bounds", true, false)
    );
    let _before = events.recv().await.unwrap();
    assert!(matches!(events.recv().await.unwrap(), Event::ToolExecuteAfter { success: false, .. }));
    let preview = registry.execute("crash_preview", ctx.clone(), json!({})).await;
    assert_eq!(preview.output, "Error: the tool crashed: preview broke");
    let present = registry.execute("crash_present", ctx.clone(), json!({})).await;
    assert_eq!(present.output, "Error: the tool crashed: present broke");
    assert_eq!(registry.execute("echo", ctx, json!({})).await.output, "still here");
}

#[tokio::test]
async fn oversized_arguments_are_refused_before_the_tool_runs() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    registry.register(Def {
        execute: Arc::new(|_, _| Box::pin(async { panic!("must not run") })),
        ..def("write", None, "", false)
    });
    let ctx = context(dir.path(), None);
    let mut events = ctx.bus.subscribe();
    let args = json!({"content": "a".repeat(2 * boundary::MAX_ARGUMENT_BYTES)});
    let outcome = registry.execute("write", ctx, args).await;
    assert!(outcome.is_error);
    assert!(
        outcome.output.starts_with("The arguments of this call are 2048 KB; the limit is 1024 KB."),
        "{}",
        outcome.output
    );
    assert!(events.try_recv().is_err(), "the tool never started");
}

#[tokio::test]
async fn long_output_is_previewed_and_saved_unless_the_tool_bounded_it() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    let long: &'static str = Box::leak("line\n".repeat(3_000).into_boxed_str());
    registry.register(def("long", None, long, false));
    registry.register(def("bounded", None, long, true));
    let ctx = context(dir.path(), None);
    let previewed = registry.execute("long", ctx.clone(), json!({})).await.output;
    assert!(previewed.contains("... [truncated 5000 bytes, showing first 1000 and last 1000 lines] ..."));
    let saved = previewed.lines().last().unwrap().to_string();
    assert!(saved.starts_with("Use grep on that file"), "{saved}");
    let files: Vec<_> = std::fs::read_dir(dir.path().join("out")).unwrap().collect();
    assert_eq!(files.len(), 1);
    assert_eq!(std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap(), long);
    assert_eq!(registry.execute("bounded", ctx, json!({})).await.output, long);
}

#[test]
fn paths_resolve_against_the_session_directory_and_normalise_dots() {
    assert_eq!(
        resolve_path(std::path::Path::new("/p/q"), "a/../b/./c"),
        std::path::PathBuf::from("/p/q/b/c")
    );
    assert_eq!(resolve_path(std::path::Path::new("/p/q"), "/abs/x"), std::path::PathBuf::from("/abs/x"));
    assert_eq!(resolve_path(std::path::Path::new("/p/q"), "../../.."), std::path::PathBuf::from("/"));
}

#[test]
fn argument_readers_accept_numeric_strings_and_explain_type_errors() {
    let args = json!({"n": "42", "m": 7, "f": 1.5, "s": 3, "neg": -1});
    assert_eq!(arg_opt_u64(&args, "n"), Ok(Some(42)));
    assert_eq!(arg_opt_u64(&args, "m"), Ok(Some(7)));
    assert_eq!(arg_opt_u64(&args, "missing"), Ok(None));
    assert_eq!(arg_opt_u64(&args, "f"), Err(ToolError::retry("`f` must be a non-negative integer, got 1.5")));
    assert_eq!(
        arg_opt_u64(&args, "neg"),
        Err(ToolError::retry("`neg` must be a non-negative integer, got -1"))
    );
    assert_eq!(arg_str(&args, "s"), Err(ToolError::retry("`s` must be a string, got 3")));
    assert_eq!(arg_str(&args, "x"), Err(ToolError::retry("missing required argument `x`")));
}
