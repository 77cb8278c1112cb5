//! Model streams that never end: keep-alive comments forever, silence, endless text. Each turn ends within the
//! configured limits with a message naming the cause, and the session stays usable.

use std::time::Duration;

use serde_json::json;

use super::turn::stop;
use crate::support::client::Setup;
use crate::support::fake_model::{Reply, answer, comments_forever, text_forever};

#[tokio::test]
async fn a_stream_of_keep_alive_comments_is_given_up_after_twice_the_idle_timeout() {
    let every = Duration::from_millis(20);
    let h = Setup::new(vec![
        comments_forever(every),
        comments_forever(every),
        comments_forever(every),
        answer(&["back"]),
    ])
    .config("stream_idle_timeout_ms = 100")
    .start()
    .await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the model provider kept failing after 3 attempts; last error: the model sent only keep-alive comments and no data for 200 ms."
    );
    assert_eq!(stop(&h.client.prompt(&session, "again").await.unwrap()), json!("end_turn"));
    h.model.assert_done();
}

#[tokio::test]
async fn silence_and_retries_together_end_at_the_response_deadline() {
    let h = Setup::new((0..20).map(|_| Reply::Hang(vec![])).collect())
        .config("stream_idle_timeout_ms = 100\nresponse_timeout_ms = 700\n[retry]\nmax_retries = 19")
        .start()
        .await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the response exceeded the 700 ms deadline (last attempt: the model sent no data for 100 ms). Raise response_timeout_ms in the config if the model needs longer."
    );
}

#[tokio::test]
async fn an_endless_text_stream_ends_at_the_response_deadline_and_keeps_what_was_shown() {
    let h = Setup::new(vec![text_forever(Duration::from_millis(10), "more "), answer(&["ok"])])
        .config("response_timeout_ms = 300")
        .start()
        .await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the response exceeded the 300 ms deadline. Raise response_timeout_ms in the config if the model needs longer."
    );
    let shown = h.said(&session).concat();
    assert!(shown.starts_with("more more "), "{shown}");
    h.client.prompt(&session, "again").await.unwrap();
    assert_eq!(h.model.messages(1)[2], json!({"role": "assistant", "content": shown}));
}

#[tokio::test]
async fn an_endless_text_stream_stops_at_the_default_output_cap() {
    let chunk = "x".repeat(1000);
    let h = Setup::new(vec![text_forever(Duration::ZERO, &chunk)]).start().await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert_eq!(
        error.message,
        "Model request failed: the response exceeded the output cap of 32000 tokens. Set max_output_tokens in the config to allow longer responses."
    );
    assert_eq!(
        h.said(&session).concat().len(),
        128_000 + 1_000,
        "relayed up to the first chunk past 128,000 bytes"
    );
    assert_eq!(h.model.requests()[0].body.get("max_tokens"), None, "the default cap is not sent");
}

#[tokio::test]
async fn a_configured_output_cap_is_sent_and_enforced_for_servers_that_ignore_it() {
    let h = Setup::new(vec![text_forever(Duration::ZERO, &"y".repeat(100))])
        .config("max_output_tokens = 500")
        .start()
        .await;
    let session = h.session().await;
    let error = h.client.prompt(&session, "hi").await.unwrap_err();
    assert!(error.message.contains("the output cap of 1000 tokens"), "{}", error.message);
    assert_eq!(h.model.requests()[0].body["max_tokens"], 500);
}
