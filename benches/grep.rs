//! Peak memory of the `grep` tool searching the whole machine: `cargo bench --bench grep`.
//! Runs grep for a pattern that matches in very many files with the session rooted at `/`, so the walk meets
//! every kind of file there is (procfs, sysfs and devices are skipped; files that report size 0 are read with a
//! cap). Target: peak RSS ≤ 100 MB. Also prints the time taken and how many matches were counted.
//! `GREP_BENCH_ROOT=/some/dir` searches another directory.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use tinycode::bus::Bus;
use tinycode::shell::tasks::Tasks;
use tinycode::tool::Context;
use tinycode::workspace::files::{FileLocks, Files};
use tokio_util::sync::CancellationToken;

/// This process's peak resident set size in MB (Linux reports kilobytes).
fn peak_rss_mb() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) }, 0);
    usage.ru_maxrss as f64 / 1024.0
}

#[tokio::main]
async fn main() {
    let root = PathBuf::from(std::env::var("GREP_BENCH_ROOT").unwrap_or_else(|_| "/".into()));
    let scratch = tempfile::tempdir().unwrap();
    let registry = tinycode::builtin::registry();
    let ctx = Context {
        session_id: "bench".into(),
        call_id: "c".into(),
        directory: root.clone(),
        perms: None,
        bus: Bus::new(),
        subagent_depth: 0,
        after_hook: None,
        before_run: None,
        cancel: CancellationToken::new(),
        output_dir: scratch.path().join("out"),
        progress: None,
        files: Arc::new(Files::new(
            vec![root.clone()],
            None,
            Arc::new(FileLocks::default()),
            Default::default(),
        )),
        plan: None,
        tasks: Arc::new(Tasks::new(scratch.path().join("tasks"))),
        terminals: None,
        control: Default::default(),
        diagnostics: None,
        subagents: None,
        edit_mode: Default::default(),
    };
    let before = peak_rss_mb();
    let start = Instant::now();
    let outcome = registry.execute("grep", ctx, json!({"pattern": "e"})).await;
    let elapsed = start.elapsed();
    assert!(!outcome.is_error, "{}", outcome.output);
    println!(
        "grep `e` over {}: {} matches counted, {} lines shown, {:.1} s, peak RSS {:.1} MB (before the search {:.1} MB)",
        root.display(),
        outcome.metadata["matches"],
        outcome.output.lines().filter(|l| l.contains(':')).count(),
        elapsed.as_secs_f64(),
        peak_rss_mb(),
        before
    );
}
