//! A session database that refuses writes, is locked by another process for longer than the busy timeout, or
//! is damaged: the editor is told in the turn it happens, what could not be saved is kept and written in order
//! once the database accepts writes again, sessions stored before are untouched, and a damaged file is left
//! byte for byte where the user can recover it while the agent carries on with a fresh database.

use std::path::Path;

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};

use crate::support::client::{Harness, Setup, TestClient};
use crate::support::fake_model::answer;

/// What a prompt's answer says about saving (`_meta.tinycode.unsaved`), `null` when everything was kept.
fn unsaved(response: &acp::PromptResponse) -> Value {
    let extension = response.meta.as_ref().and_then(|m| m.get("tinycode"));
    extension.and_then(|t| t.get("unsaved")).cloned().unwrap_or(Value::Null)
}

/// The user and agent texts `session/load` on `client` replays for `session`, in order.
async fn replayed(client: &TestClient, session: &acp::SessionId, cwd: &Path) -> Vec<(String, String)> {
    client.call(acp::LoadSessionRequest::new(session.clone(), cwd.to_path_buf())).await.unwrap();
    client
        .updates(session)
        .iter()
        .filter_map(|u| {
            let who = match u["sessionUpdate"].as_str()? {
                "user_message_chunk" => "user",
                "agent_message_chunk" => "agent",
                _ => return None,
            };
            Some((who.to_string(), u["content"]["text"].as_str()?.to_string()))
        })
        .collect()
}

fn said(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(who, text)| (who.to_string(), text.to_string())).collect()
}

/// The notices the editor was shown in `session` (rendered as quoted message chunks), paths as placeholders.
fn notices(h: &Harness, session: &acp::SessionId) -> Vec<String> {
    h.said(session)
        .into_iter()
        .filter(|text| text.starts_with("\n\n> **"))
        .map(|text| text.replace(&h.data.display().to_string(), "<data>"))
        .collect()
}

const UNSAVED: &str = "\n\n> **This conversation is not saved yet**\n> The session database <data>/tinycode.db does not accept writes";

#[tokio::test]
async fn a_database_that_refuses_writes_is_told_in_the_turn_and_everything_is_stored_in_order_once_it_accepts_them()
 {
    let fault = tinycode::store::Fault::default();
    let script = vec![answer(&["Before."]), answer(&["During."]), answer(&["After."])];
    let h = Setup::new(script).store_fault(fault.clone()).start().await;
    let before = h.session().await;
    let first = h.client.prompt(&before, "stored before").await.unwrap();
    assert_eq!(unsaved(&first), Value::Null);

    fault.set(true);
    let during = h.session().await;
    let second = h.client.prompt(&during, "while read-only").await.unwrap();
    assert_eq!(second.stop_reason, acp::StopReason::EndTurn);
    // The answer does not pretend it was kept: the session row, its title, the prompt, the answer, its usage.
    assert_eq!(unsaved(&second), json!({"items": 5, "database": h.data.join("tinycode.db")}));
    let told = notices(&h, &during);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].starts_with(UNSAVED), "{}", told[0]);
    assert!(told[0].contains("attempt to write a readonly database"), "{}", told[0]);
    // Created while nothing could be written, the session is still there in this process.
    let here = h.client.call(acp::LoadSessionRequest::new(during.clone(), h.cwd.clone())).await;
    assert!(here.is_ok(), "{here:?}");

    fault.set(false);
    let third = h.client.prompt(&during, "after it cleared").await.unwrap();
    assert_eq!(unsaved(&third), Value::Null);
    assert_eq!(
        notices(&h, &during).last().map(String::as_str),
        Some(
            "\n\n> **The conversation is saved**\n> Everything kept in memory is now in <data>/tinycode.db.\n\n"
        )
    );

    let other = h.another_agent().await;
    assert_eq!(
        replayed(&other, &during, &h.cwd).await,
        said(&[
            ("user", "while read-only"),
            ("agent", "During."),
            ("user", "after it cleared"),
            ("agent", "After.")
        ])
    );
    assert_eq!(
        replayed(&other, &before, &h.cwd).await,
        said(&[("user", "stored before"), ("agent", "Before.")])
    );
}

#[tokio::test]
async fn a_lock_held_past_the_busy_timeout_is_waited_out_and_nothing_is_lost() {
    let script = vec![answer(&["Before."]), answer(&["Locked."]), answer(&["Free."])];
    let h = Setup::new(script).env("TINYCODE_DB_BUSY_TIMEOUT_MS", Some("50")).start().await;
    let before = h.session().await;
    h.client.prompt(&before, "stored before").await.unwrap();

    let holder = rusqlite::Connection::open(h.data.join("tinycode.db")).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let during = h.session().await;
    let locked = h.client.prompt(&during, "while locked").await.unwrap();
    assert_eq!(unsaved(&locked), json!({"items": 5, "database": h.data.join("tinycode.db")}));
    let told = notices(&h, &during);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].starts_with(UNSAVED), "{}", told[0]);
    assert!(told[0].contains("database is locked"), "{}", told[0]);

    holder.execute_batch("COMMIT").unwrap();
    let free = h.client.prompt(&during, "lock released").await.unwrap();
    assert_eq!(unsaved(&free), Value::Null);

    let other = h.another_agent().await;
    assert_eq!(
        replayed(&other, &during, &h.cwd).await,
        said(&[
            ("user", "while locked"),
            ("agent", "Locked."),
            ("user", "lock released"),
            ("agent", "Free.")
        ])
    );
    assert_eq!(
        replayed(&other, &before, &h.cwd).await,
        said(&[("user", "stored before"), ("agent", "Before.")])
    );
}

#[tokio::test]
async fn a_damaged_database_is_left_byte_for_byte_beside_a_fresh_one_and_the_editor_is_told_which() {
    // Damaged before the agent starts (it opens its database at once).
    let data = tempfile::tempdir().unwrap();
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(data.path().join("tinycode.db"), &garbage).unwrap();
    let mut h = Setup::new(vec![answer(&["Fresh."]), answer(&["Again."])])
        .env("TINYCODE_DATA_DIR", Some(&data.path().display().to_string()))
        .start()
        .await;
    h.data = data.path().to_path_buf();

    let session = h.session().await;
    h.client.prompt(&session, "first").await.unwrap();
    let aside: Vec<String> = std::fs::read_dir(&h.data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("tinycode-damaged-") && name.ends_with(".db"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read(h.data.join(&aside[0])).unwrap(), garbage, "the damaged file is untouched");
    assert_eq!(
        notices(&h, &session),
        vec![format!(
            "\n\n> **The session database was damaged**\n> <data>/tinycode.db could not be read (file is not a database). It was moved, unchanged, to <data>/{} so you can recover it; tinycode carries on with a fresh database.\n\n",
            aside[0]
        )]
    );
    // Only the first session hears of it.
    let second = h.session().await;
    h.client.prompt(&second, "second").await.unwrap();
    assert_eq!(notices(&h, &second), Vec::<String>::new());

    h.restart().await;
    assert_eq!(replayed(&h.client, &session, &h.cwd).await, said(&[("user", "first"), ("agent", "Fresh.")]));
    assert_eq!(std::fs::read(h.data.join(&aside[0])).unwrap(), garbage);
}

#[tokio::test]
async fn doctor_says_the_database_is_damaged_and_lists_the_one_moved_aside_without_touching_either() {
    let env = crate::suite::binary::Env::new();
    let model = crate::support::fake_model::FakeModel::start(vec![]).await;
    let data = env.dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("tinycode.db"), b"not a database at all, just text").unwrap();
    std::fs::write(data.join("tinycode-damaged-17.db"), b"moved aside earlier").unwrap();
    let mut command = env.command(&model, &["doctor"]);
    command.stdin(std::process::Stdio::null());
    let output =
        tokio::time::timeout(crate::support::client::PATIENCE, command.output()).await.unwrap().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).unwrap();
    let section = text.split("\nChecks").next().unwrap().split("\nSession database:\n").nth(1).unwrap();
    assert_eq!(
        section.replace(&data.display().to_string(), "<data>"),
        "  <data>/tinycode.db: DAMAGED (file is not a database): the agent moves it aside, unchanged, and starts a fresh one\n  damaged, moved aside: <data>/tinycode-damaged-17.db\n"
    );
    assert_eq!(std::fs::read(data.join("tinycode.db")).unwrap(), b"not a database at all, just text");
}

#[tokio::test]
async fn a_database_that_cannot_be_opened_at_all_is_told_on_every_session() {
    let root = tempfile::tempdir().unwrap();
    let blocked = root.path().join("a-file");
    std::fs::write(&blocked, "not a directory").unwrap();
    let h = Setup::new(vec![answer(&["Unsaved."])])
        .env("TINYCODE_DATA_DIR", Some(&blocked.join("data").display().to_string()))
        .start()
        .await;
    let session = h.session().await;
    let told = notices(&h, &session);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].starts_with(&format!(
            "\n\n> **Sessions are not being saved**\n> cannot open the session database {}/data/tinycode.db: ",
            blocked.display()
        )),
        "{}",
        told[0]
    );
    assert!(told[0].ends_with(". This conversation lives only in this process.\n\n"), "{}", told[0]);
    let another = h.session().await;
    assert_eq!(notices(&h, &another).len(), 1);
}
