//! Per-call overhead of the `bash` tool: `cargo bench --bench shell`.
//! Compares running `true` through the whole tool flow (classification, process group, capture, result) with a
//! bare `sh -c true` spawn, first with `sh` started directly, then under the supervisor (`tinycode __supervise`,
//! what the real binary does on Linux). Target: at most 5 ms more than the raw spawn.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tinycode::bus::Bus;
use tinycode::shell::tasks::Tasks;
use tinycode::tool::Context;
use tinycode::workspace::files::{FileLocks, Files};
use tokio_util::sync::CancellationToken;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let registry = tinycode::builtin::registry();
    let context = || Context {
        session_id: "bench".into(),
        call_id: "c".into(),
        directory: dir.path().to_path_buf(),
        perms: None,
        bus: Bus::new(),
        subagent_depth: 0,
        after_hook: None,
        before_run: None,
        cancel: CancellationToken::new(),
        output_dir: dir.path().join("out"),
        progress: None,
        files: Arc::new(Files::new(
            vec![dir.path().to_path_buf()],
            None,
            Arc::new(FileLocks::default()),
            Default::default(),
        )),
        plan: None,
        tasks: Arc::new(Tasks::new(dir.path().join("tasks"))),
        terminals: None,
        control: Default::default(),
        diagnostics: None,
        subagents: None,
        edit_mode: Default::default(),
    };
    const RUNS: usize = 200;
    let mut raw = Vec::new();
    let mut direct = Vec::new();
    let mut supervised = Vec::new();
    for round in 0..2 {
        if round == 1 {
            assert!(tinycode::shell::process::use_supervisor(env!("CARGO_BIN_EXE_tinycode").into()));
        }
        for _ in 0..RUNS {
            let start = Instant::now();
            let output = tokio::process::Command::new("sh").arg("-c").arg("true").output().await.unwrap();
            assert!(output.status.success());
            raw.push(start.elapsed());

            let start = Instant::now();
            let outcome = registry.execute("bash", context(), json!({"command": "true"})).await;
            assert_eq!(outcome.output, "(no output)");
            if round == 0 { &mut direct } else { &mut supervised }.push(start.elapsed());
        }
    }
    let (raw, direct, supervised) = (median(raw), median(direct), median(supervised));
    println!(
        "bash `true`: raw spawn median {raw:?}; through the tool, sh started directly {direct:?} (overhead {:?}), under the supervisor {supervised:?} (overhead {:?}; target <= 5 ms)",
        direct.saturating_sub(raw),
        supervised.saturating_sub(raw)
    );
}
