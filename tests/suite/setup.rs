//! `tinycode setup` driven through a pseudo-terminal (echo really off while the key is typed), and `tinycode
//! doctor`'s report, both on the real binary.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use super::binary::Env;
use crate::support::client::PATIENCE;
use crate::support::fake_model::{FakeModel, Persona};

/// The binary running on a pseudo-terminal: what it printed so far, and its keyboard.
struct Pty {
    child: std::process::Child,
    keyboard: std::fs::File,
    screen: mpsc::Receiver<Vec<u8>>,
    seen: String,
}

impl Pty {
    fn spawn(command: &mut Command) -> Pty {
        // SAFETY: the standard pseudo-terminal calls on a descriptor we own; each result is checked.
        let (master, slave) = unsafe {
            let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(master >= 0 && libc::grantpt(master) == 0 && libc::unlockpt(master) == 0);
            let name = std::ffi::CStr::from_ptr(libc::ptsname(master)).to_owned();
            let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
            assert!(slave >= 0);
            (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
        };
        let child = command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .spawn()
            .unwrap();
        let keyboard = std::fs::File::from(master);
        let mut reader = keyboard.try_clone().unwrap();
        let (tx, screen) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 || tx.send(buffer[..n].to_vec()).is_err() {
                    return;
                }
            }
        });
        Pty { child, keyboard, screen, seen: String::new() }
    }

    /// Wait until the screen shows `text`.
    fn expect(&mut self, text: &str) {
        let deadline = std::time::Instant::now() + PATIENCE;
        while !self.seen.replace("\r\n", "\n").contains(text) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.screen.recv_timeout(left) {
                Ok(bytes) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => panic!("never saw {text:?}; the screen:\n{}", self.seen),
            }
        }
    }

    fn type_line(&mut self, line: &str) {
        self.keyboard.write_all(format!("{line}\r").as_bytes()).unwrap();
    }

    /// Wait for the exit and everything printed before it.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().unwrap();
        while let Ok(bytes) = self.screen.recv_timeout(std::time::Duration::from_millis(200)) {
            self.seen.push_str(&String::from_utf8_lossy(&bytes));
        }
        (status, self.seen.replace("\r\n", "\n"))
    }
}

fn setup_command(env: &Env, extra: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tinycode"));
    command
        .arg("setup")
        .env_clear()
        .env("HOME", env.dir.path())
        .env("XDG_CONFIG_HOME", env.dir.path().join("config"))
        .env("TINYCODE_DATA_DIR", env.dir.path().join("data"))
        .current_dir(env.cwd());
    for (k, v) in extra {
        command.env(k, v);
    }
    command
}

/// Run a command to its end, with no input.
async fn run_to_end(command: &mut tokio::process::Command) -> std::process::Output {
    command.stdin(Stdio::null());
    tokio::time::timeout(PATIENCE, command.output()).await.unwrap().unwrap()
}

fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn setup_finds_a_local_server_checks_it_and_saves_it_for_the_next_start() {
    let env = Env::new();
    let ollama = FakeModel::start(vec![]).await;
    ollama.impersonate(Persona::Ollama);
    ollama.set_models(Some(vec!["qwen3:8b".into(), "llama3.2".into()]));
    let host = format!("127.0.0.1:{}", ollama.port());
    let pty = tokio::task::spawn_blocking(move || {
        let mut pty = Pty::spawn(&mut setup_command(&env, &[("OLLAMA_HOST", &host)]));
        pty.expect("Provider (number or name) [1]: ");
        pty.type_line("ollama");
        pty.expect("Model [qwen3:8b]: ");
        pty.type_line("");
        (pty, env)
    })
    .await
    .unwrap();
    let (status, screen) = tokio::task::spawn_blocking(move || pty.0.finish()).await.unwrap();
    let env = pty.1;
    assert!(status.success(), "{screen}");
    let file = env.dir.path().join("config/tinycode/config.toml");
    assert!(screen.contains(&format!("  1. Ollama at {} (2 models)\n", ollama.base_url)), "{screen}");
    assert!(screen.contains("Checking… it answers: 2 models.\n"), "{screen}");
    assert!(
        screen.contains(&format!(
            "Saved to {} (readable only by you). tinycode now uses ollama with qwen3:8b.",
            file.display()
        )),
        "{screen}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!(
            "provider = \"ollama\"\n[retry]\nmax_retries = 1\ninitial_backoff_ms = 1\n\n[providers.ollama]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\nmodels = [\"qwen3:8b\"]\n",
            ollama.base_url
        )
    );
    assert_eq!(mode(&file), 0o600);
}

#[tokio::test]
async fn setup_hides_the_key_as_it_is_typed_and_checks_it_with_a_real_request() {
    let env = Env::new();
    let server = FakeModel::start(vec![]).await;
    let url = server.base_url.clone();
    let (pty, env) = tokio::task::spawn_blocking(move || {
        let mut pty = Pty::spawn(&mut setup_command(&env, &[]));
        pty.expect("Provider (number or name) [1]: ");
        pty.type_line("custom");
        pty.expect("Base URL (for example http://127.0.0.1:8000/v1): ");
        pty.type_line("127.0.0.1:1/v1");
        pty.expect("it has no scheme; write http://127.0.0.1:1/v1 (or https://…)\n");
        pty.expect("Base URL (for example http://127.0.0.1:8000/v1): ");
        pty.type_line(&url);
        pty.expect("typing is hidden): ");
        pty.type_line("sk-very-secret-key");
        pty.expect("Model [fake-model]: ");
        pty.type_line("fake-model-large");
        (pty, env)
    })
    .await
    .unwrap();
    let (status, screen) = tokio::task::spawn_blocking(move || pty.finish()).await.unwrap();
    assert!(status.success(), "{screen}");
    assert!(!screen.contains("sk-very-secret-key"), "the key was echoed:\n{screen}");
    assert_eq!(server.listing_authorizations(), vec![Some("Bearer sk-very-secret-key".to_string())]);
    let saved: toml::Table =
        toml::from_str(&std::fs::read_to_string(env.dir.path().join("config/tinycode/config.toml")).unwrap())
            .unwrap();
    assert_eq!(saved["provider"].as_str(), Some("custom"));
    assert_eq!(saved["providers"]["custom"]["api_key"].as_str(), Some("sk-very-secret-key"));
    assert_eq!(saved["providers"]["custom"]["models"], toml::Value::Array(vec!["fake-model-large".into()]));
}

#[tokio::test]
async fn doctor_prints_the_configuration_with_the_key_redacted_and_explains_each_failed_check() {
    let env = Env::new();
    let model = FakeModel::start(vec![]).await;
    let output = run_to_end(
        env.command(&model, &["doctor"])
            .env("TINYCODE_API_KEY", "sk-test-abcdef-9876")
            .env("TINYCODE_MODEL", "gpt-4.1"),
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!(
            "Configuration (environment, your config file, and the project's file when trusted):\n\
             \x20 custom: OpenAI-compatible (Chat Completions) at {}, key …9876 from TINYCODE_API_KEY [TINYCODE_* variables and top-level settings]\n\
             \x20 model: gpt-4.1 (context 1047576, output 32768, tools, images; from the catalogue)\n\
             \nSession database:\n\
             \x20 {}: not created yet (no session stored)\n\
             \nChecks (each provider's model list):\n\
             \x20 custom: OK, 2 models (fake-model, fake-model-large)\n\
             \nModel metadata: a snapshot of models.dev (MIT licence, © 2025 models.dev).\n",
            model.base_url,
            env.dir.path().join("data/tinycode.db").display()
        )
    );

    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
    let output = run_to_end(
        env.command(&model, &["doctor"]).env("TINYCODE_BASE_URL", format!("http://127.0.0.1:{closed}/v1")),
    )
    .await;
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "  custom: FAILED: nothing is listening at http://127.0.0.1:{closed}: is the server running?\n"
        )),
        "{text}"
    );
}

#[tokio::test]
async fn the_terminal_sign_in_an_editor_runs_is_setup_and_ending_it_early_saves_nothing() {
    let env = Env::new();
    let before = std::fs::read_to_string(env.dir.path().join("config/tinycode/config.toml")).unwrap();
    let (pty, env) = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tinycode"));
        command
            .args(["acp", tinycode::acp::auth::SETUP_ARG])
            .env_clear()
            .env("HOME", env.dir.path())
            .env("XDG_CONFIG_HOME", env.dir.path().join("config"))
            .current_dir(env.cwd());
        let mut pty = Pty::spawn(&mut command);
        pty.expect("Provider (number or name) [1]: ");
        pty.keyboard.write_all(&[4]).unwrap();
        (pty, env)
    })
    .await
    .unwrap();
    let (status, screen) = tokio::task::spawn_blocking(move || pty.finish()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{screen}");
    assert!(screen.ends_with("setup ended before it was finished; nothing was saved\n"), "{screen}");
    assert_eq!(std::fs::read_to_string(env.dir.path().join("config/tinycode/config.toml")).unwrap(), before);
}
