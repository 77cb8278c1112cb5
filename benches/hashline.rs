//! Hashline edit benchmark: `cargo bench --bench hashline`.
//! A 10,000-line file; one `replace` by reference, and an `edits` list of ten operations spread over the file:
//! checking every reference against the current text, applying, and the diff and new references the result
//! carries. Target: ≤ 5 ms per edit. Also the whole tool call (preview, write to disk, result) for reference.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tinycode::builtin::hashline::apply::{self, Kind, Op};
use tinycode::builtin::hashline::{report, tags};
use tinycode::bus::Bus;
use tinycode::config::EditMode;
use tinycode::shell::tasks::Tasks;
use tinycode::tool::Context;
use tinycode::workspace::files::{FileLocks, Files};
use tokio_util::sync::CancellationToken;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn measure(runs: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    f();
    let samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    let max = *samples.iter().max().unwrap();
    (median(samples), max)
}

fn reference(text: &str, line: usize) -> String {
    format!("{line}:{}", tags::hash(tags::split_lines(text)[line - 1]))
}

#[tokio::main]
async fn main() {
    let source: String = (0..10_000)
        .map(|i| format!("    let value_{i} = compute(alpha, beta, {i}); // line {i}\n"))
        .collect();
    let path = std::path::Path::new("/w/big.rs");
    let one = vec![Op {
        kind: Kind::Replace { line: reference(&source, 5_000) },
        new: "    let changed = 1;".into(),
    }];
    let (single, single_max) = measure(50, || {
        let applied = apply::apply(&source, &one).unwrap();
        let out = report(path, "big.rs", &source, &applied.text, &applied.summaries);
        assert!(out.contains("+    let changed = 1;"));
    });
    let many: Vec<Op> = (1..=10)
        .map(|k| Op {
            kind: Kind::Replace { line: reference(&source, k * 900) },
            new: format!("    // edit {k}"),
        })
        .collect();
    let (list, list_max) = measure(50, || {
        let applied = apply::apply(&source, &many).unwrap();
        report(path, "big.rs", &source, &applied.text, &applied.summaries);
    });

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.rs");
    let registry = tinycode::builtin::registry();
    let files = Arc::new(Files::new(
        vec![dir.path().to_path_buf()],
        None,
        Arc::new(FileLocks::default()),
        Default::default(),
    ));
    let context = || Context {
        session_id: "bench".into(),
        call_id: "c".into(),
        directory: dir.path().to_path_buf(),
        perms: None,
        bus: Bus::new(),
        subagent_depth: 0,
        after_hook: None,
        cancel: CancellationToken::new(),
        output_dir: dir.path().join("out"),
        progress: None,
        files: files.clone(),
        plan: None,
        tasks: Arc::new(Tasks::new(dir.path().join("tasks"))),
        terminals: None,
        control: Default::default(),
        edit_mode: EditMode::Hashline,
    };
    let mut samples = Vec::new();
    for i in 0..31 {
        std::fs::write(&file, &source).unwrap();
        let read = registry.execute("read", context(), json!({"file_path": file, "limit": 1})).await;
        assert!(!read.is_error, "{}", read.output);
        let args = json!({"filepath": file, "operation": "replace", "line": reference(&source, 5_000), "new": format!("    let changed = {i};")});
        let start = Instant::now();
        let outcome = registry.execute("hashline_edit", context(), args).await;
        samples.push(start.elapsed());
        assert!(!outcome.is_error, "{}", outcome.output);
    }
    samples.remove(0);
    let call = median(samples);

    println!(
        "hashline replace on 10,000 lines (check, apply, diff): median {single:?}, max {single_max:?} (target <= 5 ms)"
    );
    println!("hashline edits list of 10 on 10,000 lines: median {list:?}, max {list_max:?} (target <= 5 ms)");
    println!("hashline_edit tool call on 10,000 lines (preview, atomic write, result): median {call:?}");
}
