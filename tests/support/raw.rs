//! Raw JSON-RPC lines to an in-process agent over the real stdio transport (`tinycode::acp::stdio::Transport`):
//! for the frames no SDK client would send (invalid UTF-8, broken JSON, mistyped params, over-long lines).

use std::path::PathBuf;

use agent_client_protocol::Error;
use serde_json::{Value, json};
use tinycode::session::Manager;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::client::{PATIENCE, sources};
use super::fake_model::{FakeModel, Reply};

/// JSON-RPC lines over any pair of byte streams (an in-process agent's pipes, a child's stdin and stdout).
pub struct Raw {
    write: Box<dyn AsyncWrite + Unpin + Send>,
    lines: tokio::io::Lines<BufReader<Box<dyn AsyncRead + Unpin + Send>>>,
}

impl Raw {
    pub fn over(
        write: impl AsyncWrite + Unpin + Send + 'static,
        read: impl AsyncRead + Unpin + Send + 'static,
    ) -> Raw {
        let read: Box<dyn AsyncRead + Unpin + Send> = Box::new(read);
        Raw { write: Box::new(write), lines: BufReader::new(read).lines() }
    }

    /// Send `bytes` and a newline.
    pub async fn send(&mut self, bytes: &[u8]) {
        self.write.write_all(bytes).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
        self.write.flush().await.unwrap();
    }

    pub async fn send_json(&mut self, frame: Value) {
        self.send(frame.to_string().as_bytes()).await;
    }

    /// The next line from the agent, which must be one JSON-RPC 2.0 object.
    pub async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("the agent did not answer")
            .unwrap()
            .expect("the agent closed its output");
        let frame: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(frame["jsonrpc"], "2.0", "{line}");
        frame
    }

    /// The next frame that is not a notification (an answer, or a request of the agent's).
    pub async fn recv_answer(&mut self) -> Value {
        loop {
            let frame = self.recv().await;
            if frame.get("id").is_some() {
                return frame;
            }
        }
    }

    /// Send a request and wait for its answer, skipping notifications.
    pub async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send_json(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let answer = self.recv_answer().await;
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// Close the agent's stdin.
    pub async fn shutdown(&mut self) {
        self.write.shutdown().await.unwrap();
    }
}

/// An in-process agent (the real transport and session manager) spoken to in raw lines.
pub struct RawAgent {
    /// Keeps the temporary directories alive.
    _root: tempfile::TempDir,
    pub cwd: PathBuf,
    pub model: FakeModel,
    raw: Raw,
    agent: tokio::task::JoinHandle<Result<(), Error>>,
}

impl std::ops::Deref for RawAgent {
    type Target = Raw;
    fn deref(&self) -> &Raw {
        &self.raw
    }
}

impl std::ops::DerefMut for RawAgent {
    fn deref_mut(&mut self) -> &mut Raw {
        &mut self.raw
    }
}

impl RawAgent {
    pub async fn start(script: Vec<Reply>) -> RawAgent {
        Self::with_pipe(script, 1 << 20).await
    }

    /// An agent whose pipes hold at most `capacity` bytes, so its writes wait for the reader.
    pub async fn with_pipe(script: Vec<Reply>, capacity: usize) -> RawAgent {
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("work");
        let config_home = root.path().join("config");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(config_home.join("tinycode")).unwrap();
        std::fs::write(config_home.join("tinycode/config.toml"), "[retry]\nmax_retries = 0\n").unwrap();
        let model = FakeModel::start(script).await;
        let manager = Manager::new(sources(&model.base_url, &root.path().join("data"), &config_home));
        let (agent_io, client_io) = tokio::io::duplex(capacity);
        let (agent_read, agent_write) = tokio::io::split(agent_io);
        let (client_read, client_write) = tokio::io::split(client_io);
        let transport = tinycode::acp::stdio::Transport::new(agent_write.compat_write(), agent_read.compat());
        let agent = tokio::spawn(tinycode::acp::serve_with(transport, manager));
        RawAgent { _root: root, cwd, model, raw: Raw::over(client_write, client_read), agent }
    }

    /// Close stdin and return how the agent's serve loop ended.
    pub async fn close(mut self) -> Result<(), Error> {
        self.raw.shutdown().await;
        // Read what the agent still writes until it closes its output, as an editor does: dropping the reader
        // first would fail a late notification with a broken pipe.
        while let Ok(Ok(Some(_))) = tokio::time::timeout(PATIENCE, self.raw.lines.next_line()).await {}
        drop(self.raw);
        tokio::time::timeout(PATIENCE, self.agent).await.expect("the agent did not stop at EOF").unwrap()
    }
}
