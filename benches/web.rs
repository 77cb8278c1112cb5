//! webfetch end to end: `cargo bench --bench web`.
//! A 1 MB HTML article (navigation, sections with paragraphs, code blocks, tables and lists) served by a
//! loopback server, fetched through the whole tool flow (argument checks, the URL guard, the guarded client,
//! main content, HTML → Markdown, the output preview with the full text saved). Each run asks for a new URL, so
//! the cache never answers; a cached fetch and a page that needs Readability are measured on their own. Wall
//! time and the process's CPU time are both printed (CPU time is what a busy machine does not inflate).
//! Target: ≤ 30 ms for the uncached fetch.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[path = "../tests/support/web_server.rs"]
mod web_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tinycode::bus::Bus;
use tinycode::config::web::{PrivateHost, WebSettings};
use tinycode::shell::tasks::Tasks;
use tinycode::tool::Context;
use tinycode::workspace::files::{FileLocks, Files};
use tokio_util::sync::CancellationToken;
use web_server::{Answer, WebServer};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn p95(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() * 95 / 100]
}

/// One section of the article: a heading, prose with links, a code block, a table and a list.
fn section(i: usize) -> String {
    format!(
        r#"<h2 id="s{i}">Section {i}: handling requests</h2>
<p>Every handler receives a <a href="/docs/request">request</a> and returns a <em>response</em>. Section {i} shows how
the pipeline validates the payload, logs what it did and reports errors to the caller without losing context.</p>
<p>When the payload is malformed the handler answers <code>400</code>; when a dependency fails it retries with
backoff, as described in <a href="https://example.org/retries#s{i}">the retry guide</a>.</p>
<pre><code class="language-rust">fn handler_{i}(request: &amp;Request) -&gt; Result&lt;Response, Error&gt; {{
    let payload = request.body()?;
    let parsed = parse_payload(payload, {i})?;
    Ok(Response::new(process(parsed)))
}}
</code></pre>
<table><thead><tr><th>Status</th><th>Meaning</th><th>Retry</th></tr></thead>
<tbody><tr><td>200</td><td>handled</td><td>no</td></tr><tr><td>400</td><td>bad payload</td><td>no</td></tr>
<tr><td>503</td><td>dependency down</td><td>yes</td></tr></tbody></table>
<ul><li>Validate first.</li><li>Log with the request id {i}.</li><li>Never swallow an error.</li></ul>
"#
    )
}

/// About 1 MB of article. `marked` pages wrap it in `<main><article>`; the others in plain `<div>`s, so the
/// main content must be found by Readability.
fn page(marked: bool) -> String {
    let (open, close) = if marked {
        ("<main><article>", "</article></main>")
    } else {
        ("<div id=\"wrap\"><div class=\"content\">", "</div></div>")
    };
    let mut body = format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Request handling guide</title>
<script>window.analytics = {{}};</script><style>body{{font-family:sans-serif}}</style></head><body>
<header><nav><ul><li><a href="/">Home</a></li><li><a href="/docs/">Docs</a></li><li><a href="/blog/">Blog</a></li></ul></nav></header>
{open}<h1>Request handling guide</h1>"#
    );
    let mut i = 0;
    while body.len() < 1024 * 1024 - 200 {
        body.push_str(&section(i));
        i += 1;
    }
    body.push_str(close);
    body.push_str("<footer><p>© 2025 Example</p></footer></body></html>");
    body
}

/// CPU time of the whole process (every thread, the loopback server's included).
fn cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

#[tokio::main]
async fn main() {
    let (marked, plain) = (page(true), page(false));
    let size = marked.len();
    let server = WebServer::start(move |seen| {
        Answer::html(if seen.path.starts_with("/plain") { &plain } else { &marked })
    })
    .await;
    let web = WebSettings {
        allow_private: vec![PrivateHost { host: "127.0.0.1".into(), port: server.addr.port() }],
        search: None,
    };
    let registry = tinycode::builtin::registry_with(&web);
    let dir = tempfile::tempdir().unwrap();
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
        diagnostics: None,
        terminals: None,
        control: Default::default(),
        subagents: None,
        edit_mode: Default::default(),
    };
    let fetch = |n: usize| json!({"url": server.url(&format!("/guide?run={n}"))});

    // Warm up: builds the client, opens the connection, fills the allocator.
    let first = registry.execute("webfetch", context(), fetch(0)).await;
    assert!(!first.is_error, "{}", first.output);
    assert!(
        first.output.contains("```rust\nfn handler_3(request: &Request)"),
        "code blocks keep their language"
    );
    assert!(first.output.contains("| 503 | dependency down | yes |"), "tables survive");

    const RUNS: usize = 50;
    let mut uncached = Vec::new();
    let mut uncached_cpu = Vec::new();
    for n in 1..=RUNS {
        let (start, start_cpu) = (Instant::now(), cpu());
        let outcome = registry.execute("webfetch", context(), fetch(n)).await;
        uncached.push(start.elapsed());
        uncached_cpu.push(cpu() - start_cpu);
        assert!(!outcome.is_error);
    }
    let mut cached = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let outcome = registry.execute("webfetch", context(), fetch(RUNS)).await;
        cached.push(start.elapsed());
        assert!(!outcome.is_error);
    }
    assert_eq!(server.seen().len(), RUNS + 1, "the cached runs sent nothing");

    let plain = |n: usize| json!({"url": server.url(&format!("/plain?run={n}"))});
    let first = registry.execute("webfetch", context(), plain(0)).await;
    assert!(first.output.contains("```rust\nfn handler_3(request: &Request)"), "Readability kept the code");
    let mut readability = Vec::new();
    let mut readability_cpu = Vec::new();
    for n in 1..=RUNS / 2 {
        let (start, start_cpu) = (Instant::now(), cpu());
        let outcome = registry.execute("webfetch", context(), plain(n)).await;
        readability.push(start.elapsed());
        readability_cpu.push(cpu() - start_cpu);
        assert!(!outcome.is_error);
    }
    println!(
        "webfetch of a {:.2} MB HTML page (<main><article>) from a loopback server, end to end through the tool: median {:?}, p95 {:?}; process CPU median {:?} (target <= 30 ms)",
        size as f64 / 1_048_576.0,
        median(uncached.clone()),
        p95(uncached),
        median(uncached_cpu),
    );
    println!(
        "the same page without <main>/<article> (main content found by Readability): median {:?}, p95 {:?}; process CPU median {:?}",
        median(readability.clone()),
        p95(readability),
        median(readability_cpu),
    );
    println!(
        "the same fetch answered from the cache: median {:?}, p95 {:?}",
        median(cached.clone()),
        p95(cached)
    );
}
