//! Secrets, the workspace boundary and special files through ACP: which reads ask (secret files every time,
//! paths outside the session's directories once per directory), what walks leave out, where writes through
//! symlinks land, an editor that refuses a read, and FIFOs and procfs files that must not hang or run away.

use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use agent_client_protocol::{Error, ErrorCode};
use serde_json::{Value, json};

use super::turn::tool_result;
use crate::support::client::{Answer, Harness, Setup, editor_fs};
use crate::support::fake_model::{Reply, answer, calls};

type Call = (String, String, String);

fn call(id: &str, tool: &str, args: Value) -> Call {
    (id.into(), tool.into(), args.to_string())
}

/// One model reply per step of calls, then a closing answer.
fn script(steps: Vec<Vec<Call>>) -> Vec<Reply> {
    let mut replies: Vec<Reply> = steps
        .iter()
        .map(|step| {
            let borrowed: Vec<(&str, &str, &str)> =
                step.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
            calls(&borrowed)
        })
        .collect();
    replies.push(answer(&["done"]));
    replies
}

/// Every permission ask so far, as wire JSON, by tool call id.
fn asks(h: &Harness) -> std::collections::BTreeMap<String, Value> {
    h.client
        .log
        .permission_requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .map(|v| (v["toolCall"]["toolCallId"].as_str().unwrap().to_string(), v))
        .collect()
}

fn option_ids(ask: &Value) -> Vec<&str> {
    ask["options"].as_array().unwrap().iter().map(|o| o["optionId"].as_str().unwrap()).collect()
}

/// The text notes an ask shows besides the diff.
fn notes(ask: &Value) -> Vec<&str> {
    ask["toolCall"]["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["content"]["text"].as_str()).collect())
        .unwrap_or_default()
}

fn write_file(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap()
}

/// The secret matrix through the read tool: each is a path relative to the workspace and the kind the ask names.
const SECRET_READS: [(&str, &str); 8] = [
    (".env", "environment file"),
    (".env.local", "environment file"),
    ("id_rsa", "SSH private key"),
    ("server.pem", "key or certificate"),
    ("credentials.json", "credentials"),
    (".aws/credentials", "credentials"),
    (".npmrc", "package registry token"),
    ("secrets.yaml", "secrets file"),
];

#[tokio::test]
async fn reading_a_secret_file_asks_every_time_and_never_offers_always() {
    let h = Harness::start(vec![]).await;
    let mut secrets: Vec<(PathBuf, &str)> =
        SECRET_READS.iter().map(|(rel, kind)| (h.write(rel, &format!("value of {rel}\n")), *kind)).collect();
    // `~/.ssh/id_rsa`: outside the workspace and a secret; the secret ask wins (no "always").
    secrets.push((write_file(&h.data.join(".ssh/id_rsa"), "value of id_rsa at home\n"), "SSH private key"));
    let example = h.write(".env.example", "API_KEY=\n");
    let mut step: Vec<Call> = secrets
        .iter()
        .enumerate()
        .map(|(i, (path, _))| call(&format!("s{i}"), "read", json!({"file_path": path})))
        .collect();
    step.push(call("example", "read", json!({"file_path": example})));
    h.model.script(script(vec![step]));
    h.client.answer_permissions(&vec![Answer::Pick(K::AllowOnce); secrets.len()]);
    let session = h.session().await;
    h.client.prompt(&session, "read the secrets").await.unwrap();

    let asks = asks(&h);
    assert_eq!(asks.len(), secrets.len(), "one ask per secret file, none for .env.example");
    let messages = h.model.messages(1);
    for (i, (path, kind)) in secrets.iter().enumerate() {
        let ask = &asks[&format!("s{i}")];
        assert_eq!(option_ids(ask), vec!["allow_once", "reject_once", "reject_always"], "{}", path.display());
        assert_eq!(
            notes(ask),
            vec![format!(
                "**Secret file** ({kind}): {}. Its contents will be sent to the model.",
                path.display()
            )]
        );
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(tool_result(&messages, &format!("s{i}")), format!("1\t{}\n(End of file: 1 lines)", text));
    }
    assert_eq!(tool_result(&messages, "example"), "1\tAPI_KEY=\n\n(End of file: 1 lines)");
}

#[tokio::test]
async fn yolo_mode_still_asks_before_a_secret_read_but_not_before_an_outside_one() {
    let h = Harness::start(vec![]).await;
    let env = h.write(".env", "TOKEN=1\n");
    let outside = write_file(&h.root.path().join("outside/notes.txt"), "notes\n");
    h.model.script(script(vec![vec![
        call("env", "read", json!({"file_path": env})),
        call("out", "read", json!({"file_path": outside})),
    ]]));
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "yolo")).await.unwrap();
    h.client.prompt(&session, "read").await.unwrap();
    let messages = h.model.messages(1);
    assert_eq!(
        tool_result(&messages, "env"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
    assert_eq!(tool_result(&messages, "out"), "1\tnotes\n\n(End of file: 1 lines)");
    assert_eq!(asks(&h).keys().collect::<Vec<_>>(), vec!["env"]);
}

#[tokio::test]
async fn grep_leaves_secret_files_out_of_a_walk_and_asks_when_one_is_named() {
    let h = Harness::start(vec![]).await;
    h.write("src/app.rs", "let key = env(\"API_KEY\");\n");
    let env = h.write(".env", "API_KEY=live-123\n");
    h.write("deploy/id_ed25519", "API_KEY inside a key\n");
    let home = h.data.clone();
    write_file(&home.join(".aws/credentials"), "API_KEY=aws\n");
    write_file(&home.join("notes.txt"), "API_KEY is rotated monthly\n");
    h.model.script(script(vec![
        vec![call("walk", "grep", json!({"pattern": "API_KEY"}))],
        vec![call("named", "grep", json!({"pattern": "API_KEY", "path": env}))],
        vec![call("home", "grep", json!({"pattern": "API_KEY", "path": home}))],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "find the key").await.unwrap();
    let messages = h.model.messages(3);
    let skipped = |n: usize| {
        format!(
            "\n\n({n} secret files (.env, keys, credentials) were not searched. To search one, pass it as `path`; the user will be asked.)"
        )
    };
    assert_eq!(
        tool_result(&messages, "walk"),
        format!("src/app.rs:1:let key = env(\"API_KEY\");{}", skipped(2))
    );
    assert_eq!(tool_result(&messages, "named"), ".env:1:API_KEY=live-123");
    assert_eq!(
        tool_result(&messages, "home"),
        format!("{}:1:API_KEY is rotated monthly{}", home.join("notes.txt").display(), skipped(1))
    );
    let asks = asks(&h);
    assert_eq!(
        asks.keys().collect::<Vec<_>>(),
        vec!["home", "named"],
        "the walk of the workspace asks nothing"
    );
    assert_eq!(option_ids(&asks["named"]), vec!["allow_once", "reject_once", "reject_always"]);
    assert_eq!(notes(&asks["home"]), vec![format!("**Outside the workspace:** {}.", home.display())]);
}

#[tokio::test]
async fn reads_outside_the_workspace_ask_once_per_directory_when_always_is_chosen() {
    let h = Harness::start(vec![]).await;
    let outside = real(h.root.path()).join("outside");
    let a = write_file(&outside.join("a.txt"), "a\n");
    let b = write_file(&outside.join("b.txt"), "b\n");
    let c = write_file(&outside.join("sub/c.txt"), "c\n");
    let other = write_file(&real(h.root.path()).join("other/d.txt"), "d\n");
    h.model.script(script(vec![
        vec![call("a", "read", json!({"file_path": a}))],
        vec![
            call("b", "read", json!({"file_path": b})),
            call("c", "read", json!({"file_path": c})),
            call("glob", "glob", json!({"pattern": "a.*", "path": outside})),
            call("grep", "grep", json!({"pattern": "^c$", "path": outside})),
        ],
        vec![call("d", "read", json!({"file_path": other}))],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways), Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "read around").await.unwrap();

    let asks = asks(&h);
    assert_eq!(asks.keys().collect::<Vec<_>>(), vec!["a", "d"], "the directory and below are remembered");
    assert_eq!(
        asks["a"]["options"],
        json!([
            {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow_always", "name": format!("Always allow in {}", outside.display()), "kind": "allow_always"},
            {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
            {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"}
        ])
    );
    assert_eq!(notes(&asks["a"]), vec![format!("**Outside the workspace:** {}.", outside.display())]);
    let messages = h.model.messages(3);
    assert_eq!(tool_result(&messages, "a"), "1\ta\n\n(End of file: 1 lines)");
    assert_eq!(tool_result(&messages, "b"), "1\tb\n\n(End of file: 1 lines)");
    assert_eq!(tool_result(&messages, "c"), "1\tc\n\n(End of file: 1 lines)");
    assert_eq!(tool_result(&messages, "glob"), a.display().to_string());
    assert_eq!(tool_result(&messages, "grep"), format!("{}:1:c", c.display()));
    assert_eq!(
        tool_result(&messages, "d"),
        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
    );
}

#[tokio::test]
async fn additional_directories_from_the_editor_count_as_inside() {
    let h = Harness::start(vec![]).await;
    let extra = real(h.root.path()).join("extra");
    let notes = write_file(&extra.join("notes.txt"), "shared\n");
    let created = extra.join("new.txt");
    h.model.script(script(vec![
        vec![call("r", "read", json!({"file_path": notes}))],
        vec![call("w", "write", json!({"file_path": created, "content": "made\n"}))],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let request = acp::NewSessionRequest::new(h.cwd.clone()).additional_directories(vec![extra.clone()]);
    let session = h.client.call(request).await.unwrap().session_id;
    h.client.prompt(&session, "use the shared dir").await.unwrap();
    let messages = h.model.messages(2);
    assert_eq!(tool_result(&messages, "r"), "1\tshared\n\n(End of file: 1 lines)");
    assert_eq!(tool_result(&messages, "w"), format!("Created {} (1 lines).", created.display()));
    assert_eq!(std::fs::read_to_string(&created).unwrap(), "made\n");
    let asks = asks(&h);
    assert_eq!(asks.keys().collect::<Vec<_>>(), vec!["w"], "only the edit asks, as inside the workspace");
    assert_eq!(asks["w"]["toolCall"]["kind"], "edit");

    let relative = acp::NewSessionRequest::new(h.cwd.clone()).additional_directories(vec!["extra".into()]);
    let err = h.client.call(relative).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(err.message, "additionalDirectories must be absolute paths of existing directories: extra");
}

#[tokio::test]
async fn a_dangling_symlink_to_outside_is_refused_for_every_writer_and_creates_nothing() {
    let h = Setup::new(vec![]).capabilities(editor_fs()).start().await;
    let outside = real(h.root.path()).join("outside");
    symlink(outside.join("made-by-link"), h.cwd.join("out")).unwrap();
    symlink(outside.join("file.txt"), h.cwd.join("out.txt")).unwrap();
    let patch = |path: &str| format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch");
    h.model.script(script(vec![vec![
        call("w1", "write", json!({"file_path": h.cwd.join("out/new.txt"), "content": "x\n"})),
        call("w2", "write", json!({"file_path": h.cwd.join("out.txt"), "content": "x\n"})),
        call("e", "edit", json!({"file_path": h.cwd.join("out.txt"), "old_string": "", "new_string": "x\n"})),
        call("p1", "apply_patch", json!({"patch": patch("out/added.txt")})),
        call("p2", "apply_patch", json!({"patch": patch("out.txt")})),
    ]]));
    let session = h.session().await;
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "accept-edits")).await.unwrap();
    h.client.prompt(&session, "write through the links").await.unwrap();
    let refused = |target: PathBuf, link: &str| {
        format!(
            "Refusing to change {} ({} leads there through a symbolic link): it is outside the workspace ({}). Only files inside the session's directories can be changed.",
            target.display(),
            h.cwd.join(link).display(),
            h.cwd.display()
        )
    };
    let messages = h.model.messages(1);
    assert_eq!(tool_result(&messages, "w1"), refused(outside.join("made-by-link/new.txt"), "out/new.txt"));
    assert_eq!(tool_result(&messages, "w2"), refused(outside.join("file.txt"), "out.txt"));
    assert_eq!(tool_result(&messages, "e"), refused(outside.join("file.txt"), "out.txt"));
    assert_eq!(
        tool_result(&messages, "p1"),
        refused(outside.join("made-by-link/added.txt"), "out/added.txt")
    );
    assert_eq!(tool_result(&messages, "p2"), refused(outside.join("file.txt"), "out.txt"));
    assert!(!outside.exists(), "neither the file nor the directory the link points into was created");
    assert!(h.client.log.fs_writes.lock().unwrap().is_empty());
    assert!(asks(&h).is_empty());
}

#[tokio::test]
async fn a_write_through_a_symlink_inside_the_workspace_asks_and_writes_at_the_real_path() {
    let h = Setup::new(vec![]).capabilities(editor_fs()).start().await;
    let target = h.write("docs/real.txt", "old\n");
    symlink("docs/real.txt", h.cwd.join("alias.txt")).unwrap();
    let alias = h.cwd.join("alias.txt");
    h.model.script(script(vec![
        vec![call("r", "read", json!({"file_path": alias}))],
        vec![call("w", "write", json!({"file_path": alias, "content": "new\n"}))],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "rewrite").await.unwrap();
    let ask = &asks(&h)["w"];
    assert_eq!(ask["toolCall"]["title"], "Write docs/real.txt");
    assert_eq!(ask["toolCall"].get("content"), None, "the ask refers to the call, which shows the diff");
    assert_eq!(
        h.shown_content(&session, "w"),
        json!([{"type": "diff", "path": target, "oldText": "old\n", "newText": "new\n"}])
    );
    assert_eq!(*h.client.log.fs_writes.lock().unwrap(), vec![(target.clone(), "new\n".to_string())]);
    assert!(std::fs::symlink_metadata(&alias).unwrap().file_type().is_symlink(), "the link survives");
}

#[tokio::test]
async fn an_editor_that_refuses_a_read_is_believed_and_only_method_not_found_falls_back_to_disk() {
    let h = Setup::new(vec![]).capabilities(editor_fs()).start().await;
    let file = h.write("a.txt", "disk text\n");
    h.model.script(script(vec![vec![call("refused", "read", json!({"file_path": file}))]]));
    *h.client.log.fs_read_error.lock().unwrap() =
        Some(Error::new(ErrorCode::INTERNAL_ERROR, "the user declined the read"));
    let session = h.session().await;
    h.client.prompt(&session, "read").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "refused"),
        format!("Error: the editor could not read {}: the user declined the read", file.display())
    );

    h.model.script(script(vec![vec![call("fallback", "read", json!({"file_path": file}))]]));
    *h.client.log.fs_read_error.lock().unwrap() = Some(Error::method_not_found());
    h.client.prompt(&session, "read again").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(3), "fallback"), "1\tdisk text\n\n(End of file: 1 lines)");
    assert_eq!(*h.client.log.fs_reads.lock().unwrap(), vec![file.clone(), file.clone()]);
}

#[tokio::test]
async fn a_fifo_gets_a_prompt_clear_error_from_every_file_tool_and_is_never_opened() {
    let h = Setup::new(vec![]).capabilities(editor_fs()).start().await;
    let pipe = h.cwd.join("pipe");
    mkfifo(&pipe);
    // A hostile repository's ignore files: the walk must neither block on them nor lose files to them.
    mkfifo(&h.cwd.join(".gitignore"));
    mkfifo(&h.cwd.join(".ignore"));
    h.write("a.txt", "x\n");
    let update = "*** Begin Patch\n*** Update File: pipe\n@@\n-a\n+b\n*** End Patch";
    let add = "*** Begin Patch\n*** Add File: pipe\n+b\n*** End Patch";
    h.model.script(script(vec![vec![
        call("read", "read", json!({"file_path": pipe})),
        call("write", "write", json!({"file_path": pipe, "content": "x"})),
        call("edit", "edit", json!({"file_path": pipe, "old_string": "a", "new_string": "b"})),
        call("update", "apply_patch", json!({"patch": update})),
        call("add", "apply_patch", json!({"patch": add})),
        call("grep_one", "grep", json!({"pattern": "x", "path": pipe})),
        call("grep_all", "grep", json!({"pattern": "x"})),
        call("glob_all", "glob", json!({"pattern": "*"})),
    ]]));
    let session = h.session().await;
    h.client.prompt(&session, "touch the pipe").await.unwrap();
    let messages = h.model.messages(1);
    let fifo = |tail: &str| format!("{} is a FIFO (named pipe), not a regular file. {tail}", pipe.display());
    assert_eq!(tool_result(&messages, "read"), fifo("Only regular files can be read."));
    assert_eq!(tool_result(&messages, "write"), fifo("Only regular files can be changed."));
    assert_eq!(tool_result(&messages, "edit"), fifo("Only regular files can be changed."));
    assert_eq!(tool_result(&messages, "update"), fifo("Only regular files can be read or changed."));
    assert_eq!(tool_result(&messages, "add"), fifo("Only regular files can be read or changed."));
    assert_eq!(tool_result(&messages, "grep_one"), fifo("Only regular files can be searched."));
    assert_eq!(tool_result(&messages, "grep_all"), "a.txt:1:x");
    assert_eq!(tool_result(&messages, "glob_all"), h.cwd.join("a.txt").display().to_string());
    assert!(h.client.log.fs_reads.lock().unwrap().is_empty(), "the editor is not asked to open it either");
    // Nobody holds the FIFO open for reading (a blocked reader would): opening its write end fails at once.
    let writer = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&pipe);
    assert_eq!(writer.unwrap_err().raw_os_error(), Some(libc::ENXIO));
}

#[tokio::test]
async fn procfs_reads_stop_at_the_cap_and_searches_never_enter_virtual_file_systems() {
    let h = Harness::start(vec![]).await;
    h.model.script(script(vec![vec![
        call("pagemap", "read", json!({"file_path": "/proc/self/pagemap"})),
        call("grep_proc", "grep", json!({"pattern": "x", "path": "/proc"})),
        call("grep_status", "grep", json!({"pattern": "^Name", "path": "/proc/self/status"})),
        call("glob_sys", "glob", json!({"pattern": "*", "path": "/sys"})),
    ]]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "read procfs").await.unwrap();
    let messages = h.model.messages(1);
    // The agent runs in this process, so `/proc/self` resolves to this process's directory.
    let own = PathBuf::from(format!("/proc/{}", std::process::id()));
    assert_eq!(
        tool_result(&messages, "pagemap"),
        format!(
            "{} is larger than 16 MB, too large to read whole. Use grep to find the lines you need.",
            own.join("pagemap").display()
        )
    );
    let virtual_fs = "(/proc, /sys, /dev)";
    assert_eq!(
        tool_result(&messages, "grep_proc"),
        format!(
            "/proc is in a virtual file system {virtual_fs}, which grep does not search. Read one file there with read instead."
        )
    );
    assert_eq!(
        tool_result(&messages, "grep_status"),
        format!(
            "{} is in a virtual file system {virtual_fs}, which grep does not search. Read one file there with read instead.",
            own.join("status").display()
        )
    );
    assert_eq!(
        tool_result(&messages, "glob_sys"),
        format!("/sys is in a virtual file system {virtual_fs}, which glob does not list.")
    );
    assert_eq!(asks(&h).keys().collect::<Vec<_>>(), vec!["pagemap"], "only the read outside asks");
}

#[tokio::test]
async fn a_file_the_user_mentions_outside_the_workspace_is_attached_without_an_ask() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    let notes = write_file(&h.root.path().join("elsewhere/todo.md"), "remember the milk\n");
    let session = h.session().await;
    let blocks = vec![
        acp::ContentBlock::Text(acp::TextContent::new("see")),
        acp::ContentBlock::ResourceLink(acp::ResourceLink::new(
            "todo.md",
            format!("file://{}", notes.display()),
        )),
    ];
    h.client.prompt_blocks(&session, blocks).await.unwrap();
    assert_eq!(
        h.model.messages(0)[1]["content"],
        json!([
            {"type": "text", "text": "see"},
            {"type": "text", "text": format!("<file path=\"{}\">\nremember the milk\n\n</file>", notes.display())}
        ])
    );
    assert!(asks(&h).is_empty());
}
