//! Wire benchmark: `cargo bench --bench wire`. What the hardening of the editor's stream costs:
//! - the params type check: building the schemas (once, on the first request) and checking an `initialize` and a
//!   10 MB prompt (targets ≤ 20 ms once, ≤ 50 µs, ≤ 5 ms);
//! - routing a 10 MB line: a prompt (parsed once, as before) and garbage answered with a 1 KB echo (≤ 50 ms each);
//! - splitting 64 MB of 1 KB lines (≥ 500 MB/s).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use serde_json::json;
use tinycode::acp::frames::route;
use tinycode::acp::lines::{Line, LineReader};
use tinycode::acp::params::check;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn measure(runs: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let init = json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}, "clientInfo": {"name": "zed", "version": "1"}});
    let start = Instant::now();
    check("initialize", &init).unwrap();
    println!("first params check (builds every schema): {:?} (target <= 20 ms)", start.elapsed());
    println!(
        "initialize params check: median {:?} (target <= 50 µs)",
        measure(1_000, || check("initialize", &init).unwrap())
    );
    let image = "A".repeat(10 * 1024 * 1024);
    let prompt = json!({"sessionId": "s", "prompt": [{"type": "text", "text": "look"}, {"type": "image", "data": image, "mimeType": "image/png"}]});
    println!(
        "10 MB prompt params check: median {:?} (target <= 5 ms)",
        measure(20, || check("session/prompt", &prompt).unwrap())
    );

    let frame = json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": prompt})
        .to_string()
        .into_bytes();
    println!(
        "route a 10 MB prompt line: median {:?} (target <= 50 ms)",
        measure(10, || drop(route(Line::Whole(frame.clone()))))
    );
    let garbage = "garbage ".repeat(10 * 1024 * 1024 / 8).into_bytes();
    println!(
        "route a 10 MB garbage line: median {:?} (target <= 50 ms)",
        measure(10, || drop(route(Line::Whole(garbage.clone()))))
    );

    let lines: Vec<u8> = (0..64 * 1024).flat_map(|_| [vec![b'x'; 1023], vec![b'\n']].concat()).collect();
    let took = measure(5, || {
        let mut reader = LineReader::new(futures::io::BufReader::with_capacity(64 * 1024, &lines[..]));
        futures::executor::block_on(async { while reader.next().await.unwrap().is_some() {} });
    });
    println!(
        "split 64 MB of 1 KB lines: median {took:?}, {:.0} MB/s (target >= 500 MB/s)",
        64.0 / took.as_secs_f64()
    );
}
