//! Compaction through ACP: triggered by a small configured window in the middle of work, and on demand with
//! `/compact`; shown as a message or as `compaction_update`; every tool call keeps exactly one result.

use std::collections::HashSet;

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};

use crate::support::client::{Harness, Setup};
use crate::support::fake_model::{self as fm, Reply, answer, calls};

/// A reply without a usage chunk, so the agent reports its own estimate.
fn unmetered(text: &str) -> Reply {
    Reply::Sse(vec![fm::text(text), fm::finish("stop")])
}

fn texts(updates: &[Value], kind: &str) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect()
}

/// Every assistant tool call in `messages` has exactly one tool result, and every result has its call.
fn assert_paired(messages: &[Value]) {
    let calls: Vec<&str> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(calls.iter().collect::<HashSet<_>>().len(), calls.len());
    let (mut calls, mut results) = (calls, results);
    calls.sort();
    results.sort();
    assert_eq!(calls, results, "calls and results do not pair up in {messages:#?}");
}

#[tokio::test]
async fn a_small_configured_window_compacts_older_history_and_the_turn_goes_on() {
    let h = Harness::start(vec![unmetered("ok")]).await;
    // Measure what every request costs (system prompt and tools), then size the window around it.
    let probe = h.session().await;
    h.client.prompt(&probe, "hi").await.unwrap();
    let usage = h.client.updates(&probe).into_iter().find(|u| u["sessionUpdate"] == "usage_update").unwrap();
    let base = usage["used"].as_u64().unwrap();
    // Compaction starts once the history passes about 3,500 tokens (with the default 4,096 output reserve).
    let window = ((base + 4_096 + 3_500) as f64 / 0.9) as u64;
    h.write(".tinycode/config.toml", &format!("context_window = {window}\n"));

    let big: String = (0..120).map(|i| format!("{i:03} {}\n", "x".repeat(95))).collect();
    let file = h.write("big.txt", &big);
    h.model.script(vec![
        calls(&[("c_big", "read", &json!({"file_path": file}).to_string())]),
        unmetered("Read it."),
        unmetered("SUMMARY: the user had big.txt read; it holds 120 numbered lines of x."),
        unmetered("Here is the gist."),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "read big.txt").await.unwrap();
    let question = format!("now tell me about it. {}", "Context matters. ".repeat(150));
    h.client.prompt(&session, &question).await.unwrap();

    let summarise = h.model.messages(3);
    assert_eq!(
        summarise[0]["content"].as_str().unwrap().lines().next(),
        Some(
            "You are summarising a coding session so that it can continue with less context. Write a summary that lets the"
        )
    );
    assert!(
        summarise.iter().any(|m| m["role"] == "tool" && m["content"].as_str().unwrap().contains("119 xxxx"))
    );
    assert!(
        summarise.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .starts_with("Summarise the conversation above")
    );
    assert_paired(&summarise);

    let after = h.model.messages(4);
    assert_eq!(after[0]["role"], "system");
    assert_eq!(
        after[1]["content"],
        "<conversation-summary>\nThe earlier part of this conversation was summarised to save space:\n\nSUMMARY: the user had big.txt read; it holds 120 numbered lines of x.\n</conversation-summary>"
    );
    assert_eq!(after.last().unwrap(), &json!({"role": "user", "content": question}));
    assert!(!after.iter().any(|m| m["role"] == "tool"), "the big read was summarised away");
    assert_paired(&after);

    let shown = texts(&h.client.updates(&session), "agent_message_chunk");
    assert_eq!(
        shown,
        vec![
            "Read it.",
            // Both compaction notes carry the compaction's id, so the transcript shows them as one message.
            "_Compacting the conversation: older messages are being summarised…_\n\n_The conversation was compacted: older messages were replaced by a summary._\n\n",
            "Here is the gist.",
        ]
    );
    h.model.assert_done();
}

#[tokio::test]
async fn the_compact_command_summarises_on_demand_and_shows_a_compaction_update_to_clients_that_take_it() {
    let capabilities = acp::ClientCapabilities::new()
        .session(acp::ClientSessionCapabilities::new().compaction(acp::CompactionCapabilities::new()));
    let h = Setup::new(vec![]).capabilities(capabilities).start().await;
    let file = h.write("a.txt", "alpha\n");
    h.model.script(vec![
        calls(&[("c1", "read", &json!({"file_path": file}).to_string())]),
        answer(&["It says alpha."]),
        unmetered("SUMMARY: a.txt says alpha."),
        answer(&["Still here."]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "read a.txt").await.unwrap();
    let response = h.client.prompt(&session, "/compact").await.unwrap();
    assert_eq!(response.stop_reason, acp::StopReason::EndTurn);
    h.client.prompt(&session, "what did it say?").await.unwrap();

    let compaction: Vec<Value> =
        h.transcript(&session).into_iter().filter(|u| u["sessionUpdate"] == "compaction_update").collect();
    assert_eq!(
        compaction,
        vec![
            json!({"sessionUpdate": "compaction_update", "compactionId": "compaction_<id>", "status": "in_progress"}),
            json!({"sessionUpdate": "compaction_update", "compactionId": "compaction_<id>", "status": "completed", "summary": [{"type": "text", "text": "SUMMARY: a.txt says alpha."}]}),
        ]
    );
    let shown = texts(&h.client.updates(&session), "agent_message_chunk");
    assert_eq!(
        shown,
        vec![
            "It says alpha.",
            "Older messages were summarised; the conversation goes on from the summary.",
            "Still here.",
        ]
    );
    let after = h.model.messages(3);
    let roles: Vec<&str> = after.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, vec!["system", "user", "user"]);
    assert!(after[1]["content"].as_str().unwrap().contains("SUMMARY: a.txt says alpha."));
    h.model.assert_done();
}

#[tokio::test]
async fn compact_with_nothing_to_summarise_says_so_and_calls_no_model() {
    let h = Harness::start(vec![]).await;
    let session = h.session().await;
    h.client.prompt(&session, "/compact").await.unwrap();
    assert_eq!(
        texts(&h.client.updates(&session), "agent_message_chunk"),
        vec!["There is nothing to compact yet."]
    );
    assert_eq!(h.model.requests().len(), 0);
}
