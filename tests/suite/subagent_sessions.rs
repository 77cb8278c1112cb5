//! Subagents shown as sessions of their own, for a client that declares `subagents` (the SDK's unstable
//! `subagent_update`): the child is announced on its parent, its own events go out under its id, the `task`
//! card refers to it, its end is reported, and a cancel sent to the child's id stops only the child.

use std::time::Duration;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::shell::{gone_within, pid_from};
use super::turn::{finished, stop, tool_result};
use crate::support::client::{Answer, Harness, Setup};
use crate::support::fake_model::{Reply, answer, calls};

fn call(id: &str, tool: &str, args: Value) -> Reply {
    calls(&[(id, tool, &args.to_string())])
}

fn shows_subagents() -> acp::ClientCapabilities {
    acp::ClientCapabilities::new().subagents(acp::SubagentCapabilities::new())
}

/// The `subagent_update`s of `session`, in order.
fn announcements(updates: &[Value]) -> Vec<Value> {
    updates.iter().filter(|u| u["sessionUpdate"] == "subagent_update").cloned().collect()
}

/// A compact transcript of one session: each update's kind with its call id and status, or its text.
fn transcript(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] != "usage_update")
        .map(|u| {
            let kind = u["sessionUpdate"].as_str().unwrap();
            match kind {
                "tool_call" | "tool_call_update" => format!(
                    "{kind} {} {}",
                    u["toolCallId"].as_str().unwrap(),
                    u["status"].as_str().unwrap_or("-")
                ),
                _ => format!("{kind} {}", u["content"]["text"].as_str().unwrap_or("")),
            }
        })
        .collect()
}

#[tokio::test]
async fn a_client_that_shows_subagents_gets_the_child_announced_streamed_under_its_own_id_and_ended() {
    let h = Setup::new(vec![]).capabilities(shows_subagents()).start().await;
    let notes = h.write("notes.txt", "forty-two\n");
    h.model.script(vec![
        call(
            "t1",
            "task",
            json!({"description": "Find the answer", "prompt": "What do the notes say?\nBe brief.", "subagent_type": "explore"}),
        ),
        call("c1", "read", json!({"file_path": notes})),
        answer(&["The notes say forty-two."]),
        answer(&["done"]),
    ]);
    let session = h.session().await;
    let response = h.client.prompt(&session, "ask a subagent").await.unwrap();
    assert_eq!(stop(&response), json!("end_turn"));

    let updates = h.client.updates(&session);
    let child = finished(&updates, "t1")["rawOutput"]["task_id"].as_str().unwrap().to_string();
    assert_eq!(
        announcements(&updates),
        vec![
            json!({
                "sessionUpdate": "subagent_update",
                "sessionId": child,
                "title": "Find the answer (@explore subagent)",
                "description": "What do the notes say?",
                "capabilities": {"cancel": {}},
                "state": {"state": "running"},
                "cwd": h.cwd,
            }),
            json!({"sessionUpdate": "subagent_update", "sessionId": child, "state": {"state": "idle", "stopReason": "end_turn"}}),
        ]
    );
    // The child is announced before anything refers to it, and every state of the card refers to it.
    let first_card = updates.iter().position(|u| {
        u["toolCallId"] == "t1" && u["sessionUpdate"] == "tool_call_update" && u.get("content").is_some()
    });
    let announced = updates.iter().position(|u| u["sessionUpdate"] == "subagent_update");
    assert!(announced < first_card, "announced at {announced:?}, first card at {first_card:?}");
    let reference = json!({"type": "session", "sessionId": child});
    let cards: Vec<&Value> = updates
        .iter()
        .filter(|u| {
            u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "t1" && u.get("content").is_some()
        })
        .collect();
    assert!(cards.len() >= 2);
    assert!(cards.iter().all(|c| c["content"][0] == reference), "{cards:#?}");
    let done = finished(&updates, "t1");
    assert_eq!(done["content"][2]["content"]["text"], "The notes say forty-two.");

    // The child's own session: its prompt, its read, its answer.
    let own = transcript(&h.client.updates(&acp::SessionId::from(child.clone())));
    assert_eq!(
        own,
        vec![
            "user_message_chunk What do the notes say?\nBe brief.",
            "tool_call c1 -",
            "tool_call_update c1 in_progress",
            "tool_call_update c1 completed",
            "agent_message_chunk The notes say forty-two.",
        ]
    );
    h.model.assert_done();
}

#[tokio::test]
async fn a_client_without_the_capability_gets_no_subagent_session_updates() {
    let h = Harness::start(vec![]).await;
    h.model.script(vec![
        call("t1", "task", json!({"description": "Say hi", "prompt": "hi", "subagent_type": "explore"})),
        answer(&["hello"]),
        answer(&["done"]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "delegate").await.unwrap();
    let all = h.client.updates_json();
    let sessions: std::collections::BTreeSet<&str> =
        all.iter().map(|n| n["sessionId"].as_str().unwrap()).collect();
    assert_eq!(sessions, [session.0.as_ref()].into_iter().collect());
    let updates = h.client.updates(&session);
    assert!(announcements(&updates).is_empty());
    assert_eq!(finished(&updates, "t1")["content"][0]["type"], "content");
    h.model.assert_done();
}

#[tokio::test]
async fn cancelling_the_subagents_session_stops_only_the_child_and_its_parent_carries_on() {
    let h = Setup::new(vec![]).capabilities(shows_subagents()).start().await;
    let pid_file = h.cwd.join("pid.txt");
    h.model.script(vec![
        call("t1", "task", json!({"description": "Run long", "prompt": "run it"})),
        call("c1", "bash", json!({"command": format!("sleep 300 & echo $! > {}; wait", pid_file.display())})),
        answer(&["I stopped waiting for it."]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "run something long");
    let pid = pid_from(&pid_file).await;
    let child = announcements(&h.client.updates(&session))[0]["sessionId"].as_str().unwrap().to_string();
    h.client.cancel(&acp::SessionId::from(child.clone()));

    let response = turn.await.unwrap().unwrap();
    assert_eq!(stop(&response), json!("end_turn"), "the parent's turn goes on");
    gone_within(pid, Duration::from_secs(5)).await;
    let updates = h.client.updates(&session);
    assert_eq!(
        announcements(&updates).last().unwrap(),
        &json!({"sessionUpdate": "subagent_update", "sessionId": child, "state": {"state": "idle", "stopReason": "cancelled"}})
    );
    assert_eq!(finished(&updates, "t1")["status"], "failed");
    let result = tool_result(&h.model.messages(2), "t1");
    assert_eq!(
        result,
        format!(
            "task_id: {child} (pass it as `task_id` to continue this task)\nThe user stopped this subagent before it finished; below is the last thing it said.\n\n<task_result>\n\n</task_result>"
        )
    );
    h.model.assert_done();
}

#[tokio::test]
async fn a_grandchild_is_announced_on_its_parents_session_and_streams_under_its_own_id() {
    let h = Setup::new(vec![]).capabilities(shows_subagents()).start().await;
    h.model.script(vec![
        call("t1", "task", json!({"description": "Delegate", "prompt": "ask a helper"})),
        call(
            "t2",
            "task",
            json!({"description": "Look", "prompt": "look around", "subagent_type": "explore"}),
        ),
        answer(&["nothing here"]),
        answer(&["the helper found nothing"]),
        answer(&["done"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "go").await.unwrap();

    let child = announcements(&h.client.updates(&session))[0]["sessionId"].as_str().unwrap().to_string();
    let child_updates = h.client.updates(&acp::SessionId::from(child.clone()));
    let nested = announcements(&child_updates);
    assert_eq!(nested.len(), 2, "{child_updates:#?}");
    let grandchild = nested[0]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(nested[0]["title"], "Look (@explore subagent)");
    assert_eq!(nested[1]["state"], json!({"state": "idle", "stopReason": "end_turn"}));
    assert_eq!(
        transcript(&h.client.updates(&acp::SessionId::from(grandchild))),
        vec!["user_message_chunk look around", "agent_message_chunk nothing here"]
    );
    assert!(
        !announcements(&h.client.updates(&session)).iter().any(|a| a["sessionId"] != child.as_str()),
        "the grandchild is announced on its own parent's session only"
    );
    h.model.assert_done();
}
