//! Error classification, URL checks and the retry loop of the transport.

use std::sync::Mutex;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::json;

use super::*;
use crate::llm::FinishReason;

fn endpoint(base_url: &str) -> Endpoint {
    Endpoint {
        provider: "local".into(),
        base_url: base_url.into(),
        api_key: None,
        needs_key: false,
        key_help: "set TINYCODE_API_KEY".into(),
        dialect: "an OpenAI-compatible endpoint",
        retry: RetryConfig {
            max_retries: 2,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
        },
        connect_timeout: Duration::from_secs(1),
        limits: Limits {
            idle: Duration::from_secs(1),
            deadline: Duration::from_secs(600),
            output_tokens: 100,
        },
        secrets: std::sync::Arc::from(vec!["sk-secret-1234".to_string()]),
    }
}

fn classify_body(status: u16, body: serde_json::Value) -> Attempt {
    classify(status, &HeaderMap::new(), &body.to_string())
}

fn fatal(attempt: Attempt) -> LlmError {
    match attempt {
        Attempt::Fatal(error) => error,
        Attempt::Retry { message, .. } => panic!("expected a fatal error, got a retry: {message}"),
    }
}

#[test]
fn errors_are_classified_by_status_code_and_message() {
    assert!(matches!(
        classify_body(401, json!({"error": {"message": "bad key"}})),
        Attempt::Fatal(LlmError::Auth { status: 401, .. })
    ));
    assert!(matches!(
        classify_body(403, json!({"error": "forbidden"})),
        Attempt::Fatal(LlmError::Auth { status: 403, .. })
    ));
    assert!(matches!(
        classify_body(400, json!({"error": {"message": "x", "code": "context_length_exceeded"}})),
        Attempt::Fatal(LlmError::ContextOverflow { .. })
    ));
    assert!(matches!(
        classify_body(
            400,
            json!({"error": {"message": "request (9000 tokens) exceeds the available context size (4096 tokens)", "type": "exceed_context_size_error"}})
        ),
        Attempt::Fatal(LlmError::ContextOverflow { .. })
    ));
    assert!(matches!(
        classify_body(
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 215000 tokens > 200000 maximum"}})
        ),
        Attempt::Fatal(LlmError::ContextOverflow { .. })
    ));
    assert!(matches!(classify(413, &HeaderMap::new(), ""), Attempt::Fatal(LlmError::ContextOverflow { .. })));
    assert!(matches!(
        classify_body(429, json!({"error": {"message": "quota", "code": "insufficient_quota"}})),
        Attempt::Fatal(LlmError::Quota { .. })
    ));
    assert!(matches!(
        classify_body(
            402,
            json!({"type": "error", "error": {"type": "billing_error", "message": "Your credit balance is too low"}})
        ),
        Attempt::Fatal(LlmError::Quota { .. })
    ));
    assert!(matches!(
        classify_body(
            404,
            json!({"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}})
        ),
        Attempt::Fatal(LlmError::ModelNotFound { .. })
    ));
    assert!(matches!(
        classify_body(404, json!({"error": {"message": "model not loaded"}})),
        Attempt::Fatal(LlmError::Rejected { status: 404, .. })
    ));
    let mut headers = HeaderMap::new();
    headers.insert("retry-after", HeaderValue::from_static("3"));
    match classify(503, &headers, "upstream down") {
        Attempt::Retry { message, reason, wait } => {
            assert_eq!((message.as_str(), reason.as_str()), ("HTTP 503: upstream down", "HTTP 503"));
            assert_eq!(wait, Some(Duration::from_secs(3)));
        }
        Attempt::Fatal(e) => panic!("{e:?}"),
    }
}

#[test]
fn a_wait_over_a_minute_is_not_waited_for_and_the_message_says_how_long() {
    let mut headers = HeaderMap::new();
    headers.insert("retry-after", HeaderValue::from_static("3600"));
    let error =
        fatal(classify(429, &headers, &json!({"error": {"message": "Too many requests"}}).to_string()));
    assert_eq!(
        error.user_message(),
        "Model request failed: the provider asks to wait 3600 s before the next request (HTTP 429: Too many requests); try again then."
    );
    let body =
        json!({"error": {"message": "Please try again in 1.5s.", "code": "rate_limit_exceeded"}}).to_string();
    match classify(429, &HeaderMap::new(), &body) {
        Attempt::Retry { wait, .. } => assert_eq!(wait, Some(Duration::from_millis(1500))),
        Attempt::Fatal(e) => panic!("{e:?}"),
    }
    assert_eq!(wait_in_message("try again in 250ms"), Some(Duration::from_millis(250)));
    assert_eq!(wait_in_message("try later"), None);
}

#[test]
fn a_web_page_is_not_a_model_api_and_is_never_retried() {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("text/html; charset=utf-8"));
    let url = "http://127.0.0.1:8080/v1/chat/completions";
    let page = "<!doctype html><html><body>It works!</body></html>";
    let error = fatal(endpoint("http://127.0.0.1:8080/v1").classify("POST", url, 501, &headers, page));
    assert_eq!(
        error.to_string(),
        "this is not an OpenAI-compatible endpoint: POST http://127.0.0.1:8080/v1/chat/completions answered 501 text/html; check the base URL (it usually ends in /v1)"
    );
    assert!(
        matches!(endpoint("x").classify("POST", url, 502, &headers, page), Attempt::Retry { .. }),
        "a gateway error heals"
    );
}

#[test]
fn base_urls_without_a_scheme_or_host_are_refused_before_sending() {
    let reason = |url: &str| match check_url(url) {
        Err(LlmError::BadUrl { reason, .. }) => reason,
        other => panic!("{url}: {other:?}"),
    };
    assert_eq!(
        reason("localhost:11434/v1"),
        "it has no scheme; write http://localhost:11434/v1 (or https://…)"
    );
    assert_eq!(reason("ftp://x/v1"), "the scheme `ftp` is not supported; use http:// or https://");
    assert_eq!(reason("  "), "it is empty");
    assert!(check_url("http://127.0.0.1:11434/v1").is_ok());
    assert_eq!(
        LlmError::BadUrl { url: "localhost:11434/v1".into(), reason: reason("localhost:11434/v1") }
            .user_message(),
        "Model request failed: the base URL `localhost:11434/v1` cannot be used: it has no scheme; write http://localhost:11434/v1 (or https://…)."
    );
}

#[test]
fn connection_failures_name_their_cause_and_only_transient_ones_are_retried() {
    let e = endpoint("http://127.0.0.1:11434/v1");
    let refused = "error sending request for url: client error (Connect): tcp connect error: Connection refused (os error 111)";
    assert_eq!(
        fatal(e.connect_failure("http://127.0.0.1:11434/v1/chat/completions", refused, false, false))
            .to_string(),
        "nothing is listening at http://127.0.0.1:11434: is Ollama running?"
    );
    assert_eq!(
        fatal(e.connect_failure("http://localhost:4000/v1/chat/completions", refused, false, false))
            .to_string(),
        "nothing is listening at http://localhost:4000: is the server running?"
    );
    assert!(matches!(
        e.connect_failure("https://api.example.com/v1/x", refused, false, false),
        Attempt::Retry { .. }
    ));
    let missing = "error sending request: client error (Connect): dns error: failed to lookup address information: Name or service not known";
    assert_eq!(
        fatal(e.connect_failure("https://api.opnai.com/v1/responses", missing, false, false)).to_string(),
        "the host `api.opnai.com` does not exist (https://api.opnai.com): check the base URL for a typo"
    );
    let temporary = "dns error: failed to lookup address information: Temporary failure in name resolution";
    assert!(matches!(
        e.connect_failure("https://api.openai.com/v1/x", temporary, false, false),
        Attempt::Retry { .. }
    ));
    let tls = "client error (Connect): invalid peer certificate: UnknownIssuer";
    let error = fatal(e.connect_failure("https://10.0.0.2/v1/x", tls, false, false)).to_string();
    assert!(error.starts_with("a secure connection to https://10.0.0.2 failed (client error (Connect): invalid peer certificate: UnknownIssuer)"), "{error}");
    assert!(matches!(e.connect_failure("x", "timed out", false, true), Attempt::Retry { .. }));
    assert!(matches!(
        e.connect_failure("x", "builder error", true, false),
        Attempt::Fatal(LlmError::BadUrl { .. })
    ));
}

#[test]
fn a_missing_key_is_reported_before_anything_is_sent() {
    let mut hosted = endpoint("https://api.anthropic.com");
    hosted.provider = "anthropic".into();
    hosted.needs_key = true;
    hosted.key_help = "set ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or TINYCODE_API_KEY".into();
    let error = hosted.check().unwrap_err();
    assert_eq!(
        error.user_message(),
        "Model request failed: no API key is set for anthropic: set ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or TINYCODE_API_KEY."
    );
    assert!(error.needs_sign_in());
}

#[test]
fn waits_are_said_briefly() {
    assert_eq!(format_wait(Duration::from_millis(300)), "300 ms");
    assert_eq!(format_wait(Duration::from_secs(4)), "4 s");
    assert_eq!(format_wait(Duration::from_millis(1500)), "1.5 s");
}

fn ok() -> Response {
    Response {
        text: "ok".into(),
        reasoning: None,
        tool_calls: vec![],
        finish: FinishReason::Stop,
        usage: None,
        refusal: None,
    }
}

#[tokio::test]
async fn every_retry_is_told_and_output_already_shown_is_never_retried() {
    let e = endpoint("x");
    let notices = Mutex::new(Vec::new());
    let notice = |d: Delta| notices.lock().unwrap().push(d);
    let tries = Mutex::new(0);
    let emitted = AtomicBool::new(false);
    let result = with_retries(&e, &emitted, &CancellationToken::new(), &notice, || async {
        let mut tries = tries.lock().unwrap();
        *tries += 1;
        match *tries {
            1 => Err(Attempt::Retry {
                message: "HTTP 503: down".into(),
                reason: "HTTP 503".into(),
                wait: Some(Duration::from_millis(4)),
            }),
            _ => Ok(ok()),
        }
    })
    .await;
    assert_eq!(result, Ok(ok()));
    assert_eq!(*notices.lock().unwrap(), vec![Delta::Notice("Retrying in 4 ms (HTTP 503)…".into())]);

    emitted.store(true, Ordering::Relaxed);
    let result = with_retries(&e, &emitted, &CancellationToken::new(), &notice, || async {
        Err(Attempt::retry("connection lost mid-stream", "reset"))
    })
    .await;
    assert_eq!(
        result,
        Err(LlmError::StreamInterrupted { message: "connection lost mid-stream: reset".into() })
    );

    let emitted = AtomicBool::new(false);
    let result = with_retries(&e, &emitted, &CancellationToken::new(), &notice, || async {
        Err(Attempt::retry("HTTP 500", "boom"))
    })
    .await;
    assert_eq!(result, Err(LlmError::RetriesExhausted { attempts: 3, last: "HTTP 500: boom".into() }));
}

/// A stream that yields `chunk` every `every` (tokio time) forever.
fn every(
    every: Duration,
    chunk: &'static str,
) -> impl futures::Stream<Item = Result<&'static [u8], std::io::Error>> {
    futures::stream::unfold((), move |()| async move {
        tokio::time::sleep(every).await;
        Some((Ok(chunk.as_bytes()), ()))
    })
    .boxed()
}

fn limits(output_tokens: u64) -> Limits {
    Limits { idle: Duration::from_secs(300), deadline: Duration::from_secs(600), output_tokens }
}

fn stalled_with(result: Result<Response, Attempt>) -> String {
    match result {
        Err(Attempt::Retry { message, wait: None, .. }) => message,
        Err(Attempt::Fatal(e)) => panic!("expected a stall, got {e}"),
        _ => panic!("expected a stall"),
    }
}

fn chat() -> crate::llm::chat::StreamState {
    crate::llm::chat::StreamState::new("local/m".into())
}

#[tokio::test(start_paused = true)]
async fn keep_alive_comments_every_half_second_hold_a_stream_for_twice_the_idle_timeout_only() {
    let start = tokio::time::Instant::now();
    let comments = every(Duration::from_millis(500), ": keep-alive\n\n");
    let result = read_events(comments, limits(100), chat(), &|_| {}).await;
    assert_eq!(stalled_with(result), "the model sent only keep-alive comments and no data for 600 s");
    assert_eq!(start.elapsed(), Duration::from_secs(600));
}

#[tokio::test(start_paused = true)]
async fn a_silent_stream_is_cut_after_the_idle_timeout() {
    let start = tokio::time::Instant::now();
    let silent = futures::stream::pending::<Result<&'static [u8], std::io::Error>>();
    assert_eq!(
        stalled_with(read_events(silent, limits(100), chat(), &|_| {}).await),
        "the model sent no data for 300 s"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(300));
}

#[tokio::test(start_paused = true)]
async fn endless_text_stops_at_the_output_cap_after_relaying_what_came_before_it() {
    let chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"0123456789\"}}]}\n\n";
    let shown = Mutex::new(String::new());
    let on_delta = |delta: Delta| {
        if let Delta::Text(text) = delta {
            shown.lock().unwrap().push_str(&text);
        }
    };
    let result = read_events(every(Duration::from_millis(10), chunk), limits(100), chat(), &on_delta).await;
    assert_eq!(fatal(result.unwrap_err()), LlmError::OutputCap { tokens: 100 });
    assert_eq!(shown.lock().unwrap().len(), 410, "41 chunks of 10 bytes: the first past 400 bytes stops it");
}

#[tokio::test(start_paused = true)]
async fn endless_tool_arguments_stop_at_the_output_cap_too() {
    let chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"0123456789\"}}]}}]}\n\n";
    let result = read_events(every(Duration::from_millis(10), chunk), limits(100), chat(), &|_| {}).await;
    assert_eq!(fatal(result.unwrap_err()), LlmError::OutputCap { tokens: 100 });
}

#[tokio::test(start_paused = true)]
async fn the_deadline_ends_the_retries_and_names_the_last_attempt() {
    let mut endpoint = endpoint("http://127.0.0.1:9");
    endpoint.retry.max_retries = 1000;
    endpoint.retry.initial_backoff = Duration::from_secs(1);
    endpoint.retry.max_backoff = Duration::from_secs(1);
    endpoint.limits.deadline = Duration::from_secs(10);
    let start = tokio::time::Instant::now();
    let result =
        with_retries(&endpoint, &AtomicBool::new(false), &CancellationToken::new(), &|_| {}, || async {
            Err(Attempt::retry("HTTP 503", "busy"))
        })
        .await;
    assert_eq!(
        result.unwrap_err(),
        LlmError::Deadline { limit: "10 s".into(), last: Some("HTTP 503: busy".into()) }
    );
    assert_eq!(start.elapsed(), Duration::from_secs(10));
}

#[test]
fn the_stop_messages_name_the_limit_and_what_to_change() {
    let deadline =
        LlmError::Deadline { limit: "600 s".into(), last: Some("the model sent no data for 300 s".into()) };
    assert_eq!(
        deadline.user_message(),
        "Model request failed: the response exceeded the 600 s deadline (last attempt: the model sent no data for 300 s). Raise response_timeout_ms in the config if the model needs longer."
    );
    assert_eq!(
        LlmError::OutputCap { tokens: 32_000 }.user_message(),
        "Model request failed: the response exceeded the output cap of 32000 tokens. Set max_output_tokens in the config to allow longer responses."
    );
}

#[tokio::test]
async fn errors_that_repeat_a_configured_key_leave_the_transport_with_the_key_redacted() {
    let e = endpoint("x");
    let tries = Mutex::new(0);
    let result = with_retries(&e, &AtomicBool::new(false), &CancellationToken::new(), &|_| {}, || async {
        let mut tries = tries.lock().unwrap();
        *tries += 1;
        match *tries {
            1 => Err(Attempt::retry("HTTP 503", "bad key sk-secret-1234")),
            _ => {
                let body = r#"{"error": {"message": "Incorrect API key provided: sk-secret-1234"}}"#;
                Err(classify(401, &HeaderMap::new(), body))
            }
        }
    })
    .await;
    assert_eq!(
        result,
        Err(LlmError::Auth {
            status: 401,
            message: "Incorrect API key provided: [redacted]".into(),
            help: String::new()
        })
    );
    assert_eq!(
        redact("a sk-secret-1234 and sk-secret-12345", &["sk-secret-1234".into(), "sk-secret-12345".into()]),
        "a [redacted] and [redacted]",
        "the longer key first"
    );
    assert_eq!(redact("a key", &["key".into()]), "a key", "too short to look for");
}
