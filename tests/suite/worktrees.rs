//! Worktrees through ACP: `enter_worktree` moves the session's tools into a new git worktree (after the tool
//! round, and across a restart), `exit_worktree` brings them back, and the fail-closed rules hold: no
//! repository, uncommitted tracked changes, nesting, and removing unsaved work without `discard_changes`
//! are refused, and discarding asks the user with no "always".

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::checkpoints::git;
use super::turn::tool_result;
use crate::support::client::{Answer, Harness};
use crate::support::fake_model::{Reply, answer, calls};

fn step(id: &str, tool: &str, args: Value) -> Reply {
    calls(&[(id, tool, &args.to_string())])
}

async fn repository() -> Harness {
    let h = Harness::start(vec![]).await;
    h.write("README.md", "hello\n");
    git(&h.cwd, &["init", "-q"]);
    git(&h.cwd, &["add", "README.md"]);
    git(&h.cwd, &["commit", "-q", "-m", "start"]);
    h
}

/// The directory of worktree `name` under the agent's data directory.
fn worktree(h: &Harness, name: &str) -> PathBuf {
    let home = h.data.join("worktrees");
    let repo = std::fs::read_dir(&home).unwrap().next().unwrap().unwrap().path();
    assert!(repo.file_name().unwrap().to_string_lossy().starts_with("work-"), "{}", repo.display());
    repo.join(name)
}

fn branches(dir: &Path) -> String {
    let out = std::process::Command::new("git").args(["branch", "--list"]).current_dir(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn system(h: &Harness, n: usize) -> String {
    h.model.messages(n)[0]["content"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn entering_moves_the_tools_into_the_worktree_after_the_round_and_keep_brings_them_back() {
    let h = repository().await;
    h.model.script(vec![
        step("e", "enter_worktree", json!({"name": "exp"})),
        step("w1", "write", json!({"file_path": "notes.txt", "content": "in the worktree\n"})),
        step("x", "exit_worktree", json!({})),
        step("w2", "write", json!({"file_path": "back.txt", "content": "home\n"})),
        answer(&["done"]),
    ]);
    h.client.answer_permissions(&[
        Answer::Pick(K::AllowOnce),
        Answer::Pick(K::AllowOnce),
        Answer::Pick(K::AllowOnce),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "try something risky").await.unwrap();
    let tree = worktree(&h, "exp");
    assert_eq!(
        tool_result(&h.model.messages(1), "e"),
        format!(
            "Created worktree `exp` at {} on branch `tinycode/exp`. From your next step on, every tool works in {}: relative paths resolve against it and files outside it cannot be changed. Commit your work in it, then call exit_worktree (`keep` to come back and leave it, `remove` to delete it).",
            tree.display(),
            tree.display()
        )
    );
    assert!(system(&h, 1).contains(&tree.display().to_string()), "the prompt names the worktree");
    assert_eq!(std::fs::read_to_string(tree.join("notes.txt")).unwrap(), "in the worktree\n");
    assert!(!h.cwd.join("notes.txt").exists());
    assert_eq!(std::fs::read_to_string(tree.join("README.md")).unwrap(), "hello\n");
    assert!(tool_result(&h.model.messages(3), "x").starts_with("Left worktree `exp`; it stays at "));
    assert_eq!(std::fs::read_to_string(h.cwd.join("back.txt")).unwrap(), "home\n");
    assert!(branches(&h.cwd).contains("tinycode/exp"));
    let asks: Vec<String> = h
        .client
        .log
        .permission_requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.tool_call.fields.title.clone().unwrap_or_default())
        .collect();
    assert!(asks[0].starts_with("Create worktree `exp` (branch `tinycode/exp` from "), "{asks:?}");
    assert_eq!(asks.len(), 3, "leaving without removing asks nothing: {asks:?}");
    h.model.assert_done();
}

#[tokio::test]
async fn a_session_stays_in_its_worktree_across_a_restart() {
    let mut h = repository().await;
    h.model.script(vec![step("e", "enter_worktree", json!({"name": "kept"})), answer(&["in"])]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "enter").await.unwrap();
    h.restart().await;
    h.client.call(acp::LoadSessionRequest::new(session.clone(), h.cwd.clone())).await.unwrap();
    h.model.script(vec![
        step("w", "write", json!({"file_path": "later.txt", "content": "x\n"})),
        answer(&["ok"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    h.client.prompt(&session, "write").await.unwrap();
    assert!(worktree(&h, "kept").join("later.txt").exists());
    assert!(!h.cwd.join("later.txt").exists());
}

#[tokio::test]
async fn entering_is_refused_outside_git_with_uncommitted_tracked_changes_and_when_nested() {
    let plain = Harness::start(vec![step("e", "enter_worktree", json!({})), answer(&["no"])]).await;
    let session = plain.session().await;
    plain.client.prompt(&session, "isolate").await.unwrap();
    assert_eq!(
        tool_result(&plain.model.messages(1), "e"),
        format!(
            "{} is not in a git repository; worktrees need one. Work in place instead.",
            plain.cwd.display()
        )
    );
    assert!(plain.client.log.permission_requests.lock().unwrap().is_empty(), "refused before asking");

    let h = repository().await;
    h.write("README.md", "changed\n");
    h.model.script(vec![step("e", "enter_worktree", json!({"name": "one"})), answer(&["dirty"])]);
    let session = h.session().await;
    h.client.prompt(&session, "isolate").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "e"),
        "The working tree has uncommitted changes to tracked files (`README.md`). A worktree starts from the last commit and would not have them: ask the user to commit or stash them first, or work in place."
    );
    git(&h.cwd, &["commit", "-q", "-am", "save"]);
    h.model.script(vec![
        step("e1", "enter_worktree", json!({"name": "one"})),
        step("e2", "enter_worktree", json!({"name": "two"})),
        answer(&["nested"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    h.client.prompt(&session, "isolate now").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(4), "e2"),
        format!(
            "The session already works in worktree `one` ({}); worktrees do not nest. Call exit_worktree first.",
            worktree(&h, "one").display()
        )
    );
    h.model.assert_done();
}

#[tokio::test]
async fn removing_unsaved_work_is_refused_unless_discarded_and_discarding_asks_without_always() {
    let h = repository().await;
    h.model.script(vec![
        step("e", "enter_worktree", json!({"name": "risky"})),
        step("w", "write", json!({"file_path": "draft.txt", "content": "unsaved\n"})),
        step("r1", "exit_worktree", json!({"action": "remove"})),
        step("r2", "exit_worktree", json!({"action": "remove", "discard_changes": true})),
        answer(&["removed"]),
    ]);
    h.client.answer_permissions(&[
        Answer::Pick(K::AllowOnce),
        Answer::Pick(K::AllowOnce),
        Answer::Pick(K::AllowOnce),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "experiment then throw it away").await.unwrap();
    let tree = worktree(&h, "risky");
    assert_eq!(
        tool_result(&h.model.messages(3), "r1"),
        "Refusing to remove worktree `risky`: it has uncommitted changes (`draft.txt`). Keep it (action `keep`), or merge or commit the work first; pass discard_changes: true only if the user agreed to lose it."
    );
    let ask = serde_json::to_value(&h.client.log.permission_requests.lock().unwrap()[2]).unwrap();
    assert_eq!(ask["toolCall"]["title"], "Leave and remove worktree `risky` (branch `tinycode/risky`)");
    let kinds: Vec<&str> =
        ask["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["allow_once", "reject_once", "reject_always"]);
    assert!(
        tool_result(&h.model.messages(4), "r2")
            .starts_with("Removed worktree `risky` and its branch `tinycode/risky`.")
    );
    assert!(!tree.exists());
    assert!(!branches(&h.cwd).contains("tinycode/risky"));
    h.model.assert_done();
}
