//! `task` subagents through ACP: narrowed tools, the depth limit, foreground progress in the parent's card,
//! background runs with their status and completion notice, resuming by id, asks and edits lifted to the
//! parent, and cancellation reaching a child's processes.

use std::time::Duration;

use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::shell::{gone_within, pid_from};
use super::turn::{finished, stop, tool_result};
use agent_client_protocol::v1::schema as acp;
use tinycode::acp::trust::NOT_NOW;

use crate::support::client::{Answer, Harness, Setup};
use crate::support::fake_model::{self as fm, Reply, answer, calls};

fn task(id: &str, args: Value) -> Reply {
    calls(&[(id, "task", &args.to_string())])
}

fn call(id: &str, tool: &str, args: Value) -> Reply {
    calls(&[(id, tool, &args.to_string())])
}

/// The names of the tools offered in request `n`.
fn offered(h: &Harness, n: usize) -> Vec<String> {
    h.model.requests()[n].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// Every text the parent's card for `call_id` showed while the child worked, in order.
fn progress(updates: &[Value], call_id: &str) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == call_id)
        .filter(|u| u["_meta"]["tinycode"]["childSessionId"].is_string())
        .map(|u| u["content"][0]["content"]["text"].as_str().unwrap().to_string())
        .collect()
}

/// The child's session id, from the `task` call's result.
fn task_id(updates: &[Value], call_id: &str) -> String {
    finished(updates, call_id)["rawOutput"]["task_id"].as_str().unwrap().to_string()
}

/// The messages of every request of the parent session (its first prompt is `start it`), in order.
fn parent_messages(h: &Harness) -> Vec<Vec<Value>> {
    h.model
        .requests()
        .iter()
        .map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m.get(1).is_some_and(|u| u["content"] == "start it"))
        .collect()
}

fn asks(h: &Harness) -> Vec<Value> {
    h.client
        .log
        .permission_requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect()
}

#[tokio::test]
async fn explore_refuses_a_write_and_its_progress_fills_the_parent_card_with_the_answer_as_result() {
    let h = Harness::start(vec![]).await;
    let notes = h.write("notes.txt", "forty-two\n");
    let target = h.cwd.join("made.txt");
    h.model.script(vec![
        task("t1", json!({"description": "Find the answer", "prompt": "What do the notes say?", "subagent_type": "explore"})),
        call("c1", "read", json!({"file_path": notes})),
        call("c2", "write", json!({"file_path": target, "content": "x"})),
        answer(&["The notes say forty-two."]),
        answer(&["done"]),
    ]);
    let session = h.session().await;
    let response = h.client.prompt(&session, "ask a subagent").await.unwrap();
    assert_eq!(stop(&response), json!("end_turn"));
    assert!(asks(&h).is_empty(), "explore asks nothing");
    assert!(!target.exists(), "explore cannot write");

    assert_eq!(offered(&h, 1), vec!["read", "glob", "grep", "list_dir", "discover", "webfetch"]);
    let child_system = h.model.messages(1)[0]["content"].as_str().unwrap().to_string();
    assert!(child_system.contains("You are a subagent") && child_system.contains("the `explore` agent"));
    assert_eq!(h.model.messages(1)[1], json!({"role": "user", "content": "What do the notes say?"}));
    assert_eq!(
        tool_result(&h.model.messages(3), "c2"),
        "Unknown tool `write`. Available tools: read, glob, grep, list_dir, discover, webfetch."
    );

    let updates = h.client.updates(&session);
    let child = task_id(&updates, "t1");
    assert_eq!(
        tool_result(&h.model.messages(4), "t1"),
        format!(
            "task_id: {child} (pass it as `task_id` to continue this task)\n\n<task_result>\nThe notes say forty-two.\n</task_result>"
        )
    );
    // The card is throttled: some intermediate states may be skipped, never the first, the order or the last.
    let every_state: Vec<String> = vec![
        "`explore` · 0 tool calls".to_string(),
        "`explore` · 1 tool call\n… Read notes.txt".into(),
        "`explore` · 1 tool call\n✓ Read notes.txt".into(),
        "`explore` · 2 tool calls\n✓ Read notes.txt\n… Unknown tool `write`".into(),
        "`explore` · 2 tool calls\n✓ Read notes.txt\n✗ Unknown tool `write`".into(),
        "`explore` · 2 tool calls\n✓ Read notes.txt\n✗ Unknown tool `write`\n✓ finished".into(),
    ];
    let shown = progress(&updates, "t1");
    assert_eq!(shown.first(), every_state.first());
    assert_eq!(shown.last(), every_state.last());
    let mut rest = every_state.iter();
    assert!(shown.iter().all(|s| rest.any(|e| e == s)), "{shown:#?} is not in order");
    let done = finished(&updates, "t1");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["content"][1]["content"]["text"], "The notes say forty-two.");
    assert!(
        !updates.iter().any(|u| u["toolCallId"] == "c1" || u["toolCallId"] == "c2"),
        "reads stay in the card"
    );

    // The child is stored under its parent, not in the editor's history.
    let listed = h.client.call(agent_client_protocol::v1::schema::ListSessionsRequest::new()).await.unwrap();
    let ids: Vec<String> = listed.sessions.iter().map(|s| s.session_id.0.to_string()).collect();
    assert_eq!(ids, vec![session.0.to_string()]);
    h.model.assert_done();
}

#[tokio::test]
async fn subagents_nest_at_most_five_deep_and_every_nested_ask_reaches_the_parent_session() {
    let h = Harness::start(vec![]).await;
    let mut script: Vec<Reply> = (0..5)
        .map(|d| {
            task(
                &format!("t{d}"),
                json!({"description": format!("Level {}", d + 1), "prompt": format!("go deeper {d}")}),
            )
        })
        .collect();
    script.push(task("t5", json!({"description": "Too deep", "prompt": "deeper still"})));
    script.extend((0..6).map(|d| answer(&[&format!("answer {d}")])));
    h.model.script(script);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce); 5]);
    let session = h.session().await;
    h.client.prompt(&session, "delegate").await.unwrap();

    for depth in 1..5 {
        assert!(offered(&h, depth).contains(&"task".to_string()), "depth {depth} may delegate");
    }
    assert!(!offered(&h, 5).contains(&"task".to_string()), "depth 5 may not");
    assert_eq!(
        tool_result(&h.model.messages(6), "t5"),
        "Unknown tool `task`. Available tools: read, write, edit, apply_patch, bash, glob, grep, list_dir, discover, monitor, shell_output, shell_tasks, kill_shell, webfetch, sleep."
    );
    let asks = asks(&h);
    assert_eq!(asks.len(), 5);
    assert!(asks.iter().all(|a| a["sessionId"] == session.0.as_ref()), "every ask is on the parent session");
    assert_eq!(asks[0]["toolCall"]["toolCallId"], "t0");
    for (depth, ask) in asks.iter().enumerate().skip(1) {
        let id = ask["toolCall"]["toolCallId"].as_str().unwrap();
        assert!(id.starts_with("sess_") && id.ends_with(&format!("/t{depth}")), "{id}");
        assert_eq!(ask["toolCall"]["title"], format!("[general] Level {}", depth + 1));
    }
    assert_eq!(tool_result(&h.model.messages(11), "t0").lines().nth(3), Some("answer 4"));
    h.model.assert_done();
}

#[tokio::test]
async fn a_background_task_returns_at_once_reports_when_done_and_answers_a_status_check() {
    let h = Harness::start(vec![]).await;
    h.model.route("BG-JOB", vec![answer(&["background result"])]);
    h.model.script(vec![
        task("t1", json!({"description": "Count things", "prompt": "BG-JOB: count", "subagent_type": "explore", "background": true})),
        answer(&["started"]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "start it").await.unwrap();
    let updates = h.client.updates(&session);
    let child = task_id(&updates, "t1");
    let running =
        json!({"task_id": child, "description": "Count things", "agent": "explore", "status": "running"});
    assert_eq!(serde_json::from_str::<Value>(&tool_result(&parent_messages(&h)[1], "t1")).unwrap(), running);
    h.client
        .wait_for("the child to finish", |_| {
            progress(&h.client.updates(&session), "t1").last().is_some_and(|l| l.ends_with("✓ finished"))
        })
        .await;

    h.model.script(vec![
        task("t2", json!({"description": "", "prompt": "", "task_id": child})),
        answer(&["ok"]),
    ]);
    h.client.prompt(&session, "how did it go?").await.unwrap();
    let parent = parent_messages(&h);
    assert_eq!(parent.len(), 4);
    let notice = parent[2].last().unwrap()["content"].to_string();
    assert!(
        notice.contains(&format!("<task-notification task_id=\\\"{child}\\\" status=\\\"completed\\\">"))
            && notice.contains("background result"),
        "{notice}"
    );
    let status = serde_json::from_str::<Value>(&tool_result(&parent[3], "t2")).unwrap();
    assert_eq!(
        status,
        json!({"task_id": child, "description": "Count things", "agent": "explore", "status": "completed", "result": "background result"})
    );
    h.model.assert_done();
}

#[tokio::test]
async fn a_task_id_resumes_the_same_subagent_with_its_context() {
    let h = Harness::start(vec![]).await;
    h.model.script(vec![
        task(
            "t1",
            json!({"description": "First look", "prompt": "FIRST question", "subagent_type": "explore"}),
        ),
        answer(&["first answer"]),
        answer(&["ok"]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "one").await.unwrap();
    let child = task_id(&h.client.updates(&session), "t1");
    h.model.script(vec![
        task("t2", json!({"description": "Follow up", "prompt": "SECOND question", "task_id": child})),
        answer(&["second answer"]),
        answer(&["ok"]),
    ]);
    h.client.prompt(&session, "two").await.unwrap();
    let resumed: Vec<Value> = h.model.messages(4)[1..].to_vec();
    assert_eq!(
        resumed,
        vec![
            json!({"role": "user", "content": "FIRST question"}),
            json!({"role": "assistant", "content": "first answer"}),
            json!({"role": "user", "content": "SECOND question"}),
        ]
    );
    assert_eq!(task_id(&h.client.updates(&session), "t2"), child);
    assert!(tool_result(&h.model.messages(5), "t2").contains("<task_result>\nsecond answer\n</task_result>"));
    h.model.assert_done();
}

#[tokio::test]
async fn a_child_edit_is_a_top_level_call_of_the_parent_and_its_ask_is_answered_there() {
    let h = Harness::start(vec![]).await;
    let target = h.cwd.join("made.txt");
    h.model.script(vec![
        task("t1", json!({"description": "Make a file", "prompt": "create made.txt"})),
        call("c1", "write", json!({"file_path": target, "content": "hello\n"})),
        answer(&["made it"]),
        answer(&["done"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "delegate a write").await.unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello\n");

    let updates = h.client.updates(&session);
    let child = task_id(&updates, "t1");
    let lifted = format!("{child}/c1");
    let asks = asks(&h);
    assert_eq!(asks.len(), 2);
    assert_eq!(asks[1]["sessionId"], session.0.as_ref());
    assert_eq!(asks[1]["toolCall"]["toolCallId"], lifted);
    assert_eq!(asks[1]["toolCall"]["title"], "[general] Create made.txt");
    let shown =
        updates.iter().find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == lifted).unwrap();
    assert_eq!(shown["title"], "[general] Create made.txt");
    assert_eq!(shown["_meta"]["tinycode"]["parentToolCallId"], "t1");
    assert_eq!(finished(&updates, &lifted)["status"], "completed");
    h.model.assert_done();
}

#[tokio::test]
async fn cancelling_the_parent_cancels_the_child_and_reaps_its_shell_processes() {
    let h = Harness::start(vec![]).await;
    let pid_file = h.cwd.join("pid.txt");
    h.model.script(vec![
        task("t1", json!({"description": "Run long", "prompt": "run it"})),
        call("c1", "bash", json!({"command": format!("sleep 300 & echo $! > {}; wait", pid_file.display())})),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "run something long");
    let pid = pid_from(&pid_file).await;
    h.client.cancel(&session);
    let response = turn.await.unwrap().unwrap();
    assert_eq!(stop(&response), json!("cancelled"));
    gone_within(pid, Duration::from_secs(5)).await;
    let updates = h.client.updates(&session);
    assert_eq!(finished(&updates, "t1")["status"], "failed");
    h.model.assert_done();
}

#[tokio::test]
async fn a_project_agent_only_narrows_its_tools_and_cannot_loosen_the_mode_nor_pick_the_model() {
    let h = Harness::start(vec![]).await;
    h.write(
        ".tinycode/agents/helper.md",
        "---\ndescription: Helps\ntools: read, write, question, made_up\nmode: yolo\nmodel: elsewhere/model\n---\nHelp.\n",
    );
    let target = h.cwd.join("made.txt");
    h.model.script(vec![
        task("t1", json!({"description": "Help out", "prompt": "write it", "subagent_type": "helper"})),
        call("c1", "write", json!({"file_path": target, "content": "x"})),
        answer(&["could not"]),
        answer(&["done"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "use the helper").await.unwrap();
    assert_eq!(offered(&h, 1), vec!["read", "write"]);
    assert_eq!(h.model.requests()[1].body["model"], "fake-model");
    let asks = asks(&h);
    assert_eq!(asks.len(), 2, "yolo from a project file does not skip the ask");
    assert_eq!(asks[1]["toolCall"]["title"], "[helper] Create made.txt");
    assert!(!target.exists());
    h.model.assert_done();
}

/// The state the editor ends up showing for call `id`: every field of its updates, later ones replacing earlier.
fn final_state(updates: &[Value], id: &str) -> serde_json::Map<String, Value> {
    let mut state = serde_json::Map::new();
    for update in updates.iter().filter(|u| u["toolCallId"] == id) {
        for (key, value) in update.as_object().unwrap() {
            if key != "sessionUpdate" {
                state.insert(key.clone(), value.clone());
            }
        }
    }
    state
}

/// The ids of the calls shown, in the order their cards appeared.
fn cards_in_order(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .map(|u| u["toolCallId"].as_str().unwrap().to_string())
        .collect()
}

/// `(used, subagentTokens)` of every usage update.
fn usage(updates: &[Value]) -> Vec<(Value, Value)> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .map(|u| (u["used"].clone(), u["_meta"]["tinycode"]["subagentTokens"].clone()))
        .collect()
}

#[tokio::test]
async fn loading_the_parent_replays_the_child_calls_as_shown_live_and_child_tokens_count_as_they_are_spent() {
    let mut h = Harness::start(vec![]).await;
    let target = h.cwd.join("made.txt");
    h.model.script(vec![
        task("t1", json!({"description": "Make a file", "prompt": "create made.txt"})),
        Reply::Sse(vec![
            fm::tool_call(0, "c1", "write", &json!({"file_path": target, "content": "hello\n"}).to_string()),
            fm::finish("tool_calls"),
            fm::usage(40, 5),
        ]),
        call("c2", "bash", json!({"command": "cat made.txt"})),
        answer(&["made it"]),
        answer(&["done"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce); 3]);
    let session = h.session().await;
    h.client.prompt(&session, "delegate a write").await.unwrap();
    let live = h.client.updates(&session);
    let child = task_id(&live, "t1");
    let lifted = [format!("{child}/c1"), format!("{child}/c2")];
    assert_eq!(cards_in_order(&live), ["t1".to_string(), lifted[0].clone(), lifted[1].clone()]);

    // The parent's context meter stays its own; the tokens the child's responses report (45, none, then 110)
    // count as they are spent.
    let shown = usage(&live);
    assert_eq!(shown.len(), 4, "{shown:?}");
    let parent_context = shown[0].0.clone();
    assert_eq!(
        shown,
        vec![
            (parent_context.clone(), Value::Null),
            (parent_context.clone(), json!(45)),
            (parent_context, json!(155)),
            (json!(110), json!(155)),
        ]
    );
    let first_child_tokens = live
        .iter()
        .position(|u| u["sessionUpdate"] == "usage_update" && u["_meta"]["tinycode"]["subagentTokens"] == 45)
        .unwrap();
    let task_done = live.iter().position(|u| u["toolCallId"] == "t1" && u["status"] == "completed").unwrap();
    assert!(first_child_tokens < task_done, "the child's tokens count while it works");

    h.restart().await;
    h.client.call(acp::LoadSessionRequest::new(session.clone(), h.cwd.clone())).await.unwrap();
    let replayed = h.client.updates(&session);
    assert_eq!(cards_in_order(&replayed), cards_in_order(&live));
    for id in &lifted {
        let shown = final_state(&live, id);
        assert_eq!(shown["_meta"]["tinycode"]["parentToolCallId"], "t1");
        assert_eq!(final_state(&replayed, id), shown, "{id}");
    }
    let card = |updates: &[Value]| {
        let mut state = final_state(updates, "t1");
        state.remove("_meta");
        state
    };
    assert_eq!(card(&replayed), card(&live));
    assert_eq!(usage(&replayed), vec![(json!(110), json!(155))]);
    h.model.assert_done();
}

const REVIEWER: &str = "[agents.reviewer]\ndescription = \"Reviews diffs\"\nprompt = \"Review strictly.\"\n\
                        tools = [\"read\", \"grep\"]\nmode = \"plan\"\nmodel = \"fake-model-large\"";

fn task_description(h: &Harness) -> String {
    let tools = h.model.requests()[0].body["tools"].as_array().unwrap().clone();
    let task = tools.iter().find(|t| t["function"]["name"] == "task").unwrap();
    task["function"]["description"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn an_untrusted_projects_config_agent_is_not_offered_and_cannot_be_started() {
    let h = Setup::new(vec![]).config(REVIEWER).start().await;
    h.model.script(vec![
        task("t1", json!({"description": "Review", "prompt": "review it", "subagent_type": "reviewer"})),
        answer(&["ok"]),
    ]);
    h.client.answer_permissions(&[Answer::Option(NOT_NOW), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.wait_log("the trust question", |log| !log.permission_requests.lock().unwrap().is_empty()).await;
    h.client.prompt(&session, "get a review").await.unwrap();
    assert!(!task_description(&h).contains("reviewer"), "{}", task_description(&h));
    assert_eq!(
        tool_result(&h.model.messages(1), "t1"),
        "Unknown subagent_type `reviewer`. Available: general, explore, plan."
    );
    h.model.assert_done();
}

#[tokio::test]
async fn a_trusted_projects_config_agent_runs_with_its_prompt_tools_mode_and_model() {
    let h = Setup::new(vec![]).config(REVIEWER).trusted().start().await;
    h.model.script(vec![
        task("t1", json!({"description": "Review", "prompt": "review it", "subagent_type": "reviewer"})),
        answer(&["looks fine"]),
        answer(&["ok"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "get a review").await.unwrap();
    assert!(task_description(&h).contains("\n- reviewer: Reviews diffs"), "{}", task_description(&h));
    assert_eq!(offered(&h, 1), vec!["read", "grep"]);
    assert_eq!(h.model.requests()[1].body["model"], "fake-model-large");
    let system = h.model.messages(1)[0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("You are a subagent") && system.contains("Review strictly."), "{system}");
    assert!(tool_result(&h.model.messages(2), "t1").contains("<task_result>\nlooks fine\n</task_result>"));
    h.model.assert_done();
}
