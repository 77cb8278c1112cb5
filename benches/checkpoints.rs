//! What a checkpoint costs a shell command in a git work tree: `cargo bench --bench checkpoints`.
//! A repository of 2,000 tracked files with 20 of them already modified; each run brackets a command that changes
//! one file with `Recorder::before_command` / `after_command` (two `git status`, copies of the dirty files, the
//! earlier content of the changed one) and ends the turn's record. Target: at most 60 ms per command.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::process::Command;
use std::time::{Duration, Instant};

use tinycode::workspace::changes::Recorder;

const FILES: usize = 2_000;
const DIRTY: usize = 20;
const RUNS: usize = 30;

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..FILES {
        let path = dir.path().join(format!("src/m{}/f{n}.rs", n % 40));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("pub fn f{n}() -> usize {{ {n} }}\n").repeat(20)).unwrap();
    }
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "start"]);
    for n in 0..DIRTY {
        let path = dir.path().join(format!("src/m{}/f{n}.rs", n % 40));
        std::fs::write(&path, "// edited by hand\n").unwrap();
    }
    let recorder = Recorder::default();
    let target = dir.path().join("src/m5/f1005.rs");
    let mut samples = Vec::new();
    for run in 0..RUNS {
        recorder.begin();
        let start = Instant::now();
        recorder.before_command(dir.path(), "sed -i …").await;
        std::fs::write(&target, format!("// run {run}\n")).unwrap();
        recorder.after_command().await;
        let changes = recorder.finish().await;
        samples.push(start.elapsed());
        assert_eq!(changes.files.len(), 1, "{:?}", changes.uncovered);
    }
    samples.sort();
    let median = samples[RUNS / 2];
    let p95 = samples[RUNS * 95 / 100];
    println!(
        "checkpoint of one shell command, {FILES} tracked files, {DIRTY} dirty: median {:.1} ms, p95 {:.1} ms",
        ms(median),
        ms(p95)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}
