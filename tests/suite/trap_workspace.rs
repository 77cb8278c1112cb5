//! The real binary (CI runs this against the release build, `TINYCODE_BIN`) started in a hostile workspace: FIFOs
//! where the agent reads first (instructions, config, ignore files, sources) and links into `/proc` and `/dev`.
//! Every request must be answered within the test's deadline, and the turn must end normally.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};

use super::binary::Env;
use super::turn::{finished, stop, tool_result};
use crate::support::client::{PATIENCE, TestClient, redact};
use crate::support::fake_model::{FakeModel, answer, calls};

fn fifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let name = CString::new(path.as_os_str().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

const FIFOS: [&str; 8] = [
    "AGENTS.md",
    "CLAUDE.md",
    ".gitignore",
    ".ignore",
    ".env",
    "notes.txt",
    "src/main.rs",
    "src/deep/er/mod.rs",
];

const LINKS: [(&str, &str); 7] = [
    ("self", "/proc/self"),
    ("proc", "/proc"),
    ("kmsg", "/proc/kmsg"),
    ("mem", "/proc/self/mem"),
    ("stdin", "/proc/self/fd/0"),
    ("zero", "/dev/zero"),
    ("src/random.rs", "/dev/urandom"),
];

/// Every answer must come within this; a hang fails the test instead of holding it forever.
async fn within<T>(what: &str, answer: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, answer)
        .await
        .unwrap_or_else(|_| panic!("no answer to {what} within {PATIENCE:?}"))
}

#[tokio::test]
async fn the_binary_answers_within_its_deadlines_in_a_workspace_of_fifos_and_proc_links() {
    let env = Env::new();
    let cwd = env.cwd();
    for name in FIFOS {
        fifo(&cwd.join(name));
    }
    for (name, target) in LINKS {
        std::os::unix::fs::symlink(target, cwd.join(name)).unwrap();
    }
    std::fs::write(cwd.join("src/lib.rs"), "fn find_me() {}\n").unwrap();
    let reads: Vec<(String, String, String)> = ["notes.txt", "kmsg", "mem", "zero", "stdin", "src/random.rs"]
        .iter()
        .enumerate()
        .map(|(i, path)| (format!("r{i}"), "read".to_string(), json!({"file_path": path}).to_string()))
        .collect();
    let mut round: Vec<(&str, &str, &str)> = vec![
        ("g1", "glob", r#"{"pattern": "**/*"}"#),
        ("g2", "grep", r#"{"pattern": "find_me"}"#),
        ("g3", "grep", r#"{"pattern": "x", "include": "*.md"}"#),
    ];
    round.extend(reads.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())));
    let model = FakeModel::start(vec![calls(&round), answer(&["survived"])]).await;
    let mut child = env.command(&model, &["acp"]).spawn().unwrap();
    let client = TestClient::over(child.stdin.take().unwrap(), child.stdout.take().unwrap(), None).await;
    within("initialize", client.initialize(acp::ClientCapabilities::new())).await;
    // A project config that is a FIFO is refused by name (never opened), like any unreadable config file.
    let config = cwd.join(".tinycode/config.toml");
    fifo(&config);
    let refused = within("session/new", client.try_new_session(&cwd)).await.unwrap_err();
    assert_eq!(
        refused.message,
        format!("cannot read {}: it is a FIFO (named pipe), not a regular file", config.display())
    );
    std::fs::remove_file(&config).unwrap();
    let session = within("session/new", client.new_session(&cwd)).await;
    let prompt = within("session/prompt", client.prompt(&session, "look around")).await;
    assert_eq!(stop(&prompt.unwrap()), json!("end_turn"));
    let messages = model.messages(1);
    assert_eq!(tool_result(&messages, "g1"), cwd.join("src/lib.rs").display().to_string());
    assert_eq!(tool_result(&messages, "g2"), "src/lib.rs:1:fn find_me() {}");
    assert_eq!(tool_result(&messages, "g3"), "No matches found");
    let updates: Vec<Value> =
        client.updates(&session).into_iter().map(|u| redact(u, &cwd, &env.dir.path().join("data"))).collect();
    for (id, _, _) in &reads {
        assert_eq!(finished(&updates, id)["status"], "failed", "{id}: {}", tool_result(&messages, id));
    }
    model.assert_done();
    drop(client);
    let _ = child.kill().await;
}
