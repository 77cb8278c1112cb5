//! The command line as a user and a script meet it, through the real binary: help and version on stdout, usage
//! errors with suggestions, `run` with its flags, stdin prompts, `--json` events, continuing sessions, `sessions`,
//! `export`, completions, and the note `tinycode acp` prints when started by hand in a terminal.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::binary::Env;
use crate::support::client::PATIENCE;
use crate::support::fake_model::{FakeModel, Reply, answer, calls, finish, text, tool_call, usage};

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn tinycode(env: &Env, model: &FakeModel, args: &[&str], stdin: Option<&str>) -> Ran {
    let mut command = env.command(model, args);
    command.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = command.spawn().unwrap();
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input.as_bytes()).await.unwrap();
        drop(pipe);
    }
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output()).await.unwrap().unwrap();
    Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn notes(env: &Env) -> String {
    std::fs::write(env.cwd().join("notes.txt"), "remember the milk\n").unwrap();
    std::fs::canonicalize(env.cwd()).unwrap().join("notes.txt").display().to_string()
}

/// A model response that says something, then reads `path`.
fn text_then_read(path: &str) -> Reply {
    Reply::Sse(vec![
        text("Let me look."),
        tool_call(0, "r", "read", &json!({"file_path": path}).to_string()),
        finish("tool_calls"),
        usage(50, 5),
    ])
}

#[tokio::test]
async fn help_and_version_go_to_stdout_and_usage_errors_to_stderr_with_exit_code_2() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let help = tinycode(&env, &model, &["--help"], None).await;
    assert_eq!((help.code, help.stderr.as_str()), (Some(0), ""));
    assert!(help.stdout.starts_with("A coding agent for editors"), "{}", help.stdout);
    for line in [
        "Usage: tinycode <COMMAND>",
        "  acp ",
        "  run ",
        "  sessions ",
        "  export ",
        "  completions ",
        "Exit codes:\n  0  finished",
    ] {
        assert!(help.stdout.contains(line), "help lacks {line:?}:\n{}", help.stdout);
    }
    let version = tinycode(&env, &model, &["--version"], None).await;
    assert_eq!(
        (version.code, version.stdout, version.stderr),
        (Some(0), format!("tinycode {}\n", env!("CARGO_PKG_VERSION")), String::new())
    );
    let run_help = tinycode(&env, &model, &["run", "--help"], None).await;
    assert_eq!(run_help.code, Some(0));
    for flag in
        ["--model <NAME>", "--mode <MODE>", "--cwd <DIR>", "--yes", "--json", "--continue", "--session <ID>"]
    {
        assert!(run_help.stdout.contains(flag), "run --help lacks {flag}:\n{}", run_help.stdout);
    }
    let typo = tinycode(&env, &model, &["run", "--moddel", "x", "hi"], None).await;
    assert_eq!((typo.code, typo.stdout.as_str()), (Some(2), ""));
    assert!(typo.stderr.contains("error: unexpected argument '--moddel' found"), "{}", typo.stderr);
    assert!(typo.stderr.contains("tip: a similar argument exists: '--model'"), "{}", typo.stderr);
    let unknown = tinycode(&env, &model, &["frobnicate"], None).await;
    assert_eq!(unknown.code, Some(2));
    assert!(unknown.stderr.contains("unrecognized subcommand 'frobnicate'"), "{}", unknown.stderr);
    let empty = tinycode(&env, &model, &["run"], None).await;
    assert_eq!((empty.code, empty.stderr.as_str()), (Some(2), "error: the prompt is empty\n"));
    assert!(model.requests().is_empty(), "nothing reached the model");
}

#[tokio::test]
async fn run_prints_text_before_and_after_a_tool_call_as_separate_paragraphs() {
    let env = Env::new();
    let path = notes(&env);
    let model =
        FakeModel::start(vec![text_then_read(&path), answer(&["It says: ", "remember the milk."])]).await;
    let ran = tinycode(&env, &model, &["run", "what", "do", "my", "notes", "say?"], None).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.stdout, "Let me look.\n\nIt says: remember the milk.\n");
    assert_eq!(ran.stderr, "• Read notes.txt\n✓ Read notes.txt\n");
}

#[tokio::test]
async fn run_reads_the_prompt_from_a_pipe_and_puts_stdin_where_a_dash_stands() {
    let env = Env::new();
    let model = FakeModel::start(vec![answer(&["one"]), answer(&["two"])]).await;
    let piped = tinycode(&env, &model, &["run"], Some("summarise\nthis\n")).await;
    assert_eq!((piped.code, piped.stdout.as_str()), (Some(0), "one\n"), "{}", piped.stderr);
    assert_eq!(model.messages(0)[1]["content"], "summarise\nthis");
    let dashed = tinycode(&env, &model, &["run", "review", "this:", "-"], Some("+ added line\n")).await;
    assert_eq!(dashed.code, Some(0), "{}", dashed.stderr);
    assert_eq!(model.messages(1)[1]["content"], "review this: + added line");
}

fn redact(line: &str, env: &Env) -> Value {
    let cwd = std::fs::canonicalize(env.cwd()).unwrap().display().to_string();
    let ids = regex::Regex::new(r"\b(msg|thought|sess|tool)_[0-9a-f]{32}").unwrap();
    let line = ids.replace_all(&line.replace(&cwd, "<cwd>"), "${1}_<id>").into_owned();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not one JSON event per line ({e}): {line}"))
}

/// Consecutive text events of one message joined: the agent coalesces streamed text on a timer, so how a
/// text is split depends on timing.
fn joined(events: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for event in events {
        if let Some(last) = out.last_mut()
            && last["type"] == "text"
            && event["type"] == "text"
            && last["messageId"] == event["messageId"]
        {
            last["text"] = Value::String(format!(
                "{}{}",
                last["text"].as_str().unwrap(),
                event["text"].as_str().unwrap()
            ));
            continue;
        }
        out.push(event);
    }
    out
}

#[tokio::test]
async fn run_json_prints_one_event_per_line_for_the_whole_turn() {
    let env = Env::new();
    let path = notes(&env);
    let model =
        FakeModel::start(vec![text_then_read(&path), answer(&["It says: ", "remember the milk."])]).await;
    let ran = tinycode(&env, &model, &["run", "--json", "what do my notes say?"], None).await;
    assert_eq!((ran.code, ran.stderr.as_str()), (Some(0), ""));
    let mut events = joined(ran.stdout.lines().map(|l| redact(l, &env)).collect());
    // `rawOutput` is the tool's own record (documented as tool-specific); the rest is the stable event schema.
    for event in events.iter_mut().filter(|e| e["type"] == "tool_result") {
        let raw = event.as_object_mut().unwrap().remove("rawOutput").unwrap();
        assert!(raw.is_object(), "{raw}");
    }
    let read = json!({"file_path": "<cwd>/notes.txt"});
    assert_eq!(
        events,
        vec![
            json!({"type": "session", "sessionId": "sess_<id>", "cwd": "<cwd>", "resumed": false}),
            json!({"type": "text", "text": "Let me look.", "messageId": "msg_<id>"}),
            json!({"type": "usage", "used": 55, "size": 128000}),
            json!({"type": "tool_call", "id": "r", "title": "Read notes.txt", "kind": "read", "name": "read", "input": read}),
            json!({"type": "tool_result", "id": "r", "title": "Read notes.txt", "status": "completed", "output": "1\tremember the milk\n\n(End of file: 1 lines)"}),
            json!({"type": "text", "text": "It says: remember the milk.", "messageId": "msg_<id>"}),
            json!({"type": "usage", "used": 110, "size": 128000}),
            json!({"type": "stop", "stopReason": "end_turn", "exitCode": 0}),
        ]
    );
}

#[tokio::test]
async fn run_continue_and_session_resume_a_stored_conversation_with_its_history() {
    let env = Env::new();
    let model =
        FakeModel::start(vec![answer(&["first answer"]), answer(&["second"]), answer(&["third"])]).await;
    let first = tinycode(&env, &model, &["run", "--json", "first question"], None).await;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let session: Value = serde_json::from_str(first.stdout.lines().next().unwrap()).unwrap();
    let id = session["sessionId"].as_str().unwrap().to_string();
    let again = tinycode(&env, &model, &["run", "--continue", "and then?"], None).await;
    assert_eq!((again.code, again.stdout.as_str()), (Some(0), "second\n"), "{}", again.stderr);
    let said: Vec<Value> = model.messages(1)[1..].iter().map(|m| json!([m["role"], m["content"]])).collect();
    assert_eq!(
        said,
        vec![
            json!(["user", "first question"]),
            json!(["assistant", "first answer"]),
            json!(["user", "and then?"])
        ]
    );
    // From another directory, `--session` finds the session's own directory.
    let mut elsewhere = env.command(&model, &["run", "--json", "--session", &id, "last one"]);
    elsewhere.current_dir(env.dir.path()).stdin(Stdio::null());
    let output = tokio::time::timeout(PATIENCE, elsewhere.output()).await.unwrap().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let opened: Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(opened["sessionId"], id.as_str());
    assert_eq!(opened["resumed"], true);
    assert_eq!(model.messages(2).len(), 6, "system, three questions, two answers");
    let missing = tinycode(&env, &model, &["run", "--session", "sess_nope", "hi"], None).await;
    assert_eq!(missing.code, Some(1));
    assert_eq!(missing.stderr, "error: no stored session sess_nope (`tinycode sessions --all` lists them)\n");
    model.assert_done();
}

#[tokio::test]
async fn continue_without_a_stored_session_is_an_error_naming_the_directory() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let ran = tinycode(&env, &model, &["run", "--continue", "hi"], None).await;
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    assert_eq!(
        (ran.code, ran.stderr),
        (Some(1), format!("error: no stored session in {} to continue\n", cwd.display()))
    );
}

#[tokio::test]
async fn model_and_mode_flags_apply_to_the_run_and_are_stored_with_the_session() {
    let env = Env::new();
    let model = FakeModel::start(vec![answer(&["planned"])]).await;
    let ran = tinycode(
        &env,
        &model,
        &["run", "--model", "fake-model-large", "--mode", "plan", "make a plan"],
        None,
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(model.requests()[0].body["model"], "fake-model-large");
    let listed = tinycode(&env, &model, &["sessions", "--json"], None).await;
    let row: Value = serde_json::from_str(listed.stdout.trim()).unwrap();
    assert_eq!(
        (&row["mode"], &row["model"], &row["title"]),
        (&json!("plan"), &json!("fake-model-large"), &json!("make a plan"))
    );
}

#[tokio::test]
async fn sessions_lists_this_directory_and_export_writes_markdown_and_html() {
    let env = Env::new();
    let path = notes(&env);
    let model = FakeModel::start(vec![
        calls(&[("r", "read", &json!({"file_path": path}).to_string())]),
        calls(&[("w", "write", &json!({"file_path": path, "content": "buy <bread>\n"}).to_string())]),
        answer(&["Updated."]),
    ])
    .await;
    let ran = tinycode(&env, &model, &["run", "--yes", "replace my notes"], None).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let listed = tinycode(&env, &model, &["sessions"], None).await;
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", listed.stdout);
    assert!(
        lines[0].starts_with("ID ") && lines[0].ends_with("  UPDATED                   TITLE"),
        "{}",
        lines[0]
    );
    assert!(lines[1].ends_with("  replace my notes"), "{}", lines[1]);
    let id = lines[1].split_whitespace().next().unwrap().to_string();
    let mut elsewhere = env.command(&model, &["sessions"]);
    elsewhere.current_dir(env.dir.path()).stdin(Stdio::null());
    let other = tokio::time::timeout(PATIENCE, elsewhere.output()).await.unwrap().unwrap();
    assert_eq!(String::from_utf8_lossy(&other.stdout), "", "another directory has no sessions");
    let markdown = tinycode(&env, &model, &["export", &id], None).await;
    assert_eq!(markdown.code, Some(0), "{}", markdown.stderr);
    assert!(markdown.stdout.starts_with("# replace my notes\n"), "{}", markdown.stdout);
    for part in [
        "## You\n\nreplace my notes\n",
        "**✓ Write notes.txt** (`write`)",
        "-remember the milk\n+buy <bread>\n",
        "Updated.\n",
    ] {
        assert!(markdown.stdout.contains(part), "markdown lacks {part:?}:\n{}", markdown.stdout);
    }
    let file = env.dir.path().join("chat.html");
    let html = tinycode(&env, &model, &["export", &id, "-o", file.to_str().unwrap()], None).await;
    assert_eq!((html.code, html.stdout.as_str()), (Some(0), ""), "{}", html.stderr);
    let page = std::fs::read_to_string(&file).unwrap();
    assert!(page.contains("<span class=\"add\">+buy &lt;bread&gt;</span>"), "{page}");
    let missing = tinycode(&env, &model, &["export", "sess_nope"], None).await;
    assert_eq!(missing.code, Some(1));
}

#[tokio::test]
async fn completions_are_printed_for_each_shell() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    for (shell, marker) in
        [("bash", "complete -F _tinycode"), ("zsh", "#compdef tinycode"), ("fish", "complete -c tinycode")]
    {
        let ran = tinycode(&env, &model, &["completions", shell], None).await;
        assert_eq!(ran.code, Some(0));
        assert!(ran.stdout.contains(marker), "{shell}");
    }
}

/// A pseudo-terminal: (the side the test keeps, the side the child gets as stdin).
fn pty() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut controller, mut terminal) = (0, 0);
    let done = unsafe {
        libc::openpty(
            &mut controller,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(done, 0, "openpty failed");
    unsafe { (std::os::fd::OwnedFd::from_raw_fd(controller), std::os::fd::OwnedFd::from_raw_fd(terminal)) }
}

#[tokio::test]
async fn acp_started_in_a_terminal_says_it_waits_for_an_editor_and_otherwise_stays_silent() {
    use tokio::io::AsyncBufReadExt;
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let (controller, terminal) = pty();
    let mut command = env.command(&model, &["acp"]);
    command.stdin(Stdio::from(terminal));
    let mut child = command.spawn().unwrap();
    drop(command);
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(PATIENCE, stderr.next_line()).await.unwrap().unwrap().unwrap();
    assert!(line.starts_with("tinycode acp: waiting for an editor to speak ACP on stdin;"), "{line}");
    assert!(line.contains("`tinycode acp`") && line.ends_with("Ctrl-D quits"), "{line}");
    // Ctrl-D at the start of a line is end of input: the agent exits as it does on an editor's EOF.
    let mut keyboard = std::fs::File::from(controller);
    std::io::Write::write_all(&mut keyboard, b"\x04").unwrap();
    let status =
        tokio::time::timeout(PATIENCE, child.wait()).await.expect("Ctrl-D did not end the agent").unwrap();
    assert!(status.success(), "{status:?}");
    // From a pipe (an editor), nothing is said.
    let mut piped = env.command(&model, &["acp"]);
    piped.stdin(Stdio::null());
    let output = tokio::time::timeout(PATIENCE, piped.output()).await.unwrap().unwrap();
    assert_eq!((output.status.code(), output.stdout.len(), output.stderr.len()), (Some(0), 0, 0));
}
