//! Fuzzing inside `cargo test`: proptest at a fixed seed and case budget, so CI runs the same cases every time,
//! after the seeds kept in `tests/fuzz/corpus/<target>/`. `TINYCODE_FUZZ_SCALE=N` runs N times the budget and
//! `TINYCODE_FUZZ_SEED=S` another seed, for longer runs by hand; a failure is shrunk and printed with its input.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Map, Value};

/// The seed CI runs with ("tinycode" in ASCII).
pub const SEED: u64 = 0x7469_6e79_636f_6465;

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// A runner for `cases` generated inputs (times `TINYCODE_FUZZ_SCALE`).
pub fn runner(cases: u32) -> TestRunner {
    let scale = env_number("TINYCODE_FUZZ_SCALE").unwrap_or(1) as u32;
    TestRunner::new(Config {
        cases: cases.saturating_mul(scale.max(1)),
        rng_seed: RngSeed::Fixed(env_number("TINYCODE_FUZZ_SEED").unwrap_or(SEED)),
        failure_persistence: None,
        max_shrink_iters: 512,
        ..Config::default()
    })
}

/// The corpus files of `target`, by name, in name order.
pub fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/corpus").join(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no corpus at {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the {target} corpus is empty");
    files
}

/// Run `check` on every seed, then on `cases` generated inputs. Returns how many inputs ran; panics with the
/// (shrunk) failing input otherwise.
pub fn fuzz<S: Strategy>(
    target: &str,
    seeds: Vec<S::Value>,
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), String>,
) -> u64
where
    S::Value: std::fmt::Debug + Clone,
{
    let ran = AtomicU64::new(0);
    for seed in seeds {
        ran.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = check(seed.clone()) {
            panic!("{target}: corpus seed failed: {e}\ninput: {seed:?}");
        }
    }
    let result = runner(cases).run(&strategy, |input| {
        ran.fetch_add(1, Ordering::Relaxed);
        check(input).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{target}: {e}");
    }
    let ran = ran.into_inner();
    eprintln!("fuzz {target}: {ran} inputs, 0 failures");
    ran
}

/// `count` values drawn from `strategy` at the fixed seed (to drive something that is not a closure).
pub fn sample<S: Strategy>(strategy: &S, count: usize) -> Vec<S::Value> {
    let mut runner = runner(1);
    (0..count).map(|_| strategy.new_tree(&mut runner).unwrap().current()).collect()
}

/// Keys that ACP messages and tool arguments use, so random objects hit real fields as well as unknown ones.
const KEYS: &[&str] = &[
    "protocolVersion",
    "clientCapabilities",
    "clientInfo",
    "fs",
    "readTextFile",
    "terminal",
    "_meta",
    "cwd",
    "mcpServers",
    "sessionId",
    "prompt",
    "type",
    "text",
    "data",
    "uri",
    "name",
    "cursor",
    "configId",
    "value",
    "modeId",
    "file_path",
    "content",
    "old_string",
    "new_string",
    "pattern",
    "command",
    "todos",
];

/// Any JSON value, nested up to `depth`, with keys from [`KEYS`] or random.
pub fn json_value(depth: u32) -> impl Strategy<Value = Value> + Clone {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

pub fn key() -> impl Strategy<Value = String> + Clone {
    use proptest::prelude::*;
    prop_oneof![3 => proptest::sample::select(KEYS).prop_map(String::from), 1 => "[a-zA-Z_]{0,10}"]
}

/// Short strings of every kind: empty, ASCII with punctuation, control characters, any Unicode.
pub fn text() -> impl Strategy<Value = String> + Clone {
    use proptest::prelude::*;
    prop_oneof![
        Just(String::new()),
        "[ -~]{0,24}",
        "[\\x00-\\x1f\"\\\\/]{0,8}",
        any::<String>().prop_map(|s| s.chars().take(24).collect()),
    ]
}
