//! The `bash` tool's costs under load: `cargo bench --bench shell` (add `-- overhead` or `-- cancel` for one part).
//! * overhead: running `true` through the whole tool flow (classification, process group, capture, result)
//!   against a bare `sh -c true` spawn, first with `sh` started directly, then under the supervisor
//!   (`tinycode __supervise`, what the real binary does on Linux). Target: at most 5 ms more than the raw spawn.
//! * cancel: a command under the supervisor that started a background child, a `setsid` child and a
//!   double-forked daemon is cancelled; the time from the cancel to the call's result (what `session/cancel`
//!   waits for beyond the turn's own bookkeeping), and until every one of those processes is dead, which must be
//!   within a second. Target: median ≤ 2 ms, p95 ≤ 5 ms on 2 cores.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tinycode::bus::Bus;
use tinycode::shell::tasks::Tasks;
use tinycode::tool::{Context, Registry};
use tinycode::workspace::files::{FileLocks, Files};
use tokio_util::sync::CancellationToken;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn p95(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[(samples.len() * 95).div_ceil(100) - 1]
}

fn context(dir: &Path, cancel: CancellationToken) -> Context {
    Context {
        session_id: "bench".into(),
        call_id: "c".into(),
        directory: dir.to_path_buf(),
        perms: None,
        bus: Bus::new(),
        subagent_depth: 0,
        after_hook: None,
        before_run: None,
        cancel,
        output_dir: dir.join("out"),
        progress: None,
        files: Arc::new(Files::new(
            vec![dir.to_path_buf()],
            None,
            Arc::new(FileLocks::default()),
            Default::default(),
        )),
        plan: None,
        tasks: Arc::new(Tasks::new(dir.join("tasks"))),
        terminals: None,
        control: Default::default(),
        diagnostics: None,
        subagents: None,
        edit_mode: Default::default(),
    }
}

async fn overhead(registry: &Registry, dir: &Path) {
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
            let outcome = registry
                .execute("bash", context(dir, CancellationToken::new()), json!({"command": "true"}))
                .await;
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

/// The pids a cancelled command's tree wrote once it is all running.
const MEMBERS: usize = 4;

fn tree_command(pidfile: &Path) -> String {
    let p = pidfile.display();
    format!(
        "sleep 1000 & echo $! >> {p}; setsid sleep 1000 & echo $! >> {p}; (sleep 1000 & echo $! >> {p}) & echo $$ >> {p}; wait"
    )
}

async fn cancel(registry: &Registry, dir: &Path) {
    const RUNS: usize = 100;
    // `TINYCODE_BENCH_SUPERVISOR` names another build's binary, for a before/after comparison.
    let supervisor =
        std::env::var_os("TINYCODE_BENCH_SUPERVISOR").unwrap_or(env!("CARGO_BIN_EXE_tinycode").into());
    tinycode::shell::process::use_supervisor(supervisor.into());
    let mut samples = Vec::new();
    let mut all_gone = Vec::new();
    let mut late = 0;
    for run in 0..RUNS {
        let pidfile = dir.join(format!("tree-{run}.pids"));
        let token = CancellationToken::new();
        let call =
            registry.execute("bash", context(dir, token.clone()), json!({"command": tree_command(&pidfile)}));
        let driver = async {
            let pids = loop {
                let text = std::fs::read_to_string(&pidfile).unwrap_or_default();
                let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
                if pids.len() == MEMBERS {
                    break pids;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            };
            // Let every member settle into its sleep, as a command that has been running a while.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let start = Instant::now();
            token.cancel();
            (pids, start)
        };
        let (outcome, (pids, start)) = tokio::join!(call, driver);
        samples.push(start.elapsed());
        assert!(outcome.cancelled, "{outcome:?}");
        if pids.iter().any(|p| tinycode::shell::process::running(*p)) {
            late += 1;
            let deadline = Instant::now() + Duration::from_secs(1);
            while pids.iter().any(|p| tinycode::shell::process::running(*p)) {
                assert!(Instant::now() < deadline, "a process survived the cancel: {pids:?}");
                // A short sleep, not a spin: the dying processes and the supervisor need the CPU.
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        all_gone.push(start.elapsed());
    }
    println!(
        "bash cancel under the supervisor ({RUNS} runs, 4-process tree with setsid and double fork): median {:?}, p95 {:?}, max {:?} (target: median <= 2 ms, p95 <= 5 ms); runs with a process still alive at the answer: {late}",
        median(samples.clone()),
        p95(samples.clone()),
        samples.iter().max().unwrap()
    );
    println!(
        "  until every process of the tree is dead (a zombie or reaped): median {:?}, p95 {:?}, max {:?}",
        median(all_gone.clone()),
        p95(all_gone.clone()),
        all_gone.iter().max().unwrap()
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let registry = tinycode::builtin::registry();
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |part: &str| only.is_empty() || only.iter().any(|o| o == part);
    if wanted("overhead") {
        overhead(&registry, dir.path()).await;
    }
    if wanted("cancel") {
        cancel(&registry, dir.path()).await;
    }
}
