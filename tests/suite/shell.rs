//! Commands the user can watch and stop: classification and asks, results, timeouts, cancel, background tasks,
//! live output in each client profile, and process hygiene.

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};
use tinycode::shell::process::running;

use super::turn::{finished, stop, tool_result};
use crate::support::client::{Answer, Harness, PATIENCE, Setup, terminals, zed};
use crate::support::fake_model::{Reply, answer, calls};

fn bash(id: &str, command: &str) -> (String, String, String) {
    (id.into(), "bash".into(), json!({"command": command}).to_string())
}

fn call(id: &str, tool: &str, args: Value) -> (String, String, String) {
    (id.into(), tool.into(), args.to_string())
}

fn steps(steps: Vec<Vec<(String, String, String)>>) -> Vec<Reply> {
    let mut replies: Vec<Reply> = steps
        .iter()
        .map(|step| {
            calls(&step.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect::<Vec<_>>())
        })
        .collect();
    replies.push(answer(&["done"]));
    replies
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

pub(crate) async fn pid_from(path: &Path) -> i32 {
    let read = async {
        loop {
            if let Ok(text) = std::fs::read_to_string(path)
                && let Ok(pid) = text.trim().parse::<i32>()
            {
                return pid;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(PATIENCE, read).await.expect("the command wrote its pid")
}

pub(crate) async fn gone_within(pid: i32, limit: Duration) {
    let gone = async {
        while running(pid) {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(limit, gone)
        .await
        .unwrap_or_else(|_| panic!("process {pid} still runs after {limit:?}"));
}

#[tokio::test]
async fn read_only_commands_run_without_asking_and_the_title_is_the_command() {
    let h = Harness::start(vec![]).await;
    h.write("notes.txt", "hello\n");
    h.model.script(steps(vec![vec![bash("b", "cat notes.txt && git status 2>/dev/null | head -1; ls")]]));
    let session = h.session().await;
    h.client.prompt(&session, "look").await.unwrap();
    assert!(asks(&h).is_empty());
    let result = tool_result(&h.model.messages(1), "b");
    assert!(result.starts_with("hello\n"), "{result}");
    assert!(result.contains("notes.txt"), "{result}");
    let updates = h.client.updates(&session);
    let started = updates.iter().find(|u| u["sessionUpdate"] == "tool_call").unwrap();
    assert_eq!(started["title"], "cat notes.txt && git status 2>/dev/null | head -1; ls");
    assert_eq!(started["kind"], "execute");
}

#[tokio::test]
async fn other_commands_ask_under_shell_and_always_is_scoped_to_the_command_prefix() {
    let h = Harness::start(vec![]).await;
    h.model.script(steps(vec![vec![
        bash("t1", "touch a.txt"),
        bash("t2", "touch b.txt"),
        bash("m", "mkdir dir"),
    ]]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways), Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "make files").await.unwrap();
    let asks = asks(&h);
    assert_eq!(asks.len(), 2, "touch asked once, then remembered; mkdir asked");
    assert_eq!(asks[0]["toolCall"]["title"], "touch a.txt");
    assert_eq!(asks[0]["toolCall"]["kind"], "execute");
    assert_eq!(
        asks[0]["toolCall"]["content"],
        json!([{"type": "content", "content": {"type": "text", "text": "```sh\ntouch a.txt\n```"}}])
    );
    assert_eq!(asks[1]["toolCall"]["title"], "mkdir dir");
    assert!(h.cwd.join("a.txt").exists() && h.cwd.join("b.txt").exists());
    assert!(!h.cwd.join("dir").exists());
}

#[tokio::test]
async fn destructive_and_secret_commands_always_ask_with_the_reason_shown() {
    let h = Harness::start(vec![]).await;
    h.write("build/x", "");
    h.write(".env", "TOKEN=1\n");
    h.model.script(steps(vec![vec![bash("r", "rm -rf build"), bash("s", "cat .env")]]));
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce), Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "clean").await.unwrap();
    let asks = asks(&h);
    assert_eq!(
        asks[0]["toolCall"]["content"][1]["content"]["text"],
        "**Destructive:** this command deletes recursively (`rm -r`)."
    );
    assert_eq!(asks[1]["toolCall"]["content"][1]["content"]["text"], "**Secret files:** .env.");
    assert!(h.cwd.join("build/x").exists());
    let messages = h.model.messages(1);
    assert_eq!(
        tool_result(&messages, "r"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
}

#[tokio::test]
async fn results_combine_streams_and_explain_exit_statuses() {
    let h = Setup::new(vec![]).config("").start().await;
    h.model.script(steps(vec![vec![
        bash("e", "echo out; echo err >&2; exit 3"),
        bash("g", "grep -q nothing-here /dev/null"),
        bash("k", "kill -TERM $$"),
        bash("q", "true"),
    ]]));
    h.client.answer_permissions(&[
        Answer::Pick(K::AllowAlways),
        Answer::Pick(K::AllowAlways),
        Answer::Pick(K::AllowAlways),
    ]);
    let session = h.session().await;
    h.client.prompt(&session, "run").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(tool_result(&messages, "e"), "out\nSTDERR:\nerr\n\nExit code 3.");
    assert_eq!(tool_result(&messages, "g"), "(no output)\n\nExit code 1: no matches.");
    assert_eq!(tool_result(&messages, "k"), "(no output)\n\nKilled by SIGTERM (signal 15); exit status 143.");
    assert_eq!(tool_result(&messages, "q"), "(no output)");
    let updates = h.client.updates(&session);
    assert_eq!(finished(&updates, "e")["status"], "failed");
    assert_eq!(finished(&updates, "g")["status"], "completed");
    assert_eq!(finished(&updates, "e")["rawOutput"]["exitCode"], 3);
    assert_eq!(finished(&updates, "k")["rawOutput"]["signal"], 15);
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group_including_grandchildren() {
    let h = Harness::start(vec![]).await;
    let pidfile = h.cwd.join("grandchild.pid");
    let command = format!("sleep 30 & echo $! > {}; echo waiting; sleep 30", pidfile.display());
    h.model.script(steps(vec![vec![call("t", "bash", json!({"command": command, "timeout": 300}))]]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "wait").await.unwrap();
    let result = tool_result(&h.model.messages(1), "t");
    assert_eq!(
        result,
        "waiting\n\nCommand timed out after 300 ms; it and every process it started were killed."
    );
    let grandchild = pid_from(&pidfile).await;
    gone_within(grandchild, Duration::from_secs(1)).await;
    assert_eq!(finished(&h.client.updates(&session), "t")["rawOutput"]["timedOut"], true);
}

#[tokio::test]
async fn cancel_mid_command_kills_the_group_within_a_second_and_answers_cancelled() {
    let h = Harness::start(vec![]).await;
    let pidfile = h.cwd.join("child.pid");
    let command = format!("sleep 60 & echo $! > {}; echo started; wait", pidfile.display());
    h.model
        .script(vec![calls(&[("c", "bash", &json!({"command": command}).to_string())]), answer(&["after"])]);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "run forever");
    h.client
        .wait_for("the command's output", |u| {
            u.iter().any(|n| n["update"]["toolCallId"] == "c" && n["update"].to_string().contains("started"))
        })
        .await;
    let grandchild = pid_from(&pidfile).await;
    h.client.cancel(&session);
    assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("cancelled"));
    gone_within(grandchild, Duration::from_secs(1)).await;
    assert_eq!(finished(&h.client.updates(&session), "c")["status"], "failed");
}

#[tokio::test]
async fn large_output_is_middle_out_with_the_complete_log_saved_and_bounded_live_updates() {
    let h = Harness::start(vec![]).await;
    h.model.script(steps(vec![vec![bash("s", "seq 1 200000")]]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "count").await.unwrap();
    let result = tool_result(&h.model.messages(1), "s");
    assert!(result.starts_with("1\n2\n3\n"), "{}", &result[..50]);
    assert!(result.contains("bytes of output omitted] ..."));
    let log_line = result.lines().last().unwrap();
    assert!(
        log_line.starts_with("The output was 1288895 bytes; the middle was left out. Full output saved to: "),
        "{log_line}"
    );
    let log = log_line.rsplit(": ").next().unwrap();
    let full = std::fs::read_to_string(log).unwrap();
    assert_eq!(full.lines().count(), 200_000);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(log).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the command's log is the user's alone");
    assert!(result.len() < 51_200 + 1_000);
    let updates = h.client.updates(&session);
    let live: Vec<&Value> = updates
        .iter()
        .filter(|u| u["toolCallId"] == "s" && u.get("status").is_none() && u.get("content").is_some())
        .collect();
    assert!(live.len() > 10, "output streamed while it ran ({} updates)", live.len());
    for update in &live {
        let text = update["content"][0]["content"]["text"].as_str().unwrap();
        assert!(
            text.len() <= 8 * 1024 + 32,
            "a live update carries a bounded window, not everything: {}",
            text.len()
        );
    }
    let total_sent: usize =
        live.iter().map(|u| u["content"][0]["content"]["text"].as_str().unwrap().len()).sum();
    assert!(total_sent < 4 * 1_288_895, "no resending of accumulated output ({total_sent} bytes)");
}

#[tokio::test]
async fn many_short_lines_are_cut_by_lines_and_still_saved_in_full() {
    let h = Harness::start(vec![]).await;
    h.model.script(steps(vec![vec![bash("s", "seq 1 5000")]]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "count").await.unwrap();
    let result = tool_result(&h.model.messages(1), "s");
    assert!(result.lines().count() < 2_000, "{}", result.lines().count());
    assert!(
        result.contains("800\n... [") && result.contains(" bytes of output omitted] ...\n4201\n"),
        "{result}"
    );
    let log = result.lines().last().unwrap().rsplit(": ").next().unwrap();
    assert_eq!(std::fs::read_to_string(log).unwrap().lines().count(), 5_000);
}

#[tokio::test]
async fn background_tasks_can_be_listed_read_waited_for_and_stopped() {
    let h = Harness::start(vec![]).await;
    h.model.script(steps(vec![
        vec![call("bg", "bash", json!({"command": "echo ready; sleep 60", "background": true}))],
        vec![call("w", "shell_output", json!({"task_id": "task_1", "wait": "pattern", "pattern": "read."}))],
        vec![call("l", "shell_tasks", json!({}))],
        vec![
            call("k", "kill_shell", json!({"task_id": "task_1"})),
            call("x", "kill_shell", json!({"pid": 1})),
        ],
        vec![
            call("o", "shell_output", json!({"task_id": "task_1", "wait": "exit"})),
            call("u", "shell_output", json!({"task_id": "task_9"})),
        ],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "background work").await.unwrap();
    let started = tool_result(&h.model.messages(1), "bg");
    assert!(started.starts_with("Started task_1 (pid "), "{started}");
    let waited = tool_result(&h.model.messages(2), "w");
    assert!(
        waited.contains("\n\n<untrusted-output source=\"task_1 (`echo ready; sleep 60`)\">\nready\n</untrusted-output>\n[still running]\nWait ended: the pattern appeared in the output."),
        "{waited}"
    );
    let listed = tool_result(&h.model.messages(3), "l");
    assert!(
        listed.starts_with("task_1 [running] pid ") && listed.ends_with(": echo ready; sleep 60"),
        "{listed}"
    );
    let messages = h.model.messages(4);
    assert_eq!(tool_result(&messages, "k"), "Stopped task_1 (`echo ready; sleep 60`) with SIGTERM.");
    assert_eq!(
        tool_result(&messages, "x"),
        "1 is not a task of this session, so it was not signalled. Use shell_tasks to list the tasks."
    );
    let messages = h.model.messages(5);
    let output = tool_result(&messages, "o");
    assert!(output.contains("[finished]\nWait ended: the task exited."), "{output}");
    assert!(output.starts_with("task_1 [finished: Killed by SIGTERM"), "{output}");
    assert_eq!(
        tool_result(&messages, "u"),
        "No task with id task_9 in this session. Use shell_tasks to list the tasks."
    );
}

#[tokio::test]
async fn a_monitored_task_that_exits_is_reported_to_the_model_on_its_next_request() {
    let h = Harness::start(vec![]).await;
    h.model.script(steps(vec![
        vec![call("m", "monitor", json!({"command": "echo build finished"}))],
        vec![call("w", "shell_output", json!({"task_id": "task_1", "wait": "exit"}))],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "build").await.unwrap();
    let messages = h.model.messages(2);
    let note = messages.last().unwrap();
    assert_eq!(note["role"], "user");
    let text = note["content"].as_str().unwrap();
    assert!(text.starts_with("<background-tasks>\nMonitored task task_1 (`echo build finished`) has exited. Exit code 0.\nLast output:\n<untrusted-output source=\"task_1 (`echo build finished`)\">\nbuild finished\n</untrusted-output>"), "{text}");
}

#[tokio::test]
async fn background_tasks_end_when_the_client_goes_away() {
    let h = Harness::start(vec![]).await;
    let pidfile = h.cwd.join("bg.pid");
    let command = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
    h.model.script(steps(vec![vec![call("bg", "bash", json!({"command": command, "background": true}))]]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "start").await.unwrap();
    let grandchild = pid_from(&pidfile).await;
    assert!(running(grandchild));
    let Harness { client, .. } = h;
    client.close().await.unwrap();
    gone_within(grandchild, Duration::from_secs(2)).await;
}

#[tokio::test]
async fn zed_gets_a_terminal_block_fed_by_the_meta_stream() {
    let h = Setup::new(vec![]).capabilities(zed()).start().await;
    h.model.script(steps(vec![vec![bash("z", "echo one; echo two")]]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "run").await.unwrap();
    let updates: Vec<Value> =
        h.client.updates(&session).into_iter().filter(|u| u["toolCallId"] == "z").collect();
    assert_eq!(
        updates[0],
        json!({
            "sessionUpdate": "tool_call", "toolCallId": "z", "title": "echo one; echo two", "name": "bash", "kind": "execute",
            "content": [{"type": "terminal", "terminalId": "z"}],
            "rawInput": {"command": "echo one; echo two"},
            "_meta": {"terminal_info": {"terminal_id": "z", "cwd": h.cwd}}
        })
    );
    assert_eq!(
        updates[1],
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "z", "status": "in_progress"})
    );
    let streamed: String = updates[2..updates.len() - 1]
        .iter()
        .map(|u| {
            assert!(u.get("content").is_none(), "output updates must not replace the terminal block");
            assert_eq!(u["_meta"]["terminal_output"]["terminal_id"], "z");
            u["_meta"]["terminal_output"]["data"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(streamed, "one\ntwo\n");
    let last = updates.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert!(last.get("content").is_none());
    assert_eq!(last["_meta"], json!({"terminal_exit": {"terminal_id": "z", "exit_code": 0, "signal": null}}));
}

#[tokio::test]
async fn editor_terminals_run_the_command_and_are_always_released() {
    let h =
        Setup::new(vec![]).capabilities(terminals()).config("[shell]\nclient_terminals = true").start().await;
    h.model.script(steps(vec![vec![
        bash("t", "echo in the editor; exit 4"),
        call("slow", "bash", json!({"command": "sleep 30", "timeout": 200})),
    ]]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways), Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "run").await.unwrap();
    let calls = h.client.log.terminal_calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        vec![
            "create sh -c echo in the editor; exit 4 limit=Some(65536)",
            "wait term_1",
            "output term_1",
            "release term_1",
            "create sh -c sleep 30 limit=Some(65536)",
            "wait term_2",
            "kill term_2",
            "output term_2",
            "release term_2",
        ]
    );
    let messages = h.model.messages(1);
    assert_eq!(tool_result(&messages, "t"), "in the editor\n\nExit code 4.");
    assert_eq!(
        tool_result(&messages, "slow"),
        "(no output)\n\nCommand timed out after 200 ms and was killed."
    );
    let updates = h.client.updates(&session);
    let embedded =
        updates.iter().find(|u| u["toolCallId"] == "t" && u["content"][0]["type"] == "terminal").unwrap();
    assert_eq!(embedded["content"], json!([{"type": "terminal", "terminalId": "term_1"}]));
    assert_eq!(finished(&updates, "t")["content"], json!([{"type": "terminal", "terminalId": "term_1"}]));
}

/// A background command that listens on a loopback port it chooses and prints it.
const LISTENER: &str = "perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(Listen => 1, LocalAddr => \"127.0.0.1\", LocalPort => 0) or die; $| = 1; print \"port \", $s->sockport, \"\\n\"; sleep 60'";

#[tokio::test]
async fn kill_shell_by_port_stops_the_task_that_listens_there_and_refuses_another_process() {
    let h = Harness::start(vec![]).await;
    // A listener of the test process itself: not a task, so it must be refused and left alone.
    let foreign = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let foreign_port = foreign.local_addr().unwrap().port();
    h.model.script(vec![
        calls(&[(
            "m",
            "monitor",
            &json!({"command": LISTENER, "notify": "pattern", "pattern": "port \\d+"}).to_string(),
        )]),
        calls(&[(
            "w",
            "shell_output",
            &json!({"task_id": "task_1", "wait": "pattern", "pattern": "port \\d+"}).to_string(),
        )]),
        answer(&["started"]),
    ]);
    // perl -e is a runner: the ask offers no "always" for it.
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "start the server").await.unwrap();
    let waited = tool_result(&h.model.messages(2), "w");
    let port: u16 =
        waited.split("\nport ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    h.model.script(vec![
        calls(&[
            ("k", "kill_shell", &json!({"port": port}).to_string()),
            ("f", "kill_shell", &json!({"port": foreign_port}).to_string()),
        ]),
        calls(&[
            ("all", "shell_tasks", "{}"),
            ("running", "shell_tasks", &json!({"includeStopped": false}).to_string()),
        ]),
        answer(&["stopped"]),
    ]);
    h.client.prompt(&session, "stop the server").await.unwrap();
    let messages = h.model.messages(4);
    assert_eq!(
        tool_result(&messages, "k"),
        format!("Stopped task_1 (`{LISTENER}`), listening on port {port}, with SIGTERM.")
    );
    let refused = tool_result(&messages, "f");
    assert!(
        refused.starts_with(&format!("Port {foreign_port} is held by pid {} (`", std::process::id())),
        "{refused}"
    );
    let pid = std::process::id();
    assert!(
        refused.ends_with(&format!(
            "which is not a task of this session, so nothing was signalled. If it must stop, stop it with bash (for example `kill {pid}`); the user will be asked."
        )),
        "{refused}"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", foreign_port)).is_ok(),
        "the other listener still runs"
    );
    let messages = h.model.messages(5);
    assert!(
        tool_result(&messages, "all").starts_with("task_1 [finished: Killed by SIGTERM"),
        "{}",
        tool_result(&messages, "all")
    );
    assert_eq!(
        tool_result(&messages, "running"),
        "<repair_note>renamed includeStopped→include_stopped</repair_note>\nNo running background tasks (1 finished; include_stopped: true lists them)."
    );
}

#[tokio::test]
async fn a_monitor_pattern_wakes_the_model_at_its_next_step_and_task_output_keeps_its_old_wait() {
    let h = Harness::start(vec![]).await;
    h.model.script(steps(vec![
        vec![call(
            "m",
            "monitor",
            json!({"command": "echo compiling; echo BUILD OK; sleep 60", "pattern": "BUILD (OK|FAILED)"}),
        )],
        vec![call("w", "shell_output", json!({"task_id": "task_1", "wait": "pattern", "pattern": "BUILD"}))],
        vec![call("k", "kill_shell", json!({"task_id": "task_1"}))],
        vec![call("o", "task_output", json!({"task_id": "task_1"}))],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways), Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "build").await.unwrap();
    let started = tool_result(&h.model.messages(1), "m");
    assert!(
        started.contains("You will be told when its output matches `BUILD (OK|FAILED)`, and when it exits"),
        "{started}"
    );
    // The pattern note arrives with the request after the wait, before the model's next step.
    let note = h.model.messages(2).last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(
        note.starts_with("<background-tasks>\nMonitored task task_1 (`echo compiling; echo BUILD OK; sleep 60`): its output matched `BUILD (OK|FAILED)`. Output so far:\n<untrusted-output source=\"task_1 (`echo compiling; echo BUILD OK; sleep 60`)\">\ncompiling\nBUILD OK\n</untrusted-output>"),
        "{note}"
    );
    let output = tool_result(&h.model.messages(4), "o");
    assert!(output.starts_with("<repair_note>"), "{output}");
    assert!(
        output.ends_with("[finished]\nWait ended: the task exited."),
        "task_output waits for the exit: {output}"
    );
}

#[tokio::test]
async fn a_cancel_kills_and_then_releases_the_editor_terminal_even_though_the_call_is_dropped() {
    let h =
        Setup::new(vec![]).capabilities(terminals()).config("[shell]\nclient_terminals = true").start().await;
    h.model.script(steps(vec![vec![bash("t", "sleep 30")]]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "run");
    h.client
        .wait_log("the terminal wait", |log| {
            log.terminal_calls.lock().unwrap().iter().any(|c| c == "wait term_1")
        })
        .await;
    h.client.cancel(&session);
    assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("cancelled"));
    h.client
        .wait_log("the release", |log| {
            log.terminal_calls.lock().unwrap().iter().any(|c| c.starts_with("release"))
        })
        .await;
    assert_eq!(
        h.client.log.terminal_calls.lock().unwrap().clone(),
        vec!["create sh -c sleep 30 limit=Some(65536)", "wait term_1", "kill term_1", "release term_1"]
    );
}
