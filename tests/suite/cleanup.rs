//! Process cleanup in the agent: every process a command starts (a `setsid` child, a double-forked daemon, a Python
//! daemon that calls `os.setsid()`, a tree that ignores SIGTERM) dies on cancel, on `kill_shell` and when its
//! session closes. The real binary's exits (stdin EOF, SIGTERM, `kill -9`) are in `binary.rs`.

use std::time::Duration;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::json;

use super::turn::{stop, tool_result};
use crate::support::client::{Answer, Harness, PATIENCE};
use crate::support::fake_model::{answer, calls};
use crate::support::trees;

/// How long the killed processes get to disappear from the process table.
const DEATH: Duration = Duration::from_secs(3);

fn bash(id: &str, args: serde_json::Value) -> crate::support::fake_model::Reply {
    calls(&[(id, "bash", &args.to_string())])
}

#[tokio::test]
async fn cancel_kills_setsid_children_daemons_and_trees_that_ignore_sigterm() {
    let h = Harness::start(vec![]).await;
    let pidfile = h.cwd.join("tree.pids");
    h.model.script(vec![bash("c", json!({"command": trees::script(&pidfile)}))]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "start them");
    let pids = trees::pids(&pidfile).await;
    h.client.cancel(&session);
    assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("cancelled"));
    assert_eq!(trees::survivors(&pids, DEATH).await, Vec::<i32>::new());
    h.model.assert_done();
}

#[tokio::test]
async fn cancel_ends_the_tree_and_answers_even_when_the_command_stopped_its_supervisor() {
    let h = Harness::start(vec![]).await;
    let pidfile = h.cwd.join("tree.pids");
    let p = pidfile.display();
    // The supervisor (the shell's parent) is stopped, so it can neither kill nor reap; checked by name, so the
    // test never stops anything else.
    let command = format!(
        "sleep 1000 & echo $! >> {p}; (sleep 1000 & echo $! >> {p}) &\n\
         case \"$(tr '\\0' ' ' < /proc/$PPID/cmdline)\" in *__supervise*) kill -STOP $PPID;; esac\n\
         until [ \"$(wc -l < {p})\" -ge 2 ]; do :; done; echo $$ >> {p}; wait"
    );
    h.model.script(vec![bash("c", json!({"command": command}))]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "start them");
    let pids = tokio::time::timeout(PATIENCE, async {
        loop {
            let text = std::fs::read_to_string(&pidfile).unwrap_or_default();
            let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.len() == 3 {
                return pids;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the command wrote its pids");
    h.client.cancel(&session);
    let answered = tokio::time::timeout(PATIENCE, turn).await.expect("the cancelled prompt was answered");
    assert_eq!(stop(&answered.unwrap().unwrap()), json!("cancelled"));
    assert_eq!(trees::survivors(&pids, DEATH).await, Vec::<i32>::new());
    h.model.assert_done();
}

#[tokio::test]
async fn closing_a_session_kills_everything_its_background_tasks_started() {
    let h = Harness::start(vec![]).await;
    let pidfile = h.cwd.join("tree.pids");
    h.model.script(vec![
        bash("bg", json!({"command": trees::script(&pidfile), "background": true})),
        answer(&["started"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "start them").await.unwrap();
    let pids = trees::pids(&pidfile).await;
    assert_eq!(trees::survivors(&pids, Duration::ZERO).await, pids, "all of them run until the close");
    h.client.call(acp::CloseSessionRequest::new(session)).await.unwrap();
    assert_eq!(trees::survivors(&pids, DEATH).await, Vec::<i32>::new());
}

#[tokio::test]
async fn kill_shell_leaves_nothing_behind_even_when_part_of_the_tree_ignores_sigterm() {
    let h = Harness::start(vec![]).await;
    let pidfile = h.cwd.join("tree.pids");
    h.model.script(vec![
        bash("bg", json!({"command": trees::script(&pidfile), "background": true})),
        calls(&[(
            "w",
            "shell_output",
            &json!({"task_id": "task_1", "wait": "pattern", "pattern": "started"}).to_string(),
        )]),
        calls(&[("k", "kill_shell", &json!({"task_id": "task_1"}).to_string())]),
        answer(&["stopped"]),
    ]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "start and stop them");
    let pids = trees::pids(&pidfile).await;
    turn.await.unwrap().unwrap();
    let stopped = tool_result(&h.model.messages(3), "k");
    assert!(stopped.starts_with("Stopped task_1 (`setsid sh -c"), "{stopped}");
    assert!(stopped.ends_with("wait`) with SIGTERM."), "{stopped}");
    assert_eq!(trees::survivors(&pids, DEATH).await, Vec::<i32>::new());
}
