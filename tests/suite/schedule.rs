//! Scheduled work through ACP: the model makes, lists and deletes jobs; a job fires as a turn of its session,
//! shown in the editor (a user message marked `_meta.tinycode.scheduled`), or run without an editor and stored
//! when no editor has the session open; an off switch turns it all off. The clock is moved by hand here; the
//! scheduler's own timing runs under tokio's paused clock in its unit tests.

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::turn::tool_result;
use crate::support::client::{Answer, Harness, PATIENCE, Setup};
use crate::support::fake_model::{answer, calls};
use tinycode::schedule::{Clock, ManualClock};

/// 2026-12-01 07:30:10 UTC.
const START: i64 = 1_796_110_210_000;

fn create(id: &str, args: Value) -> crate::support::fake_model::Reply {
    calls(&[(id, "cron_create", &args.to_string())])
}

fn user_chunks(h: &Harness, session: &acp::SessionId) -> Vec<Value> {
    h.client.updates(session).into_iter().filter(|u| u["sessionUpdate"] == "user_message_chunk").collect()
}

#[tokio::test]
async fn a_job_the_model_made_fires_as_a_turn_the_editor_sees() {
    let clock = ManualClock::new(START);
    let h = Setup::new(vec![
        create("c", json!({"cron": "*/5 * * * *", "prompt": "check the build", "recurring": false})),
        answer(&["scheduled"]),
        answer(&["the build is green"]),
    ])
    .clock(Clock::Manual(clock.clone()))
    .start()
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "check the build every five minutes").await.unwrap();
    let created = tool_result(&h.model.messages(1), "c");
    let id = created.split_whitespace().nth(1).unwrap().to_string();
    assert_eq!(
        created,
        format!(
            "Scheduled {id} `*/5 * * * *` (once, ends with this session; next 2026-12-01T07:35:00.000Z): check the build. It runs only while tinycode runs; a firing missed meanwhile is skipped."
        )
    );
    let ask = serde_json::to_value(&h.client.log.permission_requests.lock().unwrap()[0]).unwrap();
    assert_eq!(ask["toolCall"]["title"], "Schedule `*/5 * * * *`");

    clock.set(START + 5 * 60_000);
    h.client
        .wait_for("the scheduled turn", |_| h.said(&session).contains(&"the build is green".to_string()))
        .await;
    let shown = user_chunks(&h, &session);
    assert_eq!(
        shown,
        vec![json!({
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "text", "text": format!("⏰ Scheduled job `{id}` (`*/5 * * * *`, one-shot): check the build"), "_meta": {"tinycode": {"scheduled": {"jobId": id, "cron": "*/5 * * * *"}}}},
            "messageId": shown[0]["messageId"],
        })]
    );
    let prompt = h.model.messages(2).last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(prompt.starts_with(&format!("<scheduled-job id=\"{id}\" cron=\"*/5 * * * *\">")), "{prompt}");
    assert!(prompt.ends_with("\n\ncheck the build"), "{prompt}");
    h.model.assert_done();
}

#[tokio::test]
async fn a_durable_job_fires_after_a_restart_without_an_editor_and_its_turn_is_stored() {
    let clock = ManualClock::new(START);
    let mut h = Setup::new(vec![
        create("c", json!({"cron": "0 8 * * *", "prompt": "summarise the night's logs", "durable": true})),
        answer(&["scheduled"]),
        answer(&["nothing happened overnight"]),
    ])
    .clock(Clock::Manual(clock.clone()))
    .start()
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "every morning at 8").await.unwrap();
    h.restart().await;
    // A job fires only in a process serving its project: an editor opens another session there.
    h.client.new_session(&h.cwd).await;
    let mut events = h.bus.subscribe();
    // 08:00:10 plus the longest offset a recurring job may fire after its match.
    clock.set(START + 30 * 60_000 + tinycode::schedule::MAX_JITTER.as_millis() as i64);
    let ran = async {
        loop {
            if let tinycode::bus::Event::JobRan { session_id, .. } = events.recv().await.unwrap() {
                return session_id;
            }
        }
    };
    let ran = tokio::time::timeout(PATIENCE, ran).await.expect("the job did not fire");
    assert_eq!(ran, session.0.as_ref());
    // The unattended turn was saved; loading the session shows it.
    let before = h.client.updates(&session).len();
    h.client.call(acp::LoadSessionRequest::new(session.clone(), h.cwd.clone())).await.unwrap();
    let replay: Vec<Value> = h.client.updates(&session).split_off(before);
    let texts: Vec<&str> = replay.iter().filter_map(|u| u["content"]["text"].as_str()).collect();
    let banner =
        texts.iter().position(|t| t.starts_with("⏰ Scheduled job `cron_")).expect("the job's prompt");
    assert!(texts[banner].ends_with("(`0 8 * * *`, recurring): summarise the night's logs"), "{texts:?}");
    assert_eq!(texts[banner + 1], "nothing happened overnight");
    h.model.assert_done();
}

#[tokio::test]
async fn the_model_lists_and_deletes_jobs_and_bad_expressions_come_back_with_the_reason() {
    let h = Harness::start(vec![
        create("bad", json!({"cron": "61 * * * *", "prompt": "x"})),
        create("never", json!({"cron": "0 0 30 2 *", "prompt": "x"})),
        create("ok", json!({"cron": "0 9 * * mon-fri", "prompt": "standup notes"})),
        calls(&[("l", "cron_list", "{}")]),
        answer(&["listed"]),
    ])
    .await;
    // Each creation that passes the expression check asks ("never" is asked about, then fails to schedule).
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "schedule things").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "bad"),
        "Invalid cron expression: minute 61 is out of range 0-59."
    );
    assert_eq!(
        tool_result(&h.model.messages(2), "never"),
        "`0 0 30 2 *` never matches a date in the next four years."
    );
    let listed = tool_result(&h.model.messages(4), "l");
    assert!(
        listed.starts_with("cron_")
            && listed.contains(" `0 9 * * mon-fri` (recurring, ends with this session; next "),
        "{listed}"
    );
    assert!(listed.ends_with("): standup notes"), "{listed}");
    let id = listed.split_whitespace().next().unwrap().to_string();

    h.model.script(vec![
        calls(&[("d", "cron_delete", &json!({"id": id}).to_string())]),
        calls(&[("d2", "cron_delete", &json!({"id": id}).to_string())]),
        calls(&[("l2", "cron_list", "{}")]),
        answer(&["gone"]),
    ]);
    // Deleting a job asks as an edit of the session's schedule does; "always" covers the second delete.
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    h.client.prompt(&session, "delete it").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(6), "d"), format!("Deleted {id}; it will not fire again."));
    assert_eq!(
        tool_result(&h.model.messages(7), "d2"),
        format!("There is no job `{id}` in this session; cron_list shows the jobs there are.")
    );
    assert_eq!(tool_result(&h.model.messages(8), "l2"), "No scheduled jobs in this session.");
    h.model.assert_done();
}

#[tokio::test]
async fn the_off_switch_turns_scheduling_off_for_the_tools() {
    let h = Setup::new(vec![create("c", json!({"cron": "* * * * *", "prompt": "x"})), answer(&["ok"])])
        .config("[cron]\nenabled = false")
        .start()
        .await;
    let session = h.session().await;
    h.client.prompt(&session, "schedule").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "c"),
        "Error: scheduled jobs are turned off here (`[cron] enabled = false` in the config, TINYCODE_DISABLE_CRON, or a headless run)"
    );
    assert!(h.client.log.permission_requests.lock().unwrap().is_empty(), "nothing was asked");
    h.model.assert_done();
}

#[tokio::test]
async fn with_durable_jobs_turned_off_a_durable_job_is_made_for_the_session_only_and_the_model_is_told() {
    let h = Setup::new(vec![
        create("c", json!({"cron": "0 9 * * *", "prompt": "standup", "recurring": false, "durable": true})),
        answer(&["ok"]),
    ])
    .config("[cron]\ndurable = false")
    .clock(Clock::Manual(ManualClock::new(START)))
    .start()
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "remind me at nine").await.unwrap();
    let created = tool_result(&h.model.messages(1), "c");
    let id = created.split_whitespace().nth(1).unwrap().to_string();
    assert_eq!(
        created,
        format!(
            "Scheduled {id} `0 9 * * *` (once, ends with this session; next 2026-12-01T09:00:00.000Z): standup. It runs only while tinycode runs; a firing missed meanwhile is skipped. Durable jobs are turned off in the user's configuration, so this one ends with the session."
        )
    );
    h.model.assert_done();
}

/// The options an ask offered, by kind.
fn offered(ask: &acp::RequestPermissionRequest) -> Vec<String> {
    let ask = serde_json::to_value(ask).unwrap();
    ask["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn creating_a_job_asks_in_accept_edits_and_yolo_and_never_offers_always() {
    let h = Setup::new(vec![
        create("a", json!({"cron": "0 9 * * *", "prompt": "standup"})),
        answer(&["asked"]),
        create("y", json!({"cron": "0 9 * * *", "prompt": "standup", "durable": true})),
        answer(&["asked again"]),
    ])
    .clock(Clock::Manual(ManualClock::new(START)))
    .start()
    .await;
    let session = h.session().await;
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "accept-edits")).await.unwrap();
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    h.client.prompt(&session, "every morning").await.unwrap();
    assert!(tool_result(&h.model.messages(1), "a").starts_with("Scheduled cron_"));
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "yolo")).await.unwrap();
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    h.client.prompt(&session, "and keep it").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(3), "y"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
    let asks = h.client.log.permission_requests.lock().unwrap().clone();
    assert_eq!(asks.len(), 2, "both modes asked, and the first answer was not remembered");
    for ask in &asks {
        assert_eq!(offered(ask), vec!["allow_once", "reject_once", "reject_always"]);
        let ask = serde_json::to_value(ask).unwrap();
        assert_eq!(ask["toolCall"]["title"], "Schedule `0 9 * * *`");
    }
    h.model.assert_done();
}

/// Wait for the next `JobRan` on `events`.
async fn next_run(events: &mut tokio::sync::broadcast::Receiver<tinycode::bus::Event>) -> String {
    let ran = async {
        loop {
            if let tinycode::bus::Event::JobRan { session_id, .. } = events.recv().await.unwrap() {
                return session_id;
            }
        }
    };
    tokio::time::timeout(PATIENCE, ran).await.expect("the job did not fire")
}

/// The durable jobs in the harness's database: (id, last_fired).
fn stored_jobs(h: &Harness) -> Vec<(String, Option<i64>)> {
    let db = rusqlite::Connection::open(h.data.join("tinycode.db")).unwrap();
    let mut statement = db.prepare("SELECT id, last_fired FROM cron_jobs ORDER BY id").unwrap();
    statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

const DAY: i64 = 24 * 3_600_000;

#[tokio::test]
async fn a_durable_job_of_one_project_does_not_fire_in_a_process_serving_another() {
    let clock = ManualClock::new(START);
    let mut h = Setup::new(vec![
        create("c", json!({"cron": "0 8 * * *", "prompt": "summarise the logs", "durable": true})),
        answer(&["scheduled"]),
        answer(&["done on day two"]),
    ])
    .clock(Clock::Manual(clock.clone()))
    .start()
    .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "every morning at 8").await.unwrap();
    h.restart().await;
    let other = h.root.path().join("other-project");
    std::fs::create_dir_all(&other).unwrap();
    h.client.new_session(&other).await;
    let mut events = h.bus.subscribe();
    let jitter = tinycode::schedule::MAX_JITTER.as_millis() as i64;
    // Day one, 08:00 and the longest offset: this process serves only the other project.
    let day_one = START + 30 * 60_000 + jitter;
    clock.set(day_one);
    // Now it serves the job's project too: the job fires from its next match on.
    h.client.new_session(&h.cwd).await;
    clock.set(day_one + DAY);
    assert_eq!(next_run(&mut events).await, session.0.as_ref());
    let fired = stored_jobs(&h);
    assert_eq!(fired.len(), 1);
    let last = fired[0].1.expect("claimed");
    assert!(last > day_one, "the first firing was on day two, not while only the other project was served");
    h.model.assert_done();
}

#[tokio::test]
async fn a_job_made_in_yolo_runs_with_default_rights_and_what_it_did_is_shown_when_the_session_is_opened() {
    let clock = ManualClock::new(START);
    let mut h = Setup::new(vec![
        create("c", json!({"cron": "0 8 * * *", "prompt": "clean up", "durable": true, "recurring": false})),
        answer(&["scheduled"]),
        calls(&[(
            "rm",
            "bash",
            &json!({"command": "touch pwned", "description": "make a file"}).to_string(),
        )]),
        answer(&["could not"]),
    ])
    .clock(Clock::Manual(clock.clone()))
    .start()
    .await;
    let session = h.session().await;
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "yolo")).await.unwrap();
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    h.client.prompt(&session, "clean up at 8").await.unwrap();
    h.restart().await;
    h.client.new_session(&h.cwd).await;
    let mut events = h.bus.subscribe();
    clock.set(START + 30 * 60_000);
    assert_eq!(next_run(&mut events).await, session.0.as_ref());
    assert!(!h.cwd.join("pwned").exists(), "the unattended turn had no yolo rights");
    assert_eq!(
        tool_result(&h.model.messages(3), "rm"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
    let before = h.client.updates(&session).len();
    h.client.call(acp::ResumeSessionRequest::new(session.clone(), h.cwd.clone())).await.unwrap();
    let phrase = "ran while this session was not open";
    h.client.wait_for("the notice", |all| all.iter().any(|u| u.to_string().contains(phrase))).await;
    let shown: Vec<String> =
        h.client.updates(&session).split_off(before).iter().map(|u| u.to_string()).collect();
    let notice = shown.iter().find(|t| t.contains(phrase)).unwrap_or_else(|| panic!("{shown:?}"));
    assert!(notice.contains("Scheduled job `cron_"), "{notice}");
    assert!(notice.contains("- `touch pwned`: declined (nobody was there to answer)"), "{notice}");
    h.model.assert_done();
}
