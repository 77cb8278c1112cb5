//! The web tools: the SSRF matrix of the guarded client (every address spelling and range, private DNS answers,
//! redirects to the metadata address, to `file://`, to another host, eleven hops, a 6 MB body, a stalled body,
//! credentials, single-label hosts) and webfetch/websearch end to end through ACP. Only loopback servers are
//! ever contacted: names resolve through a test table, and the tests assert what the servers saw.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};
use tinycode::config::web::{PrivateHost, Search, WebSettings};
use tinycode::web::resolver::Table;
use tinycode::web::{Allowed, FetchError, Fetched, Fetcher, Limits, Page, Policy, Refusal, Request};

use super::turn::{finished, tool_result};
use crate::support::client::{Answer, Harness, Setup};
use crate::support::fake_model::{answer, calls};
use crate::support::web_server::{Answer as Serve, WebServer};

const FIVE_MB: usize = 5 * 1024 * 1024;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// A fetcher whose names resolve through a test table, allowed to reach `site.test` and `other.test` on the
/// server's port only (as a user's `allow_private` would).
fn fetcher(server: &WebServer, limits: Limits) -> Fetcher {
    let port = server.addr.port();
    let policy = Policy::new(vec![
        Allowed { host: "site.test".into(), port },
        Allowed { host: "other.test".into(), port },
    ]);
    let names = Table::default()
        .with("site.test", &[ip("127.0.0.1")])
        .with("other.test", &[ip("127.0.0.1")])
        .with("rebind.test", &[ip("127.0.0.1")])
        .with("metadata.test", &[ip("169.254.169.254")])
        .with("mixed.test", &[ip("8.8.8.8"), ip("10.0.0.1")])
        .with("intranet", &[ip("127.0.0.1")]);
    Fetcher::with(policy, Arc::new(names), limits).unwrap()
}

fn get(url: &str) -> Request {
    Request {
        url: url.parse().unwrap(),
        method: reqwest::Method::GET,
        headers: Default::default(),
        body: None,
    }
}

fn page(fetched: Fetched) -> Page {
    match fetched {
        Fetched::Page(page) => page,
        other => panic!("not a page: {other:?}"),
    }
}

/// A server with the routes the matrix needs.
async fn server() -> WebServer {
    WebServer::start(|seen| {
        let path = seen.path.as_str();
        if let Some(n) = path.strip_prefix("/hop/").and_then(|n| n.parse::<u32>().ok()) {
            return if n == 0 {
                Serve::ok("text/plain", "landed")
            } else {
                Serve::redirect(&format!("/hop/{}", n - 1))
            };
        }
        match path {
            "/ok" => Serve::ok("text/plain", "hello from loopback"),
            "/metadata" => Serve::redirect("http://169.254.169.254/latest/meta-data/"),
            "/mapped" => Serve::redirect("http://[::ffff:7f00:1]/"),
            "/file" => Serve::redirect("file:///etc/passwd"),
            "/big-chunked" => Serve::Chunked {
                content_type: "text/plain".into(),
                body: vec![b'a'; 6 * 1024 * 1024],
                chunk: 64 * 1024,
            },
            "/big-length" => Serve::ok("text/plain", vec![b'b'; 6 * 1024 * 1024]),
            "/stall" => {
                Serve::Stall { content_type: "text/plain".into(), length: 1000, first: b"partial".to_vec() }
            }
            other => Serve::status(404, "text/plain", &format!("no route {other}")),
        }
    })
    .await
}

#[tokio::test]
async fn the_allowed_loopback_host_is_fetched_and_every_other_way_to_it_is_refused_without_a_connection() {
    let s = server().await;
    let f = fetcher(&s, Limits::default());
    let port = s.addr.port();
    let fetched = page(f.fetch(get(&format!("http://site.test:{port}/ok"))).await.unwrap());
    assert_eq!((fetched.status.as_u16(), fetched.body.as_slice()), (200, b"hello from loopback".as_slice()));

    let v4 = || Refusal::PrivateAddress { host: "127.0.0.1".into(), range: "127.0.0.0/8, loopback" };
    let other_port = if port == u16::MAX { port - 1 } else { port + 1 };
    let cases: Vec<(String, Refusal)> = vec![
        (format!("http://127.0.0.1:{port}/ok"), v4()),
        (format!("http://2130706433:{port}/ok"), v4()),
        (format!("http://0x7f000001:{port}/ok"), v4()),
        (format!("http://0177.0.0.1:{port}/ok"), v4()),
        (format!("http://127.1:{port}/ok"), v4()),
        (format!("http://0x7f.0.0.1:{port}/ok"), v4()),
        (
            format!("http://[::1]:{port}/ok"),
            Refusal::PrivateAddress { host: "[::1]".into(), range: "::1, loopback" },
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/ok"),
            Refusal::PrivateAddress {
                host: "[::ffff:7f00:1]".into(),
                range: "IPv4-mapped IPv6 (::ffff:0:0/96) of a private IPv4 address",
            },
        ),
        (
            format!("http://[::127.0.0.1]:{port}/ok"),
            Refusal::PrivateAddress { host: "[::7f00:1]".into(), range: "::/96, IPv4-compatible IPv6" },
        ),
        (format!("http://localhost:{port}/ok"), Refusal::Localhost("localhost".into())),
        (format!("http://localhost.:{port}/ok"), Refusal::Localhost("localhost.".into())),
        (format!("http://site.localhost:{port}/ok"), Refusal::Localhost("site.localhost".into())),
        (format!("http://intranet:{port}/ok"), Refusal::SingleLabel("intranet".into())),
        (format!("http://user:secret@site.test:{port}/ok"), Refusal::Credentials),
        (format!("http://user@site.test:{port}/ok"), Refusal::Credentials),
        (format!("ftp://site.test:{port}/ok"), Refusal::Scheme("ftp".into())),
        (
            format!("http://site.test:{other_port}/ok"),
            Refusal::PortNotAllowed { host: "site.test".into(), port: other_port },
        ),
    ];
    for (url, refusal) in cases {
        assert_eq!(f.fetch(get(&url)).await, Err(FetchError::Refused(refusal)), "{url}");
    }
    assert_eq!(s.paths(), vec!["/ok"], "nothing but the allowed request reached the server");
}

#[tokio::test]
async fn every_range_of_the_seed_and_beyond_is_refused_as_a_literal_before_any_connection() {
    let s = server().await;
    let f = fetcher(&s, Limits::default());
    for (host, range) in [
        ("10.1.2.3", "10.0.0.0/8, private"),
        ("172.16.0.1", "172.16.0.0/12, private"),
        ("192.168.1.1", "192.168.0.0/16, private"),
        ("169.254.169.254", "169.254.0.0/16, link-local"),
        ("0.0.0.0", "0.0.0.0/8, this network"),
        ("100.64.0.1", "100.64.0.0/10, shared address space (CGNAT)"),
        ("224.0.0.251", "224.0.0.0/4, multicast"),
        ("255.255.255.255", "255.255.255.255, broadcast"),
        ("[::]", "::, unspecified"),
        ("[fc00::1]", "fc00::/7, unique local"),
        ("[fe80::1]", "fe80::/10, link-local"),
        ("[ff02::1]", "ff00::/8, multicast"),
        ("[64:ff9b::a9fe:a9fe]", "64:ff9b::/96, NAT64 of a private IPv4 address"),
    ] {
        assert_eq!(
            f.fetch(get(&format!("http://{host}/"))).await,
            Err(FetchError::Refused(Refusal::PrivateAddress { host: host.into(), range })),
            "{host}"
        );
    }
    assert!(s.seen().is_empty());
}

#[tokio::test]
async fn a_name_whose_dns_answer_is_private_is_refused_at_connect_time() {
    let s = server().await;
    let f = fetcher(&s, Limits::default());
    let port = s.addr.port();
    assert_eq!(
        f.fetch(get(&format!("http://rebind.test:{port}/ok"))).await,
        Err(FetchError::Refused(Refusal::PrivateAnswer {
            host: "rebind.test".into(),
            address: ip("127.0.0.1"),
            range: "127.0.0.0/8, loopback"
        }))
    );
    assert_eq!(
        f.fetch(get("http://metadata.test/latest/meta-data/")).await,
        Err(FetchError::Refused(Refusal::PrivateAnswer {
            host: "metadata.test".into(),
            address: ip("169.254.169.254"),
            range: "169.254.0.0/16, link-local"
        }))
    );
    // One private record among public ones refuses the name: the public one is never dialled either.
    assert_eq!(
        f.fetch(get("http://mixed.test/")).await,
        Err(FetchError::Refused(Refusal::PrivateAnswer {
            host: "mixed.test".into(),
            address: ip("10.0.0.1"),
            range: "10.0.0.0/8, private"
        }))
    );
    assert!(s.seen().is_empty(), "the loopback server was never reached: {:?}", s.paths());
}

#[tokio::test]
async fn redirects_to_the_metadata_address_or_a_mapped_loopback_are_refused_and_file_urls_are_not_followed() {
    let s = server().await;
    let f = fetcher(&s, Limits::default());
    let base = format!("http://site.test:{}", s.addr.port());
    assert_eq!(
        f.fetch(get(&format!("{base}/metadata"))).await,
        Err(FetchError::RedirectRefused {
            to: "http://169.254.169.254/latest/meta-data/".into(),
            refusal: Refusal::PrivateAddress {
                host: "169.254.169.254".into(),
                range: "169.254.0.0/16, link-local"
            }
        })
    );
    assert_eq!(
        f.fetch(get(&format!("{base}/mapped"))).await,
        Err(FetchError::RedirectRefused {
            to: "http://[::ffff:7f00:1]/".into(),
            refusal: Refusal::PrivateAddress {
                host: "[::ffff:7f00:1]".into(),
                range: "IPv4-mapped IPv6 (::ffff:0:0/96) of a private IPv4 address"
            }
        })
    );
    assert_eq!(
        f.fetch(get(&format!("{base}/file"))).await,
        Ok(Fetched::Redirect {
            from: format!("{base}/file").parse().unwrap(),
            to: "file:///etc/passwd".into(),
            refused: Some(Refusal::Scheme("file".into()))
        })
    );
    assert_eq!(s.paths(), vec!["/metadata", "/mapped", "/file"]);
}

#[tokio::test]
async fn a_redirect_to_another_host_is_reported_instead_of_followed() {
    let s = WebServer::start(|seen| match seen.path.as_str() {
        "/away" => Serve::redirect(&format!(
            "http://other.test:{}/there",
            seen.header("host").unwrap().rsplit(':').next().unwrap()
        )),
        _ => Serve::ok("text/plain", "there"),
    })
    .await;
    let f = fetcher(&s, Limits::default());
    let port = s.addr.port();
    assert_eq!(
        f.fetch(get(&format!("http://site.test:{port}/away"))).await,
        Ok(Fetched::Redirect {
            from: format!("http://site.test:{port}/away").parse().unwrap(),
            to: format!("http://other.test:{port}/there"),
            refused: None
        })
    );
    assert_eq!(s.paths(), vec!["/away"]);
}

#[tokio::test]
async fn ten_redirects_are_followed_and_the_eleventh_is_refused() {
    let s = server().await;
    let f = fetcher(&s, Limits::default());
    let base = format!("http://site.test:{}", s.addr.port());
    let landed = page(f.fetch(get(&format!("{base}/hop/10"))).await.unwrap());
    assert_eq!((landed.url.path(), landed.body.as_slice()), ("/hop/0", b"landed".as_slice()));
    assert_eq!(s.seen().len(), 11);
    assert_eq!(f.fetch(get(&format!("{base}/hop/11"))).await, Err(FetchError::TooManyRedirects(10)));
    let second: Vec<String> = s.paths().into_iter().skip(11).collect();
    let expected: Vec<String> = (1..=11).rev().map(|n| format!("/hop/{n}")).collect();
    assert_eq!(second, expected, "the eleventh hop was never requested");
}

#[tokio::test]
async fn a_six_megabyte_body_is_cut_at_five_while_streaming() {
    let s = server().await;
    let f = fetcher(&s, Limits::default());
    let base = format!("http://site.test:{}", s.addr.port());
    let chunked = page(f.fetch(get(&format!("{base}/big-chunked"))).await.unwrap());
    assert_eq!((chunked.body.len(), chunked.truncated, chunked.declared_length), (FIVE_MB, true, None));
    assert!(chunked.body.iter().all(|b| *b == b'a'));
    let declared = page(f.fetch(get(&format!("{base}/big-length"))).await.unwrap());
    assert_eq!(
        (declared.body.len(), declared.truncated, declared.declared_length),
        (FIVE_MB, true, Some(6 * 1024 * 1024))
    );
}

#[tokio::test]
async fn a_body_that_stalls_past_the_deadline_ends_in_a_timeout() {
    let s = server().await;
    // The production deadline is 30 s (a unit test holds the constant); this server never finishes, so a short
    // deadline proves the same thing without waiting.
    let limits = Limits { timeout: Duration::from_millis(300), ..Limits::default() };
    assert_eq!(Limits::default().timeout, Duration::from_secs(30));
    let f = fetcher(&s, limits);
    let started = std::time::Instant::now();
    let result = f.fetch(get(&format!("http://site.test:{}/stall", s.addr.port()))).await;
    assert_eq!(result, Err(FetchError::Timeout(Duration::from_millis(300))));
    assert!(started.elapsed() < Duration::from_secs(10), "the deadline covers the body");
}

// ---- end to end through ACP ----

fn settings(allowed: &[&WebServer], search: Option<&WebServer>) -> WebSettings {
    WebSettings {
        allow_private: allowed
            .iter()
            .map(|s| PrivateHost { host: "127.0.0.1".into(), port: s.addr.port() })
            .collect(),
        search: search.map(|s| Search { api_key: "exa-test-key".into(), url: s.url("/search") }),
    }
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/web/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn tool_names(h: &Harness, request: usize) -> Vec<String> {
    h.model.requests()[request].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_model_reads_a_page_as_markdown_after_the_user_allows_the_url() {
    let article = fixture("article.html");
    let site = WebServer::start(move |_| Serve::html(&article)).await;
    let url = site.url("/posts/ownership/");
    let h = Setup::new(vec![
        calls(&[("f1", "webfetch", &json!({"url": url}).to_string())]),
        answer(&["Read it."]),
    ])
    .registry(tinycode::builtin::registry_with(&settings(&[&site], None)))
    .start()
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "read the post").await.unwrap();

    let asks = h.client.log.permission_requests.lock().unwrap().clone();
    assert_eq!(asks.len(), 1);
    let call = serde_json::to_value(&asks[0]).unwrap()["toolCall"].clone();
    assert_eq!(call["title"], json!(format!("Fetch {url}")));
    assert_eq!(call["kind"], "fetch");
    assert_eq!(call["content"], json!([{"type": "content", "content": {"type": "text", "text": url}}]));
    let result = tool_result(&h.model.messages(1), "f1");
    let expected_start = format!(
        "URL: {url}\nTitle: Understanding Ownership in Rust | The Systems Blog\n\n# Understanding Ownership in Rust\n\nBy Ada Example on 3 February 2025\n\n"
    );
    assert!(result.starts_with(&expected_start), "{result}");
    assert!(result.contains("```rust\nfn main() {"), "{result}");
    assert!(result.contains("| One owner | Each value is dropped exactly once |"), "{result}");
    assert!(
        result.ends_with(&format!(
            "Read the [follow-up post on lifetimes]({}) next.",
            site.url("/posts/lifetimes/")
        )),
        "{result}"
    );
    assert!(!result.contains("Popular posts") && !result.contains("Subscribe"), "{result}");
    assert_eq!(site.seen().len(), 1);
    assert_eq!(
        site.seen()[0].header("accept"),
        Some("text/markdown;q=1.0, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1")
    );
    assert_eq!(finished(&h.transcript(&session), "f1")["status"], "completed");
    h.model.assert_done();
}

#[tokio::test]
async fn a_private_address_is_refused_without_an_ask_and_without_a_connection() {
    let allowed = WebServer::start(|_| Serve::ok("text/plain", "fine")).await;
    let private = WebServer::start(|_| Serve::ok("text/plain", "secret")).await;
    let h = Setup::new(vec![
        calls(&[
            ("f1", "webfetch", &json!({"url": private.url("/admin")}).to_string()),
            ("f2", "webfetch", &json!({"url": "http://169.254.169.254/latest/meta-data/"}).to_string()),
        ]),
        answer(&["Refused."]),
    ])
    .registry(tinycode::builtin::registry_with(&settings(&[&allowed], None)))
    .start()
    .await;
    let session = h.session().await;
    h.client.prompt(&session, "fetch the admin page").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "f1"),
        "Refused: 127.0.0.1 is a private address (127.0.0.0/8, loopback). Nothing was fetched."
    );
    assert_eq!(
        tool_result(&h.model.messages(1), "f2"),
        "Refused: 169.254.169.254 is a private address (169.254.0.0/16, link-local). Nothing was fetched."
    );
    assert!(h.client.log.permission_requests.lock().unwrap().is_empty(), "the user was not bothered");
    assert!(private.seen().is_empty() && allowed.seen().is_empty());
    assert_eq!(finished(&h.transcript(&session), "f1")["status"], "failed");
}

#[tokio::test]
async fn always_allow_is_remembered_for_the_host_and_plan_mode_may_fetch() {
    let site = WebServer::start(|seen| Serve::ok("text/plain", format!("page {}", seen.path))).await;
    let h = Setup::new(vec![
        calls(&[("f1", "webfetch", &json!({"url": site.url("/a")}).to_string())]),
        calls(&[("f2", "webfetch", &json!({"url": site.url("/b?x=1")}).to_string())]),
        answer(&["Both read."]),
    ])
    .registry(tinycode::builtin::registry_with(&settings(&[&site], None)))
    .start()
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "plan")).await.unwrap();
    h.client.prompt(&session, "read both").await.unwrap();
    assert_eq!(
        h.client.log.permission_requests.lock().unwrap().len(),
        1,
        "the second call to the host was not asked"
    );
    assert_eq!(tool_result(&h.model.messages(1), "f1"), format!("URL: {}\n\npage /a", site.url("/a")));
    assert_eq!(
        tool_result(&h.model.messages(2), "f2"),
        format!("URL: {}\n\npage /b?x=1", site.url("/b?x=1"))
    );
    assert_eq!(site.paths(), vec!["/a", "/b?x=1"]);
}

#[tokio::test]
async fn a_second_fetch_of_the_same_page_comes_from_the_cache() {
    let site = WebServer::start(|_| Serve::ok("text/plain", "once")).await;
    let args = json!({"url": site.url("/same")}).to_string();
    let h = Setup::new(vec![
        calls(&[("f1", "webfetch", &args)]),
        calls(&[("f2", "webfetch", &args)]),
        answer(&["ok"]),
    ])
    .registry(tinycode::builtin::registry_with(&settings(&[&site], None)))
    .start()
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "twice").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(2), "f2"), tool_result(&h.model.messages(1), "f1"));
    assert_eq!(site.seen().len(), 1);
    let raw: Vec<Value> = h
        .client
        .updates(&session)
        .into_iter()
        .filter(|u| u["toolCallId"] == "f2" && u.get("rawOutput").is_some())
        .map(|u| u["rawOutput"]["cached"].clone())
        .collect();
    assert_eq!(raw, vec![json!(true)]);
}

async fn exa(status: u16, body: Value) -> WebServer {
    WebServer::start(move |_| Serve::Page {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
    })
    .await
}

#[tokio::test]
async fn websearch_is_offered_only_with_a_key_and_returns_the_services_results() {
    let without = Harness::start(vec![answer(&["no search"])]).await;
    let session = without.session().await;
    without.client.prompt(&session, "hi").await.unwrap();
    assert!(tool_names(&without, 0).contains(&"webfetch".to_string()));
    assert!(!tool_names(&without, 0).contains(&"websearch".to_string()));

    let service = exa(
        200,
        json!({"requestId": "r1", "results": [
            {"title": "Tokio", "url": "https://tokio.rs/", "publishedDate": "2025-01-02T00:00:00.000Z", "highlights": ["An asynchronous runtime for Rust."]},
            {"title": "Blocked", "url": "https://spam.example/tokio", "highlights": ["buy"]},
            {"title": "tokio - docs.rs", "url": "https://docs.rs/tokio", "text": "A runtime for writing reliable network applications."}
        ]}),
    )
    .await;
    let args =
        json!({"query": "tokio runtime", "num_results": 3, "exclude_domains": ["spam.example"]}).to_string();
    let h = Setup::new(vec![calls(&[("s1", "websearch", &args)]), answer(&["Found."])])
        .registry(tinycode::builtin::registry_with(&settings(&[], Some(&service))))
        .start()
        .await;
    let session = h.session().await;
    h.client.prompt(&session, "search").await.unwrap();
    assert!(tool_names(&h, 0).contains(&"websearch".to_string()));
    assert_eq!(
        tool_result(&h.model.messages(1), "s1"),
        "2 results for \"tokio runtime\":\n\n1. Tokio\n   https://tokio.rs/\n   Published: 2025-01-02\n   An asynchronous runtime for Rust.\n\n2. tokio - docs.rs\n   https://docs.rs/tokio\n   A runtime for writing reliable network applications."
    );
    assert!(h.client.log.permission_requests.lock().unwrap().is_empty(), "a search is a read");
    let seen = service.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].method.as_str(), seen[0].path.as_str()), ("POST", "/search"));
    assert_eq!(seen[0].header("x-api-key"), Some("exa-test-key"));
    assert_eq!(
        serde_json::from_str::<Value>(&seen[0].body).unwrap(),
        json!({"query": "tokio runtime", "numResults": 3, "type": "auto", "contents": {"highlights": {"maxCharacters": 400}}, "excludeDomains": ["spam.example"]})
    );
}

#[tokio::test]
async fn an_error_from_the_search_service_is_told_to_the_model() {
    let service = exa(401, json!({"error": "Invalid API key"})).await;
    let h =
        Setup::new(vec![calls(&[("s1", "websearch", r#"{"query": "x"}"#)]), answer(&["The key is wrong."])])
            .registry(tinycode::builtin::registry_with(&settings(&[], Some(&service))))
            .start()
            .await;
    let session = h.session().await;
    h.client.prompt(&session, "search").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "s1"),
        "Error: the search service answered HTTP 401: Invalid API key. Do not retry the same search."
    );
    assert_eq!(finished(&h.transcript(&session), "s1")["status"], "failed");
}
