//! The editor's terminals as the core sees them (`terminal/create`, `output`, `wait_for_exit`, `kill`,
//! `release`). Implemented by the `acp` layer; used by `bash` when the editor offers terminals and the
//! configuration asks for them.
//!
//! Owns the seam and [`Lease`], which guarantees every terminal is released.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;

/// How a terminal's command ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TerminalExit {
    pub code: Option<u32>,
    pub signal: Option<String>,
}

/// A terminal's output so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TerminalOutput {
    pub output: String,
    /// The editor dropped the beginning to stay within the byte limit.
    pub truncated: bool,
    pub exit: Option<TerminalExit>,
}

pub trait ClientTerminals: Send + Sync {
    /// Start `sh -c <command>` in `cwd`; returns the terminal id.
    fn create<'a>(
        &'a self,
        command: &'a str,
        cwd: &'a Path,
        output_limit: u64,
    ) -> BoxFuture<'a, Result<String, String>>;
    fn output<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TerminalOutput, String>>;
    fn wait_for_exit<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TerminalExit, String>>;
    fn kill<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), String>>;
    fn release<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// An editor terminal this agent created, and the promise to release it. ACP requires `terminal/release` for
/// every terminal; a cancel drops the call that owns the terminal wherever it is (often mid-`terminal/kill`),
/// so the release cannot wait for that call to finish: dropping a lease that was not released sends what is
/// still owed (the kill if the command may be running, then the release) from a task of its own.
pub struct Lease {
    terminals: Arc<dyn ClientTerminals>,
    id: String,
    /// The command is known to have ended, or a kill was sent: no kill is owed.
    stopped: bool,
    released: bool,
}

impl Lease {
    /// Create a terminal running `command`. The request runs on its own task, so a terminal the editor creates
    /// after this call was dropped is still killed and released.
    pub async fn create(
        terminals: Arc<dyn ClientTerminals>,
        command: &str,
        cwd: &Path,
        output_limit: u64,
    ) -> Result<Lease, String> {
        let (command, cwd) = (command.to_string(), cwd.to_path_buf());
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let created = terminals.create(&command, &cwd, output_limit).await;
            let lease = created.map(|id| Lease { terminals, id, stopped: false, released: false });
            // Nobody waits any more: the lease comes back and its drop cleans up.
            drop(tx.send(lease));
        });
        rx.await.map_err(|_| "the terminal request was abandoned".to_string())?
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn terminals(&self) -> &dyn ClientTerminals {
        self.terminals.as_ref()
    }

    /// The command has ended: no kill is owed.
    pub fn exited(&mut self) {
        self.stopped = true;
    }

    pub async fn kill(&mut self) -> Result<(), String> {
        self.stopped = true;
        self.terminals.kill(&self.id).await
    }

    pub async fn release(mut self) -> Result<(), String> {
        self.released = true;
        self.terminals.release(&self.id).await
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let (terminals, id, kill) = (self.terminals.clone(), std::mem::take(&mut self.id), !self.stopped);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(terminal = %id, "terminal not released: the runtime is gone");
            return;
        };
        runtime.spawn(async move {
            if kill && let Err(e) = terminals.kill(&id).await {
                tracing::debug!(terminal = %id, error = %e, "terminal/kill after the call was dropped failed");
            }
            if let Err(e) = terminals.release(&id).await {
                tracing::debug!(terminal = %id, error = %e, "terminal/release after the call was dropped failed");
            }
        });
    }
}
