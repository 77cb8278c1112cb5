//! A stdio MCP server's process: spawned in the session directory as the leader of its own process group (so a
//! signal reaches whatever it started), its stderr kept (the last lines explain a failed start) and logged, its exit
//! watched (a crash is noticed at once), and a bounded close: after stdin reaches EOF it gets [`EOF_GRACE`] to
//! exit, then SIGTERM and [`TERM_GRACE`], then SIGKILL; what is left of its group is killed either way. The group
//! is also registered with `shell::process`, so tinycode's exit and panic kill it.
//!
//! Owns the process and its signals. The MCP conversation over its pipes belongs to `server`.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use crate::shell::environment::Environment;
use crate::shell::process::{Group, signal_group, track};

/// Time a server gets to exit after its stdin closes.
pub const EOF_GRACE: Duration = Duration::from_millis(800);
/// Time it gets after SIGTERM.
pub const TERM_GRACE: Duration = Duration::from_millis(800);
/// Time allowed for the kernel to deliver SIGKILL and the exit to be reaped.
pub const KILL_GRACE: Duration = Duration::from_millis(300);
/// Lines of stderr kept for error messages.
const STDERR_LINES: usize = 20;

/// A running server process.
pub struct Process {
    pub pid: i32,
    group: Arc<Group>,
    /// `Some(description)` once the process has exited.
    exit: watch::Receiver<Option<String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Where a session's stdio servers start and with which environment: the session's command environment (the
/// agent's own with provider keys and other secret-looking variables removed, as for every command; the user's
/// `[shell]` policy can keep more), then the server's configured `env` on top (a server legitimately needs its
/// own keys, and the user or the editor named them).
#[derive(Debug, Clone)]
pub struct Launch {
    pub cwd: PathBuf,
    pub environment: Arc<Environment>,
}

impl Launch {
    fn apply(&self, command: &mut Command, env: &[(String, String)]) {
        self.environment.apply(command);
        command.envs(env.iter().map(|(name, value)| (name, value)));
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by {}", crate::shell::process::signal_name(signal)),
        (None, None) => "exited".into(),
    }
}

impl Process {
    /// Start `command args` in `cwd`; returns the process and its stdout (to read) and stdin (to write).
    pub fn spawn(
        server: &str,
        command: &str,
        args: &[String],
        env: &[(String, String)],
        launch: &Launch,
    ) -> std::io::Result<(Process, ChildStdout, ChildStdin)> {
        let mut builder = Command::new(command);
        builder
            .args(args)
            .current_dir(&launch.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        launch.apply(&mut builder, env);
        let mut child = builder.spawn()?;
        let pid = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .ok_or_else(|| std::io::Error::other("the server exited before it could be tracked"))?;
        let group = Arc::new(track(pid));
        let (stdout, stdin) = match (child.stdout.take(), child.stdin.take()) {
            (Some(stdout), Some(stdin)) => (stdout, stdin),
            _ => return Err(std::io::Error::other("the server's pipes could not be opened")),
        };
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(pipe) = child.stderr.take() {
            let (kept, name) = (stderr.clone(), server.to_string());
            tokio::spawn(async move {
                let mut lines = BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(server = %name, "{line}");
                    let mut kept = lock(&kept);
                    if kept.len() == STDERR_LINES {
                        kept.pop_front();
                    }
                    kept.push_back(line);
                }
            });
        }
        let (exit_tx, exit) = watch::channel(None);
        // Weak: dropping the `Process` must still drop (and so kill) the group while the server runs.
        let leader = Arc::downgrade(&group);
        tokio::spawn(async move {
            let status = child.wait().await;
            if let Some(group) = leader.upgrade() {
                // Its pid may name another process from now on: the group's tree is no longer walked.
                group.mark_reaped();
            }
            let described = match status {
                Ok(status) => describe(status),
                Err(e) => format!("could not be watched: {e}"),
            };
            exit_tx.send_replace(Some(described));
        });
        Ok((Process { pid, group, exit, stderr }, stdout, stdin))
    }

    /// How it exited, once it has.
    pub fn exited(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    /// Wait until it exits (returns how).
    pub async fn wait(&self) -> String {
        let mut exit = self.exit.clone();
        loop {
            if let Some(described) = exit.borrow_and_update().clone() {
                return described;
            }
            if exit.changed().await.is_err() {
                return "exited".into();
            }
        }
    }

    async fn exits_within(&self, grace: Duration) -> bool {
        tokio::time::timeout(grace, self.wait()).await.is_ok()
    }

    /// The last lines it wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        lock(&self.stderr).iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Finish a server whose stdin has just been closed: wait for it, then SIGTERM, then SIGKILL, all within
    /// about two seconds; then kill whatever is left of its group and wait (at most [`KILL_GRACE`]) until it is
    /// gone. Returns how the leader ended.
    pub async fn finish(&self) -> String {
        if !self.exits_within(EOF_GRACE).await {
            signal_group(self.group.pgid, libc::SIGTERM);
            if !self.exits_within(TERM_GRACE).await {
                signal_group(self.group.pgid, libc::SIGKILL);
                self.exits_within(KILL_GRACE).await;
            }
        }
        self.group.kill();
        // Closed means gone: the group's other processes (its children) may still be on their way out.
        if !self.group.gone(KILL_GRACE).await {
            tracing::warn!(pid = self.pid, "processes of an MCP server's group outlived SIGKILL");
        }
        self.exited().unwrap_or_else(|| "did not exit".into())
    }
}
