//! Checkpoints and undo through ACP: every turn that changes files is a checkpoint; `/undo` and `/restore N`
//! put the files back through the editor (`fs/write_text_file`, a reviewable diff) and ask first when a file
//! changed since; shell commands in a git work tree are covered through `git status`; checkpoints survive a
//! restart and go with their session.

use std::path::Path;
use std::process::Command;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::turn::stop;
use crate::support::client::{Answer, Harness, Setup, editor_fs};
use crate::support::fake_model::{Reply, answer, calls};

fn call(id: &str, tool: &str, args: Value) -> (String, String, String) {
    (id.into(), tool.into(), args.to_string())
}

/// One model step per group of calls, then a closing answer.
fn steps(groups: Vec<Vec<(String, String, String)>>, last: &str) -> Vec<Reply> {
    let mut replies: Vec<Reply> = groups
        .iter()
        .map(|group| {
            let borrowed: Vec<(&str, &str, &str)> =
                group.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
            calls(&borrowed)
        })
        .collect();
    replies.push(answer(&[last]));
    replies
}

pub fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&status.stderr));
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The last agent message of `session`.
fn last_said(h: &Harness, session: &acp::SessionId) -> String {
    h.said(session).last().cloned().unwrap_or_default()
}

/// The undo card: its last status, with the content it shows (the last that carried some: a completed update
/// leaves the content it does not change out).
fn undo_card(h: &Harness, session: &acp::SessionId) -> Value {
    let updates: Vec<Value> = h
        .client
        .updates(session)
        .into_iter()
        .filter(|u| u["toolCallId"].as_str().is_some_and(|id| id.starts_with("undo_")))
        .collect();
    let status = updates.iter().rev().find_map(|u| u.get("status").cloned()).unwrap();
    let content = updates.iter().rev().find_map(|u| u.get("content").cloned()).unwrap();
    json!({"status": status, "content": content})
}

#[tokio::test]
async fn undo_reverts_a_multi_file_apply_patch_through_the_editor_as_a_reviewable_diff() {
    let h = Setup::new(vec![]).capabilities(editor_fs()).start().await;
    let a = h.write("a.txt", "alpha\nbeta\n");
    let gone = h.write("gone.txt", "bye\n");
    let added = h.cwd.join("new/b.txt");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+BETA\n*** Add File: new/b.txt\n+fresh\n*** Delete File: gone.txt\n*** End Patch";
    h.model.script(steps(
        vec![
            vec![call("r1", "read", json!({"file_path": a})), call("r2", "read", json!({"file_path": gone}))],
            vec![call("p", "apply_patch", json!({"patch": patch}))],
        ],
        "patched",
    ));
    h.model.script(vec![answer(&["noted"])]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "patch three files").await.unwrap();
    assert_eq!(
        (read(&a).unwrap(), read(&added).unwrap(), read(&gone)),
        ("alpha\nBETA\n".into(), "fresh\n".into(), None)
    );
    let writes_before = h.client.log.fs_writes.lock().unwrap().len();

    assert_eq!(stop(&h.client.prompt(&session, "/undo").await.unwrap()), json!("end_turn"));
    assert_eq!(
        (read(&a), read(&gone), read(&added)),
        (Some("alpha\nbeta\n".into()), Some("bye\n".into()), None)
    );
    let reverts: Vec<(std::path::PathBuf, String)> =
        h.client.log.fs_writes.lock().unwrap()[writes_before..].to_vec();
    assert_eq!(reverts, vec![(a.clone(), "alpha\nbeta\n".into()), (gone.clone(), "bye\n".into())]);
    assert_eq!(
        last_said(&h, &session),
        "Reverted checkpoint 1: `a.txt` restored, `gone.txt` restored, `new/b.txt` deleted (it did not exist before)."
    );
    let card = undo_card(&h, &session);
    assert_eq!(card["status"], "completed");
    assert_eq!(
        card["content"],
        json!([
            {"type": "diff", "path": a, "oldText": "alpha\nBETA\n", "newText": "alpha\nbeta\n"},
            {"type": "diff", "path": gone, "newText": "bye\n"},
            {"type": "content", "content": {"type": "text", "text": "`new/b.txt` is deleted: it did not exist before."}},
        ])
    );

    h.client.prompt(&session, "what now?").await.unwrap();
    let messages = h.model.messages(3);
    let note = messages[messages.len() - 2]["content"].as_str().unwrap().to_string();
    assert!(
        note.starts_with("<checkpoint-restore>\nThe user reverted file changes. Reverted checkpoint 1:"),
        "{note}"
    );
    assert_eq!(h.client.prompt(&session, "/undo").await.map(|r| stop(&r)).unwrap(), json!("end_turn"));
    assert_eq!(
        last_said(&h, &session),
        "There is nothing to undo: no turn of this session changed files since the last undo."
    );
    h.model.assert_done();
}

#[tokio::test]
async fn undo_reverts_what_a_shell_sed_changed_in_a_git_work_tree_including_dirty_and_new_files() {
    let h = Harness::start(vec![]).await;
    let config = h.write("config.ini", "mode=old\n");
    let notes = h.write("notes.txt", "draft old\n");
    git(&h.cwd, &["init", "-q"]);
    git(&h.cwd, &["add", "config.ini"]);
    git(&h.cwd, &["commit", "-q", "-m", "start"]);
    // notes.txt is untracked and config.ini gets an uncommitted change before the turn.
    std::fs::write(&config, "mode=old\nlevel=2\n").unwrap();
    let command = "sed -i 's/old/new/' config.ini notes.txt && echo made > made.txt";
    h.model.script(steps(vec![vec![call("s", "bash", json!({"command": command}))]], "edited"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "switch to new").await.unwrap();
    assert_eq!(read(&config).unwrap(), "mode=new\nlevel=2\n");
    assert_eq!(read(&notes).unwrap(), "draft new\n");

    h.client.prompt(&session, "/undo").await.unwrap();
    assert_eq!(read(&config).unwrap(), "mode=old\nlevel=2\n", "back to the uncommitted content, not HEAD");
    assert_eq!(read(&notes).unwrap(), "draft old\n");
    assert_eq!(read(&h.cwd.join("made.txt")), None);
    assert_eq!(
        last_said(&h, &session),
        "Reverted checkpoint 1: `config.ini` restored, `made.txt` deleted (it did not exist before), `notes.txt` restored."
    );
    h.model.assert_done();
}

#[tokio::test]
async fn a_shell_change_to_a_clean_tracked_file_comes_back_from_the_commit() {
    let h = Harness::start(vec![]).await;
    let file = h.write("src/main.c", "int x = 1;\n");
    git(&h.cwd, &["init", "-q"]);
    git(&h.cwd, &["add", "."]);
    git(&h.cwd, &["commit", "-q", "-m", "start"]);
    h.model
        .script(steps(vec![vec![call("s", "bash", json!({"command": "sed -i 's/1/2/' src/main.c"}))]], "ok"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "bump").await.unwrap();
    assert_eq!(read(&file).unwrap(), "int x = 2;\n");
    h.client.prompt(&session, "/checkpoints").await.unwrap();
    let listing = last_said(&h, &session);
    assert!(listing.starts_with("Checkpoints, oldest first:\n1. "), "{listing}");
    assert!(listing.contains(" “bump”: `src/main.c`\n"), "{listing}");
    h.client.prompt(&session, "/undo").await.unwrap();
    assert_eq!(read(&file).unwrap(), "int x = 1;\n");
}

#[tokio::test]
async fn restore_n_reverts_that_checkpoint_and_every_later_one_and_the_listing_marks_them() {
    let h = Harness::start(vec![]).await;
    let (a, b) = (h.cwd.join("a.txt"), h.cwd.join("b.txt"));
    h.model.script(steps(vec![vec![call("w1", "write", json!({"file_path": a, "content": "v1\n"}))]], "one"));
    h.model.script(steps(
        vec![
            vec![call("r", "read", json!({"file_path": a}))],
            vec![call("w2", "write", json!({"file_path": a, "content": "v2\n"}))],
        ],
        "two",
    ));
    h.model
        .script(steps(vec![vec![call("w3", "write", json!({"file_path": b, "content": "b\n"}))]], "three"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    for prompt in ["create a", "change a", "create b"] {
        h.client.prompt(&session, prompt).await.unwrap();
    }
    assert_eq!((read(&a), read(&b)), (Some("v2\n".into()), Some("b\n".into())));

    h.client.prompt(&session, "/restore 2").await.unwrap();
    assert_eq!((read(&a), read(&b)), (Some("v1\n".into()), None));
    assert_eq!(
        last_said(&h, &session),
        "Reverted checkpoints 2, 3: `a.txt` restored, `b.txt` deleted (it did not exist before)."
    );
    h.client.prompt(&session, "/checkpoints").await.unwrap();
    let listing = last_said(&h, &session);
    let lines: Vec<&str> = listing.lines().collect();
    assert!(lines[1].starts_with("1. ") && lines[1].ends_with(" “create a”: `a.txt`"), "{listing}");
    assert!(lines[2].starts_with("2. ") && lines[2].ends_with(" “change a”: `a.txt` (undone)"), "{listing}");
    assert!(lines[3].starts_with("3. ") && lines[3].ends_with(" “create b”: `b.txt` (undone)"), "{listing}");
    h.client.prompt(&session, "/restore 9").await.unwrap();
    assert_eq!(
        last_said(&h, &session),
        "`/restore` needs a checkpoint number from 1 to 3 (see `/checkpoints`)."
    );
    h.client.prompt(&session, "/undo").await.unwrap();
    assert_eq!(read(&a), None, "checkpoint 1 created a.txt");
    h.model.assert_done();
}

#[tokio::test]
async fn undo_asks_first_when_a_file_changed_after_the_checkpoint_and_a_no_changes_nothing() {
    let h = Harness::start(vec![]).await;
    let a = h.cwd.join("a.txt");
    h.model
        .script(steps(vec![vec![call("w", "write", json!({"file_path": a, "content": "agent\n"}))]], "done"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "write a").await.unwrap();
    std::fs::write(&a, "agent\nand the user's line\n").unwrap();

    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    h.client.prompt(&session, "/undo").await.unwrap();
    assert_eq!(read(&a).unwrap(), "agent\nand the user's line\n");
    assert_eq!(
        last_said(&h, &session),
        "Nothing was reverted. The files changed after the checkpoint, and the revert was not allowed."
    );
    let ask = serde_json::to_value(&h.client.log.permission_requests.lock().unwrap()[1]).unwrap();
    assert_eq!(ask["toolCall"]["title"], "Revert checkpoint 1 (1 file)");
    assert_eq!(
        ask["toolCall"]["content"][0]["content"]["text"],
        "`a.txt` changed after the checkpoint; reverting discards those later changes."
    );
    let kinds: Vec<&str> =
        ask["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["allow_once", "reject_once", "reject_always"], "no \"always allow\"");

    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    h.client.prompt(&session, "/undo").await.unwrap();
    assert_eq!(read(&a), None);
    h.model.assert_done();
}

#[tokio::test]
async fn checkpoints_survive_a_restart_and_go_with_their_session() {
    let mut h = Harness::start(vec![]).await;
    let a = h.cwd.join("a.txt");
    h.model.script(steps(vec![vec![call("w", "write", json!({"file_path": a, "content": "x\n"}))]], "done"));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "write").await.unwrap();
    h.restart().await;
    h.client.call(acp::LoadSessionRequest::new(session.clone(), h.cwd.clone())).await.unwrap();
    h.client.prompt(&session, "/undo").await.unwrap();
    assert_eq!(read(&a), None);
    assert_eq!(last_said(&h, &session), "Reverted checkpoint 1: `a.txt` deleted (it did not exist before).");

    let count = |table: &str| -> i64 {
        let db = rusqlite::Connection::open(h.data.join("tinycode.db")).unwrap();
        db.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0)).unwrap()
    };
    assert_eq!((count("checkpoints"), count("checkpoint_files")), (1, 1));
    h.client.call(acp::DeleteSessionRequest::new(session)).await.unwrap();
    assert_eq!((count("checkpoints"), count("checkpoint_files")), (0, 0));
}

#[tokio::test]
async fn undo_through_a_directory_replaced_by_a_symlink_asks_with_the_real_outside_path_and_touches_nothing_when_rejected()
 {
    let h = Harness::start(vec![]).await;
    let made = h.cwd.join("new/b.txt");
    h.model.script(steps(
        vec![vec![call("w", "write", json!({"file_path": made, "content": "agent\n"}))]],
        "done",
    ));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "make new/b.txt").await.unwrap();
    // The directory the turn made is swapped for a link to a folder outside holding a file of the same content.
    let outside = h.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("b.txt"), "agent\n").unwrap();
    std::fs::remove_dir_all(h.cwd.join("new")).unwrap();
    std::os::unix::fs::symlink(&outside, h.cwd.join("new")).unwrap();

    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    h.client.prompt(&session, "/undo").await.unwrap();
    assert_eq!(read(&outside.join("b.txt")).as_deref(), Some("agent\n"), "the outside file is untouched");
    let asks = h.client.log.permission_requests.lock().unwrap().clone();
    assert_eq!(asks.len(), 2, "the undo asked");
    let ask = serde_json::to_value(&asks[1]).unwrap();
    assert_eq!(
        ask["toolCall"]["content"][0]["content"]["text"],
        format!(
            "`new/b.txt` leads outside the workspace, to {}: reverting deletes it.",
            outside.join("b.txt").display()
        )
    );
    assert_eq!(ask["toolCall"]["locations"][0]["path"], json!(outside.join("b.txt")));
    let kinds: Vec<&str> =
        ask["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["allow_once", "reject_once", "reject_always"], "no \"always allow\"");
    assert_eq!(
        last_said(&h, &session),
        "Nothing was reverted. A file leads outside the workspace, and the revert was not allowed."
    );
    h.model.assert_done();
}
