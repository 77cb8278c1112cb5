//! Sessions that survive: load with replay, resume, list, close, delete, unknown ids, and two agents sharing
//! one database, all through ACP against agents restarted on the same data directory.

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};

use crate::suite::binary::Env;
use crate::suite::turn::stop;
use crate::support::client::{Answer, Harness, PATIENCE, TestClient};
use crate::support::fake_model::{self as fm, Reply, answer, calls};
use crate::support::snapshot::assert_snapshot;

fn roles(messages: &[Value]) -> Vec<&str> {
    messages.iter().map(|m| m["role"].as_str().unwrap()).collect()
}

fn code(error: &agent_client_protocol::Error) -> i32 {
    serde_json::to_value(error.code).unwrap().as_i64().unwrap() as i32
}

async fn load(
    client: &TestClient,
    session: &acp::SessionId,
    cwd: &std::path::Path,
) -> acp::LoadSessionResponse {
    client.call(acp::LoadSessionRequest::new(session.clone(), cwd.to_path_buf())).await.unwrap()
}

async fn list(
    client: &TestClient,
    cwd: Option<&std::path::Path>,
    cursor: Option<String>,
) -> acp::ListSessionsResponse {
    let request = acp::ListSessionsRequest::new().cwd(cwd.map(|c| c.to_path_buf())).cursor(cursor);
    client.call(request).await.unwrap()
}

/// Every page of `session/list`, followed through its cursors.
async fn list_all(client: &TestClient, cwd: Option<&std::path::Path>) -> Vec<Vec<acp::SessionInfo>> {
    let mut pages = Vec::new();
    let mut cursor = None;
    loop {
        let page = list(client, cwd, cursor).await;
        cursor = page.next_cursor.clone();
        pages.push(page.sessions);
        if cursor.is_none() {
            return pages;
        }
    }
}

/// A two-turn conversation with reasoning, a read and an approved edit.
async fn conversation(h: &Harness) -> acp::SessionId {
    let file = h.write("a.txt", "hi\n");
    let path = file.display().to_string();
    h.model.script(vec![
        Reply::Sse(vec![
            fm::reasoning("reasoning_content", "Reading it."),
            fm::tool_call(0, "c_read", "read", &json!({"file_path": path}).to_string()),
            fm::finish("tool_calls"),
        ]),
        answer(&["It says hi."]),
        calls(&[(
            "c_edit",
            "edit",
            &json!({"file_path": path, "old_string": "hi", "new_string": "hello"}).to_string(),
        )]),
        answer(&["Done."]),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "what is in a.txt?").await.unwrap();
    h.client.answer_permissions(&[Answer::Pick(acp::PermissionOptionKind::AllowOnce)]);
    h.client.prompt(&session, "say hello instead").await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello\n");
    session
}

#[tokio::test]
async fn loading_after_a_restart_replays_the_conversation_before_answering_and_the_model_sees_it_again() {
    let mut h = Harness::start(vec![]).await;
    let session = conversation(&h).await;
    h.restart().await;

    let response = load(&h.client, &session, &h.cwd).await;
    // Everything arrived before the answer: the transcript is complete the moment `session/load` returns.
    assert_snapshot("load_replay", &Value::Array(h.transcript(&session)));
    assert_eq!(response.modes.unwrap().current_mode_id.0.as_ref(), "build");

    h.model.script(vec![answer(&["You are welcome."])]);
    h.client.prompt(&session, "thanks").await.unwrap();
    let messages = h.model.messages(4);
    assert_eq!(
        roles(&messages),
        vec![
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user"
        ]
    );
    assert_eq!(messages[1], json!({"role": "user", "content": "what is in a.txt?"}));
    assert_eq!(messages[3]["content"], "1\thi\n\n(End of file: 1 lines)");
    assert_eq!(messages[2]["reasoning_content"], "Reading it.");
    assert_eq!(messages[9], json!({"role": "user", "content": "thanks"}));
    h.model.assert_done();
}

#[tokio::test]
async fn resuming_restores_the_conversation_without_replaying_it() {
    let mut h = Harness::start(vec![answer(&["First answer."])]).await;
    let session = h.session().await;
    h.client.prompt(&session, "first question").await.unwrap();
    h.restart().await;

    let elsewhere = h.root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let error =
        h.client.call(acp::ResumeSessionRequest::new(session.clone(), elsewhere.clone())).await.unwrap_err();
    assert_eq!(
        (code(&error), error.message),
        (
            -32602,
            format!("session {} belongs to {}, not {}", session.0, h.cwd.display(), elsewhere.display())
        )
    );
    let response =
        h.client.call(acp::ResumeSessionRequest::new(session.clone(), h.cwd.clone())).await.unwrap();
    assert_eq!(response.modes.unwrap().current_mode_id.0.as_ref(), "build");
    assert_eq!(h.transcript(&session), Vec::<Value>::new());

    h.model.script(vec![answer(&["Second answer."])]);
    h.client.prompt(&session, "second question").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(
        messages[1..],
        [
            json!({"role": "user", "content": "first question"}),
            json!({"role": "assistant", "content": "First answer."}),
            json!({"role": "user", "content": "second question"}),
        ]
    );
}

#[tokio::test]
async fn the_list_pages_newest_first_filters_by_cwd_and_skips_sessions_never_prompted() {
    let h = Harness::start(vec![]).await;
    let other = h.root.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    h.model.script(vec![answer(&["ok"]); 53]);
    for i in 0..51 {
        let session = h.session().await;
        h.client.prompt(&session, &format!("task {i}")).await.unwrap();
    }
    for i in 0..2 {
        let session = h.client.new_session(&other).await;
        h.client.prompt(&session, &format!("elsewhere {i}")).await.unwrap();
    }
    h.session().await; // never prompted

    let pages = list_all(&h.client, Some(&h.cwd)).await;
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), vec![50, 1]);
    let here: Vec<&acp::SessionInfo> = pages.iter().flatten().collect();
    let mut titles: Vec<String> = here.iter().map(|s| s.title.clone().unwrap()).collect();
    titles.sort();
    let mut expected: Vec<String> = (0..51).map(|i| format!("task {i}")).collect();
    expected.sort();
    assert_eq!(titles, expected);
    assert!(here.iter().all(|s| s.cwd == h.cwd));
    let stamps: Vec<&str> = here.iter().map(|s| s.updated_at.as_deref().unwrap()).collect();
    let iso = regex::Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$").unwrap();
    assert!(stamps.iter().all(|t| iso.is_match(t)), "{stamps:?}");
    assert!(stamps.windows(2).all(|w| w[0] >= w[1]), "not newest first: {stamps:?}");

    let elsewhere: Vec<String> =
        list_all(&h.client, Some(&other)).await.concat().into_iter().map(|s| s.title.unwrap()).collect();
    assert_eq!(elsewhere.len(), 2);
    assert!(elsewhere.contains(&"elsewhere 0".to_string()) && elsewhere.contains(&"elsewhere 1".to_string()));
    assert_eq!(list_all(&h.client, None).await.concat().len(), 53);

    let request = acp::ListSessionsRequest::new().cursor("not-a-cursor".to_string());
    let error = h.client.call(request).await.unwrap_err();
    assert_eq!((code(&error), error.message.as_str()), (-32602, "invalid cursor"));
}

#[tokio::test]
async fn closing_a_session_mid_turn_cancels_the_turn_and_what_was_said_survives() {
    let h = Harness::start(vec![Reply::Hang(vec![fm::text("Partial answer")])]).await;
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "long task");
    h.client
        .wait_for("the partial answer", |all| {
            all.iter().any(|n| n["update"]["content"]["text"] == "Partial answer")
        })
        .await;

    h.client.call(acp::CloseSessionRequest::new(session.clone())).await.unwrap();
    let response = tokio::time::timeout(PATIENCE, turn).await.unwrap().unwrap().unwrap();
    assert_eq!(stop(&response), json!("cancelled"));
    let error = h.client.prompt(&session, "still there?").await.unwrap_err();
    assert_eq!(code(&error), -32002);

    let before = h.client.updates(&session).len();
    load(&h.client, &session, &h.cwd).await;
    let replay: Vec<Value> = h.client.updates(&session).split_off(before);
    let shown: Vec<(&str, &str)> = replay
        .iter()
        .filter_map(|u| Some((u["sessionUpdate"].as_str()?, u["content"]["text"].as_str()?)))
        .collect();
    assert_eq!(shown, vec![("user_message_chunk", "long task"), ("agent_message_chunk", "Partial answer")]);
}

#[tokio::test]
async fn a_deleted_session_is_gone_from_the_list_and_from_load() {
    let h = Harness::start(vec![answer(&["one"]), answer(&["two"])]).await;
    let keep = h.session().await;
    h.client.prompt(&keep, "keep me").await.unwrap();
    let doomed = h.session().await;
    h.client.prompt(&doomed, "delete me").await.unwrap();

    h.client.call(acp::DeleteSessionRequest::new(doomed.clone())).await.unwrap();
    let listed: Vec<String> =
        list(&h.client, None, None).await.sessions.into_iter().map(|s| s.session_id.to_string()).collect();
    assert_eq!(listed, vec![keep.to_string()]);
    let error = h.client.call(acp::LoadSessionRequest::new(doomed.clone(), h.cwd.clone())).await.unwrap_err();
    assert_eq!(code(&error), -32002);
    let error = h.client.call(acp::DeleteSessionRequest::new(doomed.clone())).await.unwrap_err();
    assert_eq!(code(&error), -32002);
    let db = rusqlite::Connection::open(h.data.join("tinycode.db")).unwrap();
    let left: i64 = db
        .query_row("SELECT COUNT(*) FROM messages WHERE session_id = ?1", [doomed.to_string()], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0, "a deleted session's messages are deleted too");
}

#[tokio::test]
async fn every_session_method_answers_an_unknown_id_with_resource_not_found() {
    let h = Harness::start(vec![]).await;
    let ghost = acp::SessionId::from("sess_ghost".to_string());
    let expected = json!({"code": -32002, "message": "Session not found: sess_ghost", "data": {"sessionId": "sess_ghost"}});
    let errors = vec![
        h.client.call(acp::LoadSessionRequest::new(ghost.clone(), h.cwd.clone())).await.unwrap_err(),
        h.client.call(acp::ResumeSessionRequest::new(ghost.clone(), h.cwd.clone())).await.unwrap_err(),
        h.client.call(acp::CloseSessionRequest::new(ghost.clone())).await.unwrap_err(),
        h.client.call(acp::DeleteSessionRequest::new(ghost.clone())).await.unwrap_err(),
        h.client.call(acp::SetSessionModeRequest::new(ghost.clone(), "plan")).await.unwrap_err(),
        h.client
            .call(acp::SetSessionConfigOptionRequest::new(
                ghost.clone(),
                "model",
                acp::SessionConfigOptionValue::value_id("x"),
            ))
            .await
            .unwrap_err(),
        h.client.prompt(&ghost, "hello?").await.unwrap_err(),
    ];
    for error in errors {
        assert_eq!(serde_json::to_value(&error).unwrap(), expected);
    }
}

#[tokio::test]
async fn two_agents_on_one_database_work_at_once_and_see_each_others_sessions() {
    let h = Harness::start(vec![]).await;
    let second = h.another_agent().await;
    h.model.script(vec![answer(&["ok"]); 10]);
    let (a, b) = (h.session().await, second.new_session(&h.cwd).await);
    let first_agent = async {
        for i in 0..5 {
            h.client.prompt(&a, &format!("from the first window {i}")).await.unwrap();
        }
    };
    let second_agent = async {
        for i in 0..5 {
            second.prompt(&b, &format!("from the second window {i}")).await.unwrap();
        }
    };
    tokio::join!(first_agent, second_agent);

    for client in [&h.client, &second] {
        let mut titles: Vec<String> =
            list(client, Some(&h.cwd), None).await.sessions.into_iter().map(|s| s.title.unwrap()).collect();
        titles.sort();
        assert_eq!(titles, vec!["from the first window 0", "from the second window 0"]);
    }
    load(&second, &a, &h.cwd).await;
    let users: Vec<String> = second
        .updates(&a)
        .iter()
        .filter(|u| u["sessionUpdate"] == "user_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, (0..5).map(|i| format!("from the first window {i}")).collect::<Vec<_>>());
    second.close().await.unwrap();
}

/// The real binary on `env`, with an SDK client on its stdio.
async fn agent_process(
    env: &Env,
    model: &crate::support::fake_model::FakeModel,
) -> (tokio::process::Child, TestClient) {
    let mut child = env.command(model, &["acp"]).stderr(std::process::Stdio::null()).spawn().unwrap();
    let client = TestClient::over(child.stdin.take().unwrap(), child.stdout.take().unwrap(), None).await;
    client.initialize(acp::ClientCapabilities::new()).await;
    (child, client)
}

#[tokio::test]
async fn after_kill_9_mid_stream_a_restarted_agent_loads_everything_that_had_completed() {
    let env = Env::new();
    let notes = env.cwd().join("notes.txt");
    std::fs::write(&notes, "remember this\n").unwrap();
    let model = crate::support::fake_model::FakeModel::start(vec![
        calls(&[("c1", "read", &json!({"file_path": notes}).to_string())]),
        Reply::Hang(vec![fm::text("I am halfway")]),
    ])
    .await;
    let (mut child, client) = agent_process(&env, &model).await;
    let session = client.new_session(&env.cwd()).await;
    let _turn = client.prompt_later(&session, "read my notes");
    client
        .wait_for("the streaming answer", |all| {
            all.iter().any(|n| n["update"]["content"]["text"] == "I am halfway")
        })
        .await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    let db = rusqlite::Connection::open(env.dir.path().join("data/tinycode.db")).unwrap();
    let integrity: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    drop(db);

    let (mut child, client) = agent_process(&env, &model).await;
    load(&client, &session, &env.cwd()).await;
    let replay: Vec<Value> = client
        .updates(&session)
        .into_iter()
        .filter(|u| {
            !["available_commands_update", "config_option_update"]
                .contains(&u["sessionUpdate"].as_str().unwrap())
        })
        .map(|u| json!([u["sessionUpdate"], u.get("toolCallId"), u.get("status"), u["content"].get("text")]))
        .collect();
    assert_eq!(
        replay,
        vec![
            json!(["user_message_chunk", null, null, "read my notes"]),
            json!(["tool_call", "c1", null, null]),
            json!(["tool_call_update", "c1", "completed", null]),
        ]
    );

    model.script(vec![answer(&["Welcome back."])]);
    client.prompt(&session, "go on").await.unwrap();
    let messages = model.messages(2);
    assert_eq!(roles(&messages), vec!["system", "user", "assistant", "tool", "user"]);
    assert_eq!(messages[3]["content"], "1\tremember this\n\n(End of file: 1 lines)");
    client.close().await.unwrap();
    assert!(child.wait().await.unwrap().success());
}
