//! The files tinycode reads on its own (instruction files, skills, custom commands and their `@path` includes,
//! agent files, tool description overrides) through ACP, in hostile repositories made by each test: a file that
//! links out of its scope (the project, or the user's own config folder), into `/proc`, or through a parent folder
//! that is a link is refused, named to the user in a notice, and nothing of it reaches any model request.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::client::Harness;
use crate::support::fake_model::{answer, calls};

/// A fake private key: the text no model request may carry.
const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAFAKEFAKEFAKE\n";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn link(target: &Path, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    symlink(target, at).unwrap();
}

/// A file outside the project (beside the harness's `work` folder) holding `text`.
fn outside(h: &Harness, name: &str, text: &str) -> PathBuf {
    let path = h.root.path().join("outside").join(name);
    write(&path, text);
    path
}

/// No request the model received carries `secret`.
fn assert_never_sent(h: &Harness, secret: &str) {
    let requests = h.model.requests();
    assert!(!requests.is_empty(), "the model was asked at least once");
    for (n, request) in requests.iter().enumerate() {
        let body = request.body.to_string();
        assert!(!body.contains(secret), "request {n} carries the secret {secret:?}: {body}");
    }
}

/// The editor was told that `path` was refused, and why.
fn assert_noticed(
    h: &Harness,
    session: &agent_client_protocol::v1::schema::SessionId,
    path: &Path,
    why: &str,
) {
    let said = h.said(session).concat();
    let line = format!("> {}: {why}", path.display());
    assert_eq!(said.matches(&line).count(), 1, "one notice names {}: {said}", path.display());
}

fn outside_of(real: &Path, root: &Path) -> String {
    format!("it leads to {}, outside {}", real.display(), root.display())
}

/// A line of this process's environment that shows in JSON as it is (so its absence from a request body means
/// the environment is absent).
fn environment_line() -> String {
    let environ = std::fs::read("/proc/self/environ").unwrap();
    environ
        .split(|b| *b == 0)
        .filter_map(|line| std::str::from_utf8(line).ok())
        .filter(|line| line.len() >= 10 && line.contains('='))
        .find(|line| line.chars().all(|c| c.is_ascii_alphanumeric() || "=/_.:-".contains(c)))
        .expect("some environment variable is plain text")
        .to_string()
}

#[tokio::test]
async fn an_agents_md_linked_to_the_process_environment_is_refused_and_named_in_a_notice() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    let agents = h.cwd.join("AGENTS.md");
    link(Path::new("/proc/self/environ"), &agents);
    let session = h.session().await;
    h.client.prompt(&session, "hello").await.unwrap();
    assert_never_sent(&h, &environment_line());
    let real = format!("/proc/{}/environ", std::process::id());
    assert_noticed(&h, &session, &agents, &format!("it leads to {real}, inside /proc, /sys or /dev"));
}

#[tokio::test]
async fn a_claude_md_in_the_session_folder_linking_to_a_key_two_levels_up_is_refused() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    std::fs::create_dir_all(h.cwd.join(".git")).unwrap();
    let key = outside(&h, "notes.txt", KEY);
    let claude = h.cwd.join("sub/CLAUDE.md");
    link(Path::new("../../outside/notes.txt"), &claude);
    write(&h.cwd.join("AGENTS.md"), "Use tabs.\n");
    let session = h.client.new_session(&h.cwd.join("sub")).await;
    h.client.prompt(&session, "hello").await.unwrap();
    assert_never_sent(&h, "FAKEFAKEFAKE");
    assert!(
        crate::support::mcp::system(&h.model, 0).contains("Use tabs."),
        "the project's own file still counts"
    );
    assert_noticed(&h, &session, &claude, &outside_of(&key, &h.cwd));
}

#[tokio::test]
async fn a_skill_whose_skill_md_links_out_of_the_project_is_refused() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    let target =
        outside(&h, "skill.md", "---\nname: leak\ndescription: LEAKED-DESCRIPTION\n---\nLEAKED-BODY\n");
    let skill = h.cwd.join(".agents/skills/leak/SKILL.md");
    link(&target, &skill);
    let session = h.session().await;
    h.client.prompt(&session, "hello").await.unwrap();
    assert_never_sent(&h, "LEAKED-");
    assert_noticed(&h, &session, &skill, &outside_of(&target, &h.cwd));
}

#[tokio::test]
async fn a_custom_command_file_linking_out_of_the_project_is_refused() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    let target = outside(&h, "command.md", "Summarise LEAKED-COMMAND-TEXT\n");
    let command = h.cwd.join(".tinycode/commands/leak.md");
    link(&target, &command);
    let session = h.session().await;
    h.client.prompt(&session, "/leak").await.unwrap();
    assert_never_sent(&h, "LEAKED-COMMAND-TEXT");
    assert_noticed(&h, &session, &command, &outside_of(&target, &h.cwd));
}

#[tokio::test]
async fn an_at_path_in_a_command_linking_out_of_the_project_is_refused_and_named() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    let target = outside(&h, "included.md", "LEAKED-INCLUDE\n");
    h.write(".tinycode/commands/show.md", "Look at @notes.md and @src/a.rs\n");
    h.write("src/a.rs", "fn a() {}\n");
    let notes = h.cwd.join("notes.md");
    link(&target, &notes);
    let session = h.session().await;
    h.client.prompt(&session, "/show").await.unwrap();
    assert_never_sent(&h, "LEAKED-INCLUDE");
    let prompt = crate::support::mcp::last_user(&h.model, 0);
    assert!(prompt.contains("fn a() {}"), "a file inside the project is still inlined: {prompt}");
    assert_noticed(&h, &session, &notes, &outside_of(&target, &h.cwd));
}

#[tokio::test]
async fn an_agent_file_linking_out_of_the_project_is_refused() {
    let h = Harness::start(vec![]).await;
    let target =
        outside(&h, "agent.md", "---\ndescription: LEAKED-AGENT-DESCRIPTION\n---\nLEAKED-AGENT-PROMPT\n");
    let agent = h.cwd.join(".tinycode/agents/helper.md");
    link(&target, &agent);
    let args = json!({"description": "Help out", "prompt": "do it", "subagent_type": "helper"});
    h.model.script(vec![calls(&[("t1", "task", &args.to_string())]), answer(&["child"]), answer(&["done"])]);
    let session = h.session().await;
    h.client.prompt(&session, "use the helper").await.unwrap();
    assert_never_sent(&h, "LEAKED-AGENT");
    assert_noticed(&h, &session, &agent, &outside_of(&target, &h.cwd));
}

#[tokio::test]
async fn a_users_tool_description_linking_out_of_the_users_config_folder_is_refused() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    let target = outside(&h, "read.md", "LEAKED-TOOL-DESCRIPTION\n");
    let description = h.config_home().join("tinycode/tools/read.md");
    link(&target, &description);
    let session = h.session().await;
    h.client.prompt(&session, "hello").await.unwrap();
    assert_never_sent(&h, "LEAKED-TOOL-DESCRIPTION");
    assert_noticed(&h, &session, &description, &outside_of(&target, &h.config_home().join("tinycode")));
}

#[tokio::test]
async fn a_tinycode_folder_that_is_itself_a_link_out_of_the_project_is_refused() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    let elsewhere = h.root.path().join("elsewhere");
    write(
        &elsewhere.join("skills/evil/SKILL.md"),
        "---\nname: evil\ndescription: LEAKED-THROUGH-PARENT\n---\nbody\n",
    );
    link(&elsewhere, &h.cwd.join(".tinycode"));
    let session = h.session().await;
    h.client.prompt(&session, "hello").await.unwrap();
    assert_never_sent(&h, "LEAKED-THROUGH-PARENT");
    let skill = h.cwd.join(".tinycode/skills/evil/SKILL.md");
    assert_noticed(&h, &session, &skill, &outside_of(&elsewhere.join("skills/evil/SKILL.md"), &h.cwd));
}

#[tokio::test]
async fn a_trusted_projects_tool_description_linking_out_of_the_project_is_refused() {
    let h = crate::support::client::Setup::new(vec![answer(&["ok"])])
        .file(".tinycode/tools/grep.md", "Search with care.\n")
        .start()
        .await;
    let target = outside(&h, "read.md", "LEAKED-PROJECT-TOOL-DESCRIPTION\n");
    let description = h.cwd.join(".tinycode/tools/read.md");
    link(&target, &description);
    // The user trusts the project as it is now (as `tinycode trust` would).
    let trust = tinycode::config::trust::Trust::new(&h.sources);
    let loaded = tinycode::config::Config::load(&h.sources, &h.cwd, &trust).unwrap();
    trust.grant(&loaded.untrusted.expect("the project's own description needs trust")).unwrap();
    let session = h.session().await;
    h.client.prompt(&session, "hello").await.unwrap();
    assert_never_sent(&h, "LEAKED-PROJECT-TOOL-DESCRIPTION");
    let tools = h.model.requests()[0].body["tools"].to_string();
    assert!(tools.contains("Search with care."), "the trusted project's own description applies: {tools}");
    assert_noticed(&h, &session, &description, &outside_of(&target, &h.cwd));
}
