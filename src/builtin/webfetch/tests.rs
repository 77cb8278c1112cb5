//! The webfetch tool's arguments, permission pattern and rendering, without a network (the fetches themselves
//! are tested against loopback servers in `tests/suite/web.rs`).

use reqwest::StatusCode;

use super::*;

fn page(content_type: Option<&str>, body: &[u8]) -> Page {
    Page {
        url: Url::parse("https://example.com/a").unwrap(),
        status: StatusCode::OK,
        content_type: content_type.map(str::to_string),
        declared_length: Some(body.len() as u64),
        body: body.to_vec(),
        truncated: false,
    }
}

#[test]
fn arguments_default_to_a_markdown_get_and_bad_ones_are_errors_the_model_can_fix() {
    let plan = parse(&json!({"url": " https://Example.com/x "})).unwrap();
    assert_eq!(plan.request.url.as_str(), "https://example.com/x");
    assert_eq!(plan.request.method, Method::GET);
    assert_eq!(plan.format, Format::Markdown);
    assert_eq!(plan.request.headers.get(ACCEPT).unwrap(), accept(Format::Markdown));
    assert_eq!(plan.request.body, None);

    let plan = parse(&json!({"url": "https://example.com/", "method": "post", "body": "{}", "format": "TEXT", "headers": {"Accept": "application/json", "X-Token": "t"}}))
        .unwrap();
    assert_eq!((plan.request.method.as_str(), plan.format), ("POST", Format::Text));
    assert_eq!(plan.request.headers.get(ACCEPT).unwrap(), "application/json", "the model's Accept wins");
    assert_eq!(plan.request.headers.get("x-token").unwrap(), "t");
    assert_eq!(plan.cache_key(), None, "a POST is never cached");

    let error = |args: Value| match parse(&args) {
        Err(e) => e,
        Ok(_) => panic!("{args} parsed"),
    };
    assert_eq!(
        error(json!({"url": "example.com/page"})),
        ToolError::retry(
            "`url` must be an absolute http or https URL (`example.com/page`: relative URL without a base)"
        )
    );
    assert_eq!(
        error(json!({"url": "https://a.example/", "method": "TRACE"})),
        ToolError::retry("`method` must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, got `TRACE`")
    );
    assert_eq!(
        error(json!({"url": "https://a.example/", "format": "pdf"})),
        ToolError::retry("`format` must be markdown, text or html, got `pdf`")
    );
    assert_eq!(
        error(json!({"url": "https://a.example/", "headers": ["a"]})),
        ToolError::retry("`headers` must be an object of strings, got [\"a\"]")
    );
    assert_eq!(
        error(json!({"url": "https://a.example/", "headers": {"bad name": "x"}})),
        ToolError::retry("`bad name` is not a valid header name")
    );
    assert_eq!(
        error(json!({"url": "https://a.example/", "headers": {"x-a": "line\nbreak"}})),
        ToolError::retry("the value of header `x-a` is not valid")
    );
}

#[test]
fn the_cache_key_separates_formats_and_headers() {
    let key = |args: Value| parse(&args).unwrap().cache_key().unwrap();
    let plain = key(json!({"url": "https://a.example/"}));
    assert_ne!(plain, key(json!({"url": "https://a.example/", "format": "html"})));
    assert_ne!(plain, key(json!({"url": "https://a.example/", "headers": {"cookie": "a=1"}})));
    assert_eq!(plain, key(json!({"url": "https://a.example/", "format": "markdown"})));
}

#[test]
fn the_preview_refuses_private_urls_before_any_ask_and_patterns_are_hosts() {
    let policy = Policy::default();
    let refused = |url: &str| match preview(&policy, &json!({"url": url})) {
        Err(e) => e,
        Ok(_) => panic!("{url} passed"),
    };
    assert_eq!(
        refused("http://169.254.169.254/latest/meta-data/"),
        ToolError::retry(
            "Refused: 169.254.169.254 is a private address (169.254.0.0/16, link-local). Nothing was fetched."
        )
    );
    assert_eq!(
        refused("https://user:pw@example.com/"),
        ToolError::retry("Refused: URLs with credentials (user:password@) are refused. Nothing was fetched.")
    );
    assert_eq!(
        refused("http://intranet/wiki"),
        ToolError::retry(
            "Refused: intranet is a single-label host name (local network names are refused). Nothing was fetched."
        )
    );
    let shown = preview(&policy, &json!({"url": "https://Docs.rs/tokio?x=1", "method": "head"})).unwrap();
    assert_eq!(
        shown.presentation,
        Presentation {
            title: "Fetch https://Docs.rs/tokio?x=1 (HEAD)".into(),
            kind: Kind::Fetch,
            locations: Vec::new(),
            patterns: vec!["docs.rs".into()],
            content: vec![Content::Text("https://Docs.rs/tokio?x=1".into())],
        }
    );
    let v6 = Policy::new(vec![crate::web::Allowed { host: "[::1]".into(), port: 3000 }]);
    let shown = preview(&v6, &json!({"url": "http://[::1]:3000/"})).unwrap();
    assert_eq!(shown.presentation.patterns, vec!["::1".to_string()], "no glob brackets");
}

#[test]
fn pages_render_with_their_url_and_title_and_a_cut_body_says_so() {
    let html = b"<html><head><title>T</title></head><body><article><h1>T</h1><p>Some text that is long enough to be the main content of this page, with a <a href=\"/b\">link</a>.</p></article></body></html>";
    let out = render(page(Some("text/html"), html), Format::Markdown, 1024, false).unwrap();
    assert_eq!(
        out.output,
        "URL: https://example.com/a\nTitle: T\n\n# T\n\nSome text that is long enough to be the main content of this page, with a [link](https://example.com/b)."
    );
    assert_eq!(
        out.metadata,
        json!({"url": "https://example.com/a", "status": 200, "contentType": "text/html", "bytes": html.len(), "truncated": false})
    );
    let mut cut = page(Some("application/json"), b"{\"a\": 1");
    cut.truncated = true;
    assert_eq!(
        render(cut, Format::Markdown, 5 * 1024 * 1024, false).unwrap().output,
        "URL: https://example.com/a\nNote: the body was cut at 5 MB; what follows is its beginning.\n\n{\"a\": 1"
    );
}

#[test]
fn images_come_back_as_images_and_binary_files_are_described() {
    let png = b"\x89PNG\r\n\x1a\nrest";
    let out = render(page(Some("image/png"), png), Format::Markdown, 1024, false).unwrap();
    assert_eq!(
        out.output,
        format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(png))
    );
    assert!(out.bounded, "an image is never cut by the preview");
    let mut big = page(Some("image/jpeg"), b"....");
    big.truncated = true;
    assert_eq!(
        render(big, Format::Markdown, 5 * 1024 * 1024, false).unwrap_err(),
        ToolError::retry(
            "The image at https://example.com/a is larger than 5 MB; images that size are not inlined."
        )
    );
    let mut pdf = page(Some("application/pdf"), b"");
    pdf.declared_length = Some(123_456);
    assert_eq!(
        render(pdf, Format::Markdown, 1024, false).unwrap().output,
        "URL: https://example.com/a\n\nBinary content (application/pdf, 123456 bytes) is not shown: webfetch returns text, HTML and images."
    );
}

#[test]
fn an_error_status_is_an_error_with_the_start_of_the_page() {
    let mut missing = page(Some("text/plain"), b"no such page");
    missing.status = StatusCode::NOT_FOUND;
    assert_eq!(
        render(missing, Format::Markdown, 1024, false).unwrap_err(),
        ToolError::execution("HTTP 404 Not Found from https://example.com/a\n\nno such page")
    );
}

#[test]
fn a_head_request_shows_the_status_and_headers_only() {
    let mut head = page(Some("text/html"), b"");
    head.declared_length = Some(42);
    assert_eq!(
        render(head, Format::Markdown, 1024, true).unwrap().output,
        "HTTP 200 OK\nURL: https://example.com/a\nContent-Type: text/html\nContent-Length: 42"
    );
}
