//! A stdio MCP server's process: found and given its environment by the session's launcher (`shell::launch`),
//! started in the session directory the way commands run (`shell::process::spawn_server`: under the supervisor,
//! so its whole tree stays tracked, `setsid` and double-forked processes included), its stderr kept (the last lines
//! explain a failed start) and logged, its exit watched (a crash is noticed at once), and a bounded close: after
//! stdin reaches EOF it gets [`EOF_GRACE`] to exit, then SIGTERM and [`TERM_GRACE`], then its whole tree is killed;
//! what is left is killed either way. The group is registered with `shell::process`, so tinycode's exit and panic
//! kill it.
//!
//! Owns the process and its signals. The MCP conversation over its pipes belongs to `server`.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

use crate::shell::launch::{Launcher, Purpose};
use crate::shell::process::{Group, spawn_server};

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

/// Where a session's stdio servers start and what starts them: the session's launcher, whose command environment
/// (the agent's own with provider keys and other secret-looking variables removed, as for every command; the
/// user's `[shell]` policy can keep more) each server gets with its configured `env` on top (a server
/// legitimately needs its own keys, and the user or the editor named them).
#[derive(Clone)]
pub struct Launch {
    pub cwd: PathBuf,
    pub launcher: Arc<Launcher>,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch").field("cwd", &self.cwd).finish_non_exhaustive()
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
        let ready = launch
            .launcher
            .prepare(Purpose::McpServer, command, &launch.cwd)
            .map_err(std::io::Error::other)?;
        let environment = ready.environment.with(env.iter().map(|(name, value)| (name, value)));
        let (mut child, group) = spawn_server(&ready.program, args, &launch.cwd, &environment)?;
        let pid = group.pgid;
        let group = Arc::new(group);
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

    /// Finish a server whose stdin has just been closed: wait for it, then SIGTERM, then kill its tree, all within
    /// about two seconds; then kill whatever is left of its group and wait (at most [`KILL_GRACE`]) until it is
    /// gone. Returns how the leader ended.
    pub async fn finish(&self) -> String {
        if !self.exits_within(EOF_GRACE).await {
            self.group.signal(libc::SIGTERM);
            if !self.exits_within(TERM_GRACE).await {
                // The whole tree, not just the group: a supervisor killed first could not clear what escaped it.
                self.group.kill();
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
