//! `grep` and `glob` against ripgrep on the same generated tree: `cargo bench --bench search`.
//! Builds 100,000 small text files in 1,000 directories (three levels), then times, warm, the median of several
//! runs of:
//! - the `grep` tool for a word that occurs in 300 files (fewer matches than the 500 cap, so both print all of
//!   them) against `rg -n <word> <root>`; target: within 1.3× of rg;
//! - the `glob` tool for `**/f42.txt` (1,000 files, exactly the cap) against `rg --files -g f42.txt <root>`;
//!   target: within 1.3× of rg.
//!
//! Skips (with a message) when `rg` is not on PATH. `SEARCH_BENCH_DIR=/dir` builds the tree there (default: a
//! temporary directory).
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tinycode::bus::Bus;
use tinycode::shell::tasks::Tasks;
use tinycode::tool::{Context, Registry};
use tinycode::workspace::files::{FileLocks, Files};
use tokio_util::sync::CancellationToken;

const DIRS: usize = 10;
const FILES_PER_DIR: usize = 100;
const RUNS: usize = 7;
const WORD: &str = "zebracorn";

/// A small deterministic text: 12 lines of words, the rare word in every 333rd file.
fn content(n: usize) -> String {
    const WORDS: [&str; 16] = [
        "alpha", "beta", "gamma", "delta", "let", "fn", "struct", "impl", "return", "value", "match", "some",
        "none", "self", "error", "result",
    ];
    let mut text = String::with_capacity(600);
    let mut seed = n as u64 * 2_654_435_761 + 1;
    for line in 0..12 {
        for _ in 0..8 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            text.push_str(WORDS[(seed % 16) as usize]);
            text.push(' ');
        }
        if line == 5 && n.is_multiple_of(333) {
            text.push_str(WORD);
        }
        text.push('\n');
    }
    text
}

fn build_tree(root: &Path) -> usize {
    let mut n = 0;
    for a in 0..DIRS {
        for b in 0..DIRS {
            for c in 0..DIRS {
                let dir = root.join(format!("d{a}/d{b}/d{c}"));
                std::fs::create_dir_all(&dir).unwrap();
                for f in 0..FILES_PER_DIR {
                    std::fs::write(dir.join(format!("f{f}.txt")), content(n)).unwrap();
                    n += 1;
                }
            }
        }
    }
    n
}

fn context(root: &Path, scratch: &Path) -> Context {
    Context {
        session_id: "bench".into(),
        call_id: "c".into(),
        directory: root.to_path_buf(),
        perms: None,
        bus: Bus::new(),
        subagent_depth: 0,
        after_hook: None,
        before_run: None,
        cancel: CancellationToken::new(),
        output_dir: scratch.join("out"),
        progress: None,
        files: Arc::new(Files::new(
            vec![root.to_path_buf()],
            None,
            Arc::new(FileLocks::default()),
            Default::default(),
        )),
        plan: None,
        tasks: Arc::new(Tasks::new(scratch.join("tasks"))),
        terminals: None,
        control: Default::default(),
        edit_mode: Default::default(),
        subagents: None,
        diagnostics: None,
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Median time of the tool, and its output lines that contain `needle`.
async fn time_tool(
    registry: &Registry,
    root: &Path,
    scratch: &Path,
    tool: &str,
    args: Value,
    needle: &str,
) -> (Duration, usize) {
    let mut samples = Vec::new();
    let mut lines = 0;
    for _ in 0..RUNS + 1 {
        let ctx = context(root, scratch);
        let start = Instant::now();
        let outcome = registry.execute(tool, ctx, args.clone()).await;
        samples.push(start.elapsed());
        assert!(!outcome.is_error, "{}", outcome.output);
        lines = outcome.output.lines().filter(|l| l.contains(needle)).count();
    }
    samples.remove(0);
    (median(samples), lines)
}

/// Median time of `rg` with `args`, and its output lines.
fn time_rg(args: &[&str]) -> (Duration, usize) {
    let mut samples = Vec::new();
    let mut lines = 0;
    for _ in 0..RUNS + 1 {
        let start = Instant::now();
        let output = Command::new("rg").args(args).output().unwrap();
        samples.push(start.elapsed());
        lines = String::from_utf8_lossy(&output.stdout).lines().count();
    }
    samples.remove(0);
    (median(samples), lines)
}

fn ratio(ours: Duration, theirs: Duration) -> f64 {
    ours.as_secs_f64() / theirs.as_secs_f64()
}

#[tokio::main]
async fn main() {
    if Command::new("rg").arg("--version").output().is_err() {
        println!("search bench skipped: `rg` (ripgrep) is not on PATH; install it to compare.");
        return;
    }
    let holder = match std::env::var("SEARCH_BENCH_DIR") {
        Ok(dir) => tempfile::tempdir_in(dir).unwrap(),
        Err(_) => tempfile::tempdir().unwrap(),
    };
    let root: PathBuf = holder.path().join("tree");
    let scratch = holder.path().join("scratch");
    let started = Instant::now();
    let files = build_tree(&root);
    println!("built {files} files in {:.1} s", started.elapsed().as_secs_f64());
    let registry = tinycode::builtin::registry();
    let root_text = root.display().to_string();

    let (ours, ours_lines) =
        time_tool(&registry, &root, &scratch, "grep", json!({"pattern": WORD}), WORD).await;
    let (rg, rg_lines) = time_rg(&["-n", WORD, &root_text]);
    assert_eq!(ours_lines, rg_lines, "both print every match");
    println!(
        "grep `{WORD}` over {files} files ({ours_lines} matches): tinycode {ours:?}, rg {rg:?}, ratio {:.2} (target <= 1.3)",
        ratio(ours, rg)
    );

    let (ours, ours_lines) =
        time_tool(&registry, &root, &scratch, "glob", json!({"pattern": "**/f42.txt"}), "f42.txt").await;
    let (rg, rg_lines) = time_rg(&["--files", "-g", "f42.txt", &root_text]);
    assert_eq!(ours_lines, rg_lines, "both list every match");
    println!(
        "glob `**/f42.txt` over {files} files ({ours_lines} paths): tinycode {ours:?}, rg --files -g {rg:?}, ratio {:.2} (target <= 1.3)",
        ratio(ours, rg)
    );
}
