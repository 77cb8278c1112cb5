//! A repository whose git configuration names programs (a filter driver, a file-system monitor, in its own
//! `.git/config` and in a submodule's, spelled the way a hand-written parser misreads), end to end through ACP:
//! a rejected shell call and plan mode run none of them, tinycode's own git commands (the checkpoint's
//! `git status`, `enter_worktree`) run none of them, and `git status` in such a repository is not auto-approved
//! as read-only. Each program appends its name to a marker file outside the project.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::json;

use super::checkpoints::git;
use super::turn::tool_result;
use crate::support::client::{Answer, Harness};
use crate::support::fake_model::{Reply, answer, calls};

/// Where the hostile programs live and what they leave behind, outside the project.
struct Trap {
    dir: tempfile::TempDir,
}

impl Trap {
    fn new() -> Self {
        Trap { dir: tempfile::tempdir().unwrap() }
    }

    fn marker(&self) -> PathBuf {
        self.dir.path().join("ran")
    }

    /// A program that notes that it ran and passes its input through (a working filter).
    fn program(&self, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.path().join(name);
        let script = format!("#!/bin/sh\necho \"{name} $*\" >> '{}'\ncat\n", self.marker().display());
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// What ran, one line each (empty when nothing did).
    fn ran(&self) -> String {
        std::fs::read_to_string(self.marker()).unwrap_or_default()
    }
}

/// Make `file` differ from the index in its time only, so git must read it (through the clean filter) to
/// know whether it changed.
fn touch(file: &Path) {
    let past = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(file).unwrap().set_modified(past).unwrap();
}

/// Append `text` to a git configuration file.
fn append(config: &Path, text: &str) {
    let mut old = std::fs::read_to_string(config).unwrap();
    old.push_str(text);
    std::fs::write(config, old).unwrap();
}

/// Configuration lines git reads and a hand-written parser missed: a comment ending in a backslash is no
/// continuation for git, and a second section header may follow the first on one line.
fn hostile_config(filter: &str, program: &Path) -> String {
    let p = program.display();
    format!(
        "[core]\n\t# tidy \\\n[core] fsmonitor = {p}\n\t# tidy \\\n[core] [filter \"{filter}\"] clean = {p} clean\n\t# tidy \\\n[core] [filter \"{filter}\"] smudge = {p} smudge\n\t# tidy \\\n[core] [filter \"{filter}\"] required = true\n"
    )
}

/// A committed repository with `a.txt` under a filter driver, and a nested repository `lib/` (a submodule
/// gitlink) with its own filter and monitor; the hostile configuration is added last, and both tracked files
/// are left stat-dirty so any `git status` reads them.
fn hostile_repository(h: &Harness, trap: &Trap) {
    hostile_repository_with(h, trap, true);
}

/// [`hostile_repository`], with the top repository's own configuration left clean unless `top`.
fn hostile_repository_with(h: &Harness, trap: &Trap, top: bool) {
    h.write(".gitattributes", "*.txt filter=evil\n");
    let a = h.write("a.txt", "one\n");
    let lib = h.cwd.join("lib");
    h.write("lib/.gitattributes", "*.txt filter=subevil\n");
    let b = h.write("lib/b.txt", "two\n");
    git(&lib, &["init", "-q"]);
    git(&lib, &["add", "."]);
    git(&lib, &["commit", "-q", "-m", "lib"]);
    git(&h.cwd, &["init", "-q"]);
    git(&h.cwd, &["add", ".gitattributes", "a.txt", "lib"]);
    git(&h.cwd, &["commit", "-q", "-m", "start"]);
    if top {
        append(&h.cwd.join(".git/config"), &hostile_config("evil", &trap.program("top")));
    }
    append(
        &lib.join(".git/config"),
        &format!(
            "[core]\n\tfsmonitor = {p}\n[filter \"subevil\"]\n\tclean = {p} clean\n\tsmudge = {p} smudge\n",
            p = trap.program("sub").display()
        ),
    );
    touch(&a);
    touch(&b);
}

fn bash(id: &str, command: &str) -> Reply {
    calls(&[(id, "bash", &json!({"command": command}).to_string())])
}

fn asked(h: &Harness) -> Vec<String> {
    let requests = h.client.log.permission_requests.lock().unwrap();
    requests.iter().map(|r| serde_json::to_value(r).unwrap()["toolCall"]["title"].to_string()).collect()
}

const DECLINED: &str =
    "The user declined this tool call. Do not retry it; ask the user how to proceed if needed.";

#[tokio::test]
async fn a_rejected_shell_call_in_a_hostile_repository_runs_none_of_its_git_programs() {
    let trap = Trap::new();
    let h = Harness::start(vec![bash("b", "echo two > a.txt"), answer(&["ok"])]).await;
    hostile_repository(&h, &trap);
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "change a").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "b"), DECLINED);
    assert_eq!(asked(&h), vec![json!("echo two > a.txt").to_string()]);
    assert_eq!(trap.ran(), "", "a program of the repository's git config ran");
}

#[tokio::test]
async fn plan_mode_runs_none_of_a_hostile_repository_s_git_programs() {
    let trap = Trap::new();
    let h = Harness::start(vec![bash("b", "echo two > a.txt"), answer(&["ok"])]).await;
    hostile_repository(&h, &trap);
    let session = h.session().await;
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "plan")).await.unwrap();
    h.client.prompt(&session, "change a").await.unwrap();
    let result = tool_result(&h.model.messages(1), "b");
    assert!(result.starts_with("Permission denied by rule"), "{result}");
    assert_eq!(trap.ran(), "", "a program of the repository's git config ran");
}

#[tokio::test]
async fn an_approved_shell_call_is_checkpointed_without_running_the_repository_s_git_programs() {
    let trap = Trap::new();
    let command = "echo three > a.txt && echo new > notes.md";
    let h = Harness::start(vec![bash("b", command), answer(&["ok"])]).await;
    hostile_repository(&h, &trap);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "change a").await.unwrap();
    assert_eq!(std::fs::read_to_string(h.cwd.join("a.txt")).unwrap(), "three\n");
    h.client.prompt(&session, "/checkpoints").await.unwrap();
    let listing = h.said(&session).last().cloned().unwrap_or_default();
    let (_, entry) = listing.split_once(" “change a”: ").unwrap_or_default();
    let entry = entry.split("\n\n").next().unwrap_or_default();
    assert_eq!(
        entry,
        format!(
            "`notes.md`\n   not covered: {} (changed by `{command}`: git cat-file failed: its committed text passes through the filter driver `evil`, which tinycode does not run)",
            h.cwd.join("a.txt").display()
        ),
        "{listing}"
    );
    assert_eq!(trap.ran(), "", "a program of the repository's git config ran");
}

#[tokio::test]
async fn entering_a_worktree_of_a_hostile_repository_runs_none_of_its_git_programs() {
    let trap = Trap::new();
    let h = Harness::start(vec![
        calls(&[("e", "enter_worktree", &json!({"name": "exp"}).to_string())]),
        answer(&["ok"]),
    ])
    .await;
    hostile_repository(&h, &trap);
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "isolate").await.unwrap();
    let result = tool_result(&h.model.messages(1), "e");
    assert!(result.starts_with("Created worktree `exp`"), "{result}");
    assert_eq!(trap.ran(), "", "a program of the repository's git config ran");
}

#[tokio::test]
async fn git_status_in_a_repository_whose_config_git_reads_as_running_programs_asks_first() {
    let trap = Trap::new();
    let h = Harness::start(vec![bash("b", "git status"), answer(&["ok"])]).await;
    hostile_repository(&h, &trap);
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "what changed?").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "b"), DECLINED);
    assert_eq!(asked(&h), vec![json!("git status").to_string()]);
    assert_eq!(trap.ran(), "", "a program of the repository's git config ran");
}

#[tokio::test]
async fn git_diff_asks_first_when_only_a_submodule_s_config_names_a_program() {
    let trap = Trap::new();
    let h = Harness::start(vec![bash("b", "git diff"), answer(&["ok"])]).await;
    hostile_repository_with(&h, &trap, false);
    h.client.answer_permissions(&[Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "what changed?").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "b"), DECLINED);
    assert_eq!(asked(&h), vec![json!("git diff").to_string()]);
    assert_eq!(trap.ran(), "", "a program of the submodule's git config ran");
}
