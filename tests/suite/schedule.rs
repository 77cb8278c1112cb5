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
    // Any request that needs the store waits until it is open, and opening it schedules the stored jobs.
    h.client.call(acp::ListSessionsRequest::new()).await.unwrap();
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
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
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
