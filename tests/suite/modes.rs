//! Modes and plans through ACP: plan mode refusing changes, the agent switching itself with `plan_enter` and
//! `plan_exit` (the user approving the plan), and `todowrite` driving the editor's plan panel.

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};
use tinycode::bus::Event;

use super::turn::{finished, tool_result};
use crate::support::client::{Answer, Harness, TestClient};
use crate::support::fake_model::{answer, calls};

fn of_kind(client: &TestClient, session: &acp::SessionId, kinds: &[&str]) -> Vec<Value> {
    client
        .updates(session)
        .into_iter()
        .filter(|u| kinds.contains(&u["sessionUpdate"].as_str().unwrap_or("")))
        .collect()
}

fn system(h: &Harness, request: usize) -> String {
    h.model.messages(request)[0]["content"].as_str().unwrap().to_string()
}

fn switched(events: &mut tokio::sync::broadcast::Receiver<Event>) -> Vec<String> {
    let mut agents = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let Event::AgentSwitched { agent, .. } = event {
            agents.push(agent);
        }
    }
    agents
}

#[tokio::test]
async fn plan_mode_refuses_a_write_the_model_calls_anyway_without_asking() {
    let h = Harness::start(vec![]).await;
    let target = h.cwd.join("new.txt");
    h.model.script(vec![
        calls(&[("w1", "write", &json!({"file_path": target, "content": "x"}).to_string())]),
        answer(&["I will plan instead."]),
    ]);
    let session = h.session().await;
    let request = acp::SetSessionModeRequest::new(session.clone(), "plan");
    h.client.call(request).await.unwrap();
    h.client.prompt(&session, "create new.txt").await.unwrap();

    assert!(!target.exists());
    assert_eq!(h.client.log.permission_requests.lock().unwrap().len(), 0);
    assert_eq!(
        tool_result(&h.model.messages(1), "w1"),
        "Permission denied by rule {permission: \"edit\", pattern: \"*\", action: deny}. Plan mode does not change files or run commands that change anything. Finish the plan, then call plan_exit (or ask the user to switch modes)."
    );
    assert_eq!(finished(&h.transcript(&session), "w1")["status"], "failed");
    assert!(system(&h, 0).contains("# Plan mode"));
}

#[tokio::test]
async fn the_agent_enters_plan_mode_by_itself_and_the_switch_is_shown_and_kept() {
    let mut h = Harness::start(vec![
        calls(&[("p1", "plan_enter", "{}")]),
        answer(&["Planning now."]),
        answer(&["Still planning."]),
    ])
    .await;
    let mut events = h.bus.subscribe();
    let session = h.session().await;
    h.client.prompt(&session, "think first").await.unwrap();

    assert!(!system(&h, 0).contains("# Plan mode"));
    assert!(system(&h, 1).contains("# Plan mode"), "the rest of the turn is planned");
    assert_eq!(h.client.log.permission_requests.lock().unwrap().len(), 0, "build mode may enter plan mode");
    // (A `config_option_update` may also come earlier, when the provider's model list arrives.)
    let updates = of_kind(&h.client, &session, &["current_mode_update", "config_option_update"]);
    let at = updates.iter().position(|u| u["sessionUpdate"] == "current_mode_update").unwrap();
    assert_eq!(updates[at], json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}));
    assert_eq!(updates[at + 1]["configOptions"][0]["currentValue"], "plan", "the options follow");
    assert_eq!(updates.iter().filter(|u| u["sessionUpdate"] == "current_mode_update").count(), 1);
    assert_eq!(switched(&mut events), vec!["plan"]);
    let card = finished(&h.transcript(&session), "p1");
    assert_eq!(card["status"], "completed");

    h.restart().await;
    let loaded = h.client.call(acp::LoadSessionRequest::new(session.clone(), h.cwd.clone())).await.unwrap();
    assert_eq!(loaded.modes.unwrap().current_mode_id.0.as_ref(), "plan", "the switch was saved");
    h.client.prompt(&session, "go on").await.unwrap();
    assert!(system(&h, 2).contains("# Plan mode"));
}

#[tokio::test]
async fn leaving_plan_mode_shows_the_plan_in_the_ask_and_switches_only_when_approved() {
    let h = Harness::start(vec![]).await;
    let plan = "1. Add the parser\n2. Test it";
    let exit = json!({"plan": plan}).to_string();
    h.model.script(vec![
        calls(&[("x1", "plan_exit", &exit)]),
        answer(&["Keeping on planning."]),
        calls(&[("x2", "plan_exit", &exit)]),
        answer(&["Building."]),
    ]);
    let mut events = h.bus.subscribe();
    let session = h.session().await;
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "plan")).await.unwrap();
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce), Answer::Pick(K::AllowOnce)]);
    h.client.prompt(&session, "plan it").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "x1"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
    assert!(system(&h, 1).contains("# Plan mode"), "a declined exit keeps planning");
    h.client.prompt(&session, "looks good").await.unwrap();

    let asks = h.client.log.permission_requests.lock().unwrap().clone();
    let ask = serde_json::to_value(&asks[1].tool_call).unwrap();
    assert_eq!(
        ask,
        json!({
            "toolCallId": "x2",
            "title": "Leave plan mode and start building",
            "kind": "switch_mode",
            "status": "pending",
            "content": [{"type": "content", "content": {"type": "text", "text": plan}}],
            "rawInput": {"plan": plan}
        })
    );
    assert_eq!(
        tool_result(&h.model.messages(3), "x2"),
        "The user approved the plan. Build mode starts after this step: carry out the plan, keeping the to-do list current."
    );
    assert!(!system(&h, 3).contains("# Plan mode"));
    let modes: Vec<Value> = of_kind(&h.client, &session, &["current_mode_update"]);
    assert_eq!(modes, vec![json!({"sessionUpdate": "current_mode_update", "currentModeId": "build"})]);
    assert_eq!(switched(&mut events), vec!["build"], "the user's own switch to plan is not an agent switch");
}

#[tokio::test]
async fn todowrite_drives_the_plan_panel_warns_the_model_and_the_plan_comes_back_on_load() {
    let mut h = Harness::start(vec![]).await;
    let two_running = json!({"todos": [
        {"content": "Read the code", "status": "in_progress", "priority": "high"},
        {"content": "Write the fix", "status": "in_progress"},
    ]});
    let first = json!({"todos": [
        {"content": "Read the code", "status": "in_progress", "priority": "high", "activeForm": "Reading the code"},
        {"content": "Write the fix", "status": "pending", "activeForm": "Writing the fix"},
        {"content": "Run the tests", "status": "pending", "priority": "low"},
    ]});
    let second = json!({"todos": [
        {"content": "Read the code", "status": "done", "priority": "high", "activeForm": "Reading the code"},
        {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"},
    ]});
    h.model.script(vec![
        calls(&[("t0", "todowrite", &two_running.to_string())]),
        calls(&[("t1", "todowrite", &first.to_string())]),
        calls(&[("t2", "todowrite", &second.to_string())]),
        answer(&["Working on it."]),
    ]);
    let mut events = h.bus.subscribe();
    let session = h.session().await;
    h.client.prompt(&session, "fix the bug").await.unwrap();

    let plans = of_kind(&h.client, &session, &["plan"]);
    let entry = |content: &str, priority: &str, status: &str| json!({"content": content, "priority": priority, "status": status});
    assert_eq!(
        plans,
        vec![
            json!({"sessionUpdate": "plan", "entries": [
                entry("Reading the code", "high", "in_progress"),
                entry("Write the fix", "medium", "pending"),
                entry("Run the tests", "low", "pending"),
            ]}),
            json!({"sessionUpdate": "plan", "entries": [
                entry("Read the code", "high", "completed"),
                entry("Writing the fix", "medium", "in_progress"),
            ]}),
        ],
        "the refused list never reached the panel; an item in progress shows its activeForm"
    );
    assert_eq!(
        h.client.log.permission_requests.lock().unwrap().len(),
        0,
        "the plan is not an edit to approve"
    );
    assert_eq!(
        tool_result(&h.model.messages(1), "t0"),
        "Only one item may be in_progress at a time, and 2 are: \"Read the code\", \"Write the fix\". Keep the one you are working on now in_progress, set the others to pending (not started yet) or done (finished), and send the whole list again. The list was not changed."
    );
    assert_eq!(
        tool_result(&h.model.messages(2), "t1"),
        "The to-do list now reads:\n[~] Read the code (Reading the code)\n[ ] Write the fix\n[ ] Run the tests"
    );
    assert_eq!(
        tool_result(&h.model.messages(3), "t2"),
        "The to-do list now reads:\n[x] Read the code\n[~] Write the fix (Writing the fix)\nWarning: unfinished items disappeared: \"Run the tests\". If they are done, keep them marked done; if you dropped them, tell the user why."
    );
    let mut published = 0;
    while let Ok(event) = events.try_recv() {
        if let Event::TodosUpdated { todos, .. } = event {
            published += 1;
            assert_eq!(todos.as_array().unwrap().len(), if published == 1 { 3 } else { 2 });
        }
    }
    assert_eq!(published, 2);

    h.restart().await;
    h.client.call(acp::LoadSessionRequest::new(session.clone(), h.cwd.clone())).await.unwrap();
    assert_eq!(of_kind(&h.client, &session, &["plan"]), vec![plans[1].clone()], "the last plan is replayed");
    h.model.assert_done();
}

#[tokio::test]
async fn completing_the_last_item_after_changing_files_nudges_the_model_to_verify() {
    let h = Harness::start(vec![]).await;
    let file = h.cwd.join("notes.md");
    let start = json!({"todos": [{"content": "Write the notes", "status": "in_progress"}]});
    let done = json!({"todos": [{"content": "Write the notes", "status": "done"}]});
    h.model.script(vec![
        calls(&[("t1", "todowrite", &start.to_string())]),
        calls(&[("w", "write", &json!({"file_path": file, "content": "notes\n"}).to_string())]),
        calls(&[("t2", "todowrite", &done.to_string())]),
        answer(&["Done."]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "write notes").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(3), "t2"),
        "The to-do list now reads:\n[x] Write the notes\nWarning: every item is done and you changed 1 file along the way, but no item verified the work. Before you report success, verify it: run the tests, the build or the linter that covers these changes, and fix what fails."
    );
}
