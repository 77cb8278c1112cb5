//! `discover` on a generated 20,000-file tree: `cargo bench --bench discover`. Target: ≤ 300 ms per query (warm
//! page cache, the whole pipeline: walk, content pre-scan, symbols of 150 candidates, ranking, report).
//! The tree mixes Rust, Python, TypeScript, Go, Java, Markdown and JSON files of 1–8 KB with a few dozen
//! authentication and database files among them; `DISCOVER_BENCH_ROOT=/some/dir` maps that tree instead
//! (the generated one is written there first when it does not exist).
//! Prints the median and p95 of 20 runs per query, the walk's share, the CPU time (user + system, all threads:
//! meaningful when other work shares the cores), and what the last run walked, scanned and read.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tinycode::builtin::discover::engine::{self, Deadline, Limits};
use tinycode::builtin::discover::{report, terms, walk_sources};

const FILES: usize = 20_000;
const RUNS: usize = 20;
const WORDS: &[&str] = &[
    "parse", "render", "buffer", "fetch", "compute", "layout", "widget", "stream", "encode", "decode",
    "index", "matrix", "vector", "window", "frame", "codec", "pixel", "signal", "filter", "reduce", "merge",
    "split", "config", "error", "request", "response", "handler", "cache", "queue", "worker",
];

/// A tiny deterministic generator (xorshift), so every run maps the same tree.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn word(&mut self) -> &'static str {
        WORDS[(self.next() % WORDS.len() as u64) as usize]
    }
}

fn body(rng: &mut Rng, ext: &str, special: Option<&str>) -> String {
    let mut out = String::new();
    let target = 1_000 + (rng.next() % 7_000) as usize;
    let mut n = 0;
    while out.len() < target {
        let (a, b) = (rng.word(), rng.word());
        let name = match special {
            Some(topic) if n % 3 == 0 => format!("{topic}_{a}"),
            _ => format!("{a}_{b}_{n}"),
        };
        let _ = match ext {
            "rs" => writeln!(
                out,
                "pub fn {name}(input: &str) -> usize {{\n    let {b} = input.len();\n    {b} * 2\n}}\n"
            ),
            "py" => writeln!(out, "def {name}(value):\n    {b} = value * 2\n    return {b}\n"),
            "ts" => writeln!(
                out,
                "export function {name}(value: number): number {{\n  const {b} = value * 2;\n  return {b};\n}}\n"
            ),
            "go" => writeln!(out, "func {name}(value int) int {{\n\t{b} := value * 2\n\treturn {b}\n}}\n"),
            "java" => writeln!(
                out,
                "  public int {name}(int value) {{\n    int {b} = value * 2;\n    return {b};\n  }}\n"
            ),
            "md" => writeln!(out, "## {a} {b}\n\nThe {a} step feeds the {b} stage of {name}.\n"),
            _ => writeln!(out, "{{\"{name}\": \"{a} {b}\"}},"),
        };
        n += 1;
    }
    out
}

fn generate(root: &Path) {
    let mut rng = Rng(0x5eed_1234_abcd_9876);
    let exts = ["rs", "py", "ts", "go", "java", "md", "json", "rs", "ts", "py"];
    for i in 0..FILES {
        let ext = exts[i % exts.len()];
        let special = match i % 500 {
            7 => Some("auth"),
            13 => Some("login_session"),
            21 => Some("database_schema"),
            _ => None,
        };
        let dir = match special {
            Some("auth") => format!("services/auth/v{}", i % 4),
            Some("database_schema") => format!("services/db/migrations/m{}", i % 3),
            _ => format!("pkg{}/mod{}/part{}", i % 25, (i / 25) % 16, (i / 400) % 5),
        };
        let name = format!("{}_{i}.{ext}", rng.word());
        let path = root.join(dir).join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body(&mut rng, ext, special)).unwrap();
    }
}

/// CPU time of this process so far (user + system, all threads): a figure that stays meaningful when other
/// work shares the cores.
fn cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let scratch = tempfile::tempdir().unwrap();
    let root = match std::env::var("DISCOVER_BENCH_ROOT") {
        Ok(root) => PathBuf::from(root),
        Err(_) => scratch.path().join("tree"),
    };
    if !root.exists() {
        let start = Instant::now();
        generate(&root);
        println!("generated {FILES} files in {:.1} s", start.elapsed().as_secs_f64());
    }
    for query in [
        "where is authentication handled",
        "database schema and migrations",
        "ToolRetryError propagation in the render loop",
    ] {
        let terms = terms::extract(query);
        let (mut times, mut walks, mut cpus) = (Vec::new(), Vec::new(), Vec::new());
        let mut last = None;
        for _ in 0..=RUNS {
            let (start, cpu_start) = (Instant::now(), cpu());
            let deadline = Deadline::default();
            let found =
                walk_sources(&root, &tinycode::workspace::ignore_rules::Stack::plain(&root), &deadline.token);
            walks.push(start.elapsed());
            let findings = engine::discover(&root, found, &terms, &Limits::default(), &deadline);
            let text = report::render(query, ".", &findings);
            times.push(start.elapsed());
            cpus.push(cpu() - cpu_start);
            last = Some((findings, text));
        }
        for series in [&mut times, &mut walks, &mut cpus] {
            series.remove(0);
            series.sort();
        }
        let (findings, text) = last.unwrap();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{query:?}: median {:.1} ms, p95 {:.1} ms (walk {:.1} ms; CPU {:.1} ms, all threads); {} walked, {} scanned, {} read, {} relevant; report {} lines",
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.95)),
            ms(percentile(&walks, 0.5)),
            ms(percentile(&cpus, 0.5)),
            findings.walked,
            findings.prescanned,
            findings.read,
            findings.hits.len(),
            text.lines().count()
        );
    }
}
