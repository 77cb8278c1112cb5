#![allow(clippy::unwrap_used, clippy::print_stdout)]
use std::time::Duration;
struct Instant(Duration);
impl Instant {
    fn now() -> Self { Instant(cpu()) }
    fn elapsed(&self) -> Duration { cpu() - self.0 }
}
fn cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
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


fn main() {
    let html = page();
    let url = url::Url::parse("http://127.0.0.1:1/guide").unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let doc = dom_query::Document::from(html.as_str());
        let parse = t.elapsed();
        let t = Instant::now();
        let cfg = dom_smoothie::Config { keep_classes: true, ..Default::default() };
        let mut r = dom_smoothie::Readability::with_document(doc, Some(url.as_str()), Some(cfg)).unwrap();
        let a = r.parse().unwrap();
        let read = t.elapsed();
        let t = Instant::now();
        let opts = mdka::options::ConversionOptions::default().preserve_ids(false).drop_interactive_shell(true);
        let md = mdka::html_to_markdown_with(&a.content, &opts);
        let m = t.elapsed();
        let t = Instant::now();
        let md2 = mdka::html_to_markdown_with(&html, &opts);
        let mfull = t.elapsed();
        let t = Instant::now();
        let doc = dom_query::Document::from(html.as_str());
        let cfg = dom_smoothie::Config { keep_classes: true, text_mode: dom_smoothie::TextMode::Markdown, ..Default::default() };
        let mut r = dom_smoothie::Readability::with_document(doc, Some(url.as_str()), Some(cfg)).unwrap();
        let a2 = r.parse().unwrap();
        let smd = t.elapsed();
        let t = Instant::now();
        let doc = dom_query::Document::from(html.as_str());
        let p1 = t.elapsed();
        let sel = doc.select("article");
        let md3 = sel.nodes()[0].md(None);
        let direct = t.elapsed();
        println!("parse {p1:?} parse+article md {direct:?} len {}", md3.len());
        println!("smoothie markdown total {smd:?} len {}", a2.text_content.len());
        if std::env::args().count() > 1 { println!("{}", &a2.text_content[..3000]); }
        let t = Instant::now();
        let c = tinycode::web::convert::html(&html, &url, tinycode::web::convert::Format::Markdown);
        let all = t.elapsed();
        println!("parse {parse:?} readability {read:?} mdka(content) {m:?} mdka(full) {mfull:?} convert::html {all:?} md {} {} {}", md.len(), md2.len(), c.text.len());
    }
}
