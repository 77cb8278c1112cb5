//! webfetch end to end: `cargo bench --bench web`.
//! A 1 MB HTML article (navigation, sections with paragraphs, code blocks, tables and lists) served by a
//! loopback server, fetched through the whole tool flow (argument checks, the URL guard, the guarded client,
//! Readability, HTML → Markdown, the output preview). Each run asks for a new URL, so the cache never answers;
//! a cached fetch is measured on its own. Target: ≤ 30 ms for the uncached fetch.
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

fn page() -> String {
    let mut body = String::from(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Request handling guide</title>
<script>window.analytics = {};</script><style>body{font-family:sans-serif}</style></head><body>
<header><nav><ul><li><a href="/">Home</a></li><li><a href="/docs/">Docs</a></li><li><a href="/blog/">Blog</a></li></ul></nav></header>
<main><article><h1>Request handling guide</h1>"#,
    );
    let mut i = 0;
    while body.len() < 1024 * 1024 - 200 {
        body.push_str(&section(i));
        i += 1;
    }
    body.push_str("</article></main><footer><p>© 2025 Example</p></footer></body></html>");
    body
}

#[tokio::main]
async fn main() {
    let html = page();
    let size = html.len();
    let server = WebServer::start(move |_| Answer::html(&html)).await;
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
    for n in 1..=RUNS {
        let start = Instant::now();
        let outcome = registry.execute("webfetch", context(), fetch(n)).await;
        uncached.push(start.elapsed());
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
    println!(
        "webfetch of a {:.2} MB HTML page from a loopback server, end to end through the tool: median {:?}, p95 {:?} (target <= 30 ms)",
        size as f64 / 1_048_576.0,
        median(uncached.clone()),
        p95(uncached)
    );
    println!(
        "the same fetch answered from the cache: median {:?}, p95 {:?}",
        median(cached.clone()),
        p95(cached)
    );
}
