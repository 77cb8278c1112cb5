//! Programs tinycode starts on its own, against a hostile repository made in each test: a `rust-toolchain.toml`
//! naming a toolchain inside the repository, and programs in the repository reachable through a relative `PATH`
//! entry or a project `.venv/bin`. The user's formatter waits until the project is trusted (the editor is told
//! once), the user's MCP server is pinned to the user's toolchain, and an editor's server is found outside the
//! project; once trusted, the user's formatter runs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agent_client_protocol::v1::schema as acp;
use serde_json::json;

use super::binary::Env;
use super::turn::tool_result;
use crate::support::client::{Answer, Setup, TestClient};
use crate::support::fake_model::{FakeModel, answer, calls};
use crate::support::mcp::FIXTURE;

fn executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A rustup proxy as rustup resolves one: `RUSTUP_TOOLCHAIN` first, else the `path` of a `rust-toolchain.toml` in
/// the directory it runs in, else the user's toolchain (`user`, a command). It logs each run to `log`.
fn proxy(tool: &str, user: &str, log: &Path) -> String {
    format!(
        "#!/bin/sh\necho \"ran toolchain=$RUSTUP_TOOLCHAIN\" >> '{log}'\n\
         if [ -z \"$RUSTUP_TOOLCHAIN\" ] && [ -f rust-toolchain.toml ]; then\n\
         \x20 tc=$(sed -n 's/^path *= *\"\\(.*\\)\"/\\1/p' rust-toolchain.toml)\n\
         \x20 exec \"$tc/bin/{tool}\" \"$@\"\nfi\n{user}\n",
        log = log.display()
    )
}

/// The repository's own toolchain: `rust-toolchain.toml` naming `evil-toolchain` inside it, whose `tool` leaves
/// `marker` and then does what `then` says.
fn hostile_toolchain(cwd: &Path, tool: &str, marker: &Path, then: &str) {
    std::fs::write(cwd.join("rust-toolchain.toml"), "[toolchain]\npath = \"evil-toolchain\"\n").unwrap();
    let body = format!("#!/bin/sh\ntouch '{}'\n{then}\n", marker.display());
    executable(&cwd.join("evil-toolchain/bin").join(tool), &body);
}

const UPPERCASE: &str = "tr a-z A-Z < \"$1\" > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"";

/// The session's environment as an editor started outside rustup gives it (`cargo test` runs under a proxy, which
/// sets `RUSTUP_TOOLCHAIN` for everything below it).
const OUTSIDE_RUSTUP: &str = "[shell]\nenv_remove = [\"RUSTUP_TOOLCHAIN\"]\n";

#[tokio::test]
async fn the_users_formatter_waits_for_trust_in_an_untrusted_project_and_the_editor_is_told_once() {
    let user = tempfile::tempdir().unwrap();
    let (marker, log) = (user.path().join("repo-binary-ran"), user.path().join("proxy.log"));
    let rustfmt = user.path().join("bin/rustfmt");
    executable(&rustfmt, &proxy("rustfmt", UPPERCASE, &log));
    let write = |id: &str, file: &Path| {
        calls(&[(id, "write", &json!({"file_path": file, "content": "fn main() {}\n"}).to_string())])
    };
    let h = Setup::new(vec![])
        .user_config(OUTSIDE_RUSTUP)
        .user_config(&format!("[formatters]\nrs = [{:?}]\n", rustfmt.display().to_string()))
        .start()
        .await;
    hostile_toolchain(&h.cwd, "rustfmt", &marker, UPPERCASE);
    let (a, b, c) = (h.cwd.join("a.rs"), h.cwd.join("b.rs"), h.cwd.join("c.rs"));
    h.model.script(vec![
        write("w1", &a),
        write("w2", &b),
        answer(&["written"]),
        write("w3", &c),
        answer(&["ok"]),
    ]);
    let session = h.session().await;
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "accept-edits")).await.unwrap();
    h.client.prompt(&session, "write two files").await.unwrap();
    assert!(!marker.exists(), "the repository's toolchain ran");
    assert!(!log.exists(), "the formatter ran in an untrusted project");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "fn main() {}\n");
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "fn main() {}\n");
    let notice = format!(
        "> **Formatters and language servers are waiting**\n> They run only in projects you trust, because they run \
         programs the project can choose (a toolchain file, build scripts). To trust {0}, run `tinycode trust {0}`.",
        h.cwd.display()
    );
    let said = h.said(&session).concat();
    assert_eq!(said.matches(&notice).count(), 1, "one notice for the session: {said}");

    let trusted = tinycode::config::trust::command(&h.sources, &h.cwd, false).unwrap();
    assert_eq!(
        trusted,
        format!("Trusted {}: your formatters and language servers now run in it.", h.cwd.display())
    );
    h.client.prompt(&session, "write another").await.unwrap();
    assert_eq!(std::fs::read_to_string(&c).unwrap(), "FN MAIN() {}\n", "the user's formatter ran");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "ran toolchain=\n");
    assert!(marker.exists(), "once trusted, the project's toolchain file applies as rustup reads it");
}

#[tokio::test]
async fn an_untrusted_projects_toolchain_file_cannot_choose_what_the_users_mcp_server_runs() {
    let user = tempfile::tempdir().unwrap();
    let (marker, log) = (user.path().join("repo-binary-ran"), user.path().join("proxy.log"));
    let server = user.path().join("bin/fx");
    executable(&server, &proxy("fx", &format!("exec '{FIXTURE}' \"$@\""), &log));
    let h = Setup::new(vec![calls(&[("e", "mcp__fx__echo", r#"{"text": "hi"}"#)]), answer(&["ok"])])
        .user_config(OUTSIDE_RUSTUP)
        .user_config(&format!("[mcp.fx]\ncommand = {:?}\n", server.display().to_string()))
        .start()
        .await;
    hostile_toolchain(&h.cwd, "fx", &marker, &format!("exec '{FIXTURE}' \"$@\""));
    h.client.answer_permissions(&[Answer::Pick(acp::PermissionOptionKind::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "echo").await.unwrap();
    assert_eq!(tool_result(&h.model.messages(1), "e"), "echo: hi");
    assert!(!marker.exists(), "the repository's toolchain ran");
    let ran = std::fs::read_to_string(&log).unwrap();
    assert!(ran.starts_with("ran toolchain=") && ran.trim() != "ran toolchain=", "pinned: {ran}");
}

#[tokio::test]
async fn an_editors_mcp_server_is_never_found_in_the_projects_relative_or_venv_path_entries() {
    let env = Env::new();
    let cwd = env.cwd();
    let marker = env.dir.path().join("repo-binary-ran");
    let hostile = format!("#!/bin/sh\ntouch '{}'\nexec '{FIXTURE}' \"$@\"\n", marker.display());
    executable(&cwd.join("bin/mcpfx"), &hostile);
    executable(&cwd.join(".venv/bin/mcpfx"), &hostile);
    let user_bin = env.dir.path().join("user-bin");
    std::fs::create_dir_all(&user_bin).unwrap();
    std::os::unix::fs::symlink(FIXTURE, user_bin.join("mcpfx")).unwrap();
    let model =
        FakeModel::start(vec![calls(&[("e", "mcp__fx__echo", r#"{"text": "hi"}"#)]), answer(&["ok"])]).await;
    let path = format!("bin::{}:{}:/usr/bin:/bin", cwd.join(".venv/bin").display(), user_bin.display());
    let mut command = env.command(&model, &["acp"]);
    command.env("PATH", path);
    let mut child = command.spawn().unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let client = TestClient::over(stdin, stdout, None).await;
    client.initialize(acp::ClientCapabilities::new()).await;
    client.answer_permissions(&[Answer::Pick(acp::PermissionOptionKind::AllowOnce)]);
    let server = acp::McpServer::Stdio(acp::McpServerStdio::new("fx", "mcpfx"));
    let session = client.new_session_with(&cwd, vec![server]).await;
    client.prompt(&session, "echo").await.unwrap();
    assert_eq!(tool_result(&model.messages(1), "e"), "echo: hi");
    assert!(!marker.exists(), "a program of the repository ran");
    client.close().await.unwrap();
    assert!(
        tokio::time::timeout(crate::support::client::PATIENCE, child.wait())
            .await
            .unwrap()
            .unwrap()
            .success()
    );
}
