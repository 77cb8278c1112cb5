//! One running language server: the process (its own process group, supervised like commands, with the environment
//! the launcher gave it), one
//! writer task so frames never interleave, one reader task that resolves our requests, answers every request
//! of the server (configuration, progress tokens, capability registration, workspace folders; unknown methods
//! get "method not found"), and keeps the latest `publishDiagnostics` per file. Documents are synced whole:
//! `didOpen` the first time, `didChange` with the next version after that, then `didSave`.
//!
//! Owns the protocol conversation with one server. Must not decide which server runs or what the model sees.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lsp_types::{DiagnosticSeverity, NumberOrString, PublishDiagnosticsParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use super::framing;
use super::servers::{language_id, path_of, uri_of};
use crate::shell::launch::Ready;
use crate::shell::process::{self, Group};
use crate::workspace::diagnostics::{Diagnostic, Severity};

/// How long a polite `shutdown` request, and then the exit after `exit`, may take before the group is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// Bytes of the server's stderr kept (the end), to say why it stopped.
const STDERR_TAIL: usize = 4 * 1024;
/// How long the end of stderr is awaited once the server exited.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The latest diagnostics a server published for one file.
#[derive(Debug, Clone)]
struct Published {
    /// The client-wide publish counter when it arrived.
    seq: u64,
    diagnostics: Vec<Diagnostic>,
}

/// What the reader task and the client share.
struct Shared {
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    pending: Mutex<HashMap<i64, oneshot::Sender<Result<Value, String>>>>,
    published: Mutex<HashMap<PathBuf, Published>>,
    /// Bumped on every publish and when the server goes away.
    changes: watch::Sender<u64>,
    /// Why the server is gone, once it is.
    gone: Mutex<Option<String>>,
    stderr: Mutex<String>,
    /// The workspace folder, for `workspace/workspaceFolders`.
    root_uri: String,
    root_name: String,
}

impl Shared {
    fn send(&self, message: &Value) -> bool {
        self.outgoing.send(framing::encode(message)).is_ok()
    }

    fn mark_gone(&self, why: String) {
        lock(&self.gone).get_or_insert(why);
        for (_, waiter) in lock(&self.pending).drain() {
            let _ = waiter.send(Err("the server stopped".into()));
        }
        self.changes.send_modify(|n| *n += 1);
    }

    /// The answer to a request of the server.
    fn answer(&self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        match method {
            "workspace/configuration" => {
                let items = params.get("items").and_then(Value::as_array).map_or(0, Vec::len);
                Ok(Value::Array(vec![Value::Null; items]))
            }
            "workspace/workspaceFolders" => Ok(json!([{"uri": self.root_uri, "name": self.root_name}])),
            "workspace/applyEdit" => {
                Ok(json!({"applied": false, "failureReason": "this client does not apply server edits"}))
            }
            "window/workDoneProgress/create"
            | "client/registerCapability"
            | "client/unregisterCapability"
            | "window/showMessageRequest"
            | "window/showDocument"
            | "workspace/diagnostic/refresh"
            | "workspace/semanticTokens/refresh"
            | "workspace/inlayHint/refresh"
            | "workspace/inlineValue/refresh"
            | "workspace/codeLens/refresh" => Ok(Value::Null),
            other => Err((-32601, format!("method not supported: {other}"))),
        }
    }

    fn publish(&self, params: Value) {
        let Ok(params) = serde_json::from_value::<PublishDiagnosticsParams>(params) else { return };
        let Some(path) = path_of(params.uri.as_str()) else { return };
        let diagnostics = params.diagnostics.into_iter().map(convert).collect();
        // Held while the counter moves, so a woken waiter sees the new entry.
        let mut published = lock(&self.published);
        let mut seq = 0;
        self.changes.send_modify(|n| {
            *n += 1;
            seq = *n;
        });
        published.insert(path, Published { seq, diagnostics });
    }

    fn dispatch(&self, message: Value) {
        let id = message.get("id").cloned();
        let method = message.get("method").and_then(Value::as_str).map(String::from);
        match (id, method) {
            (Some(id), Some(method)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let reply = match self.answer(&method, &params) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err((code, text)) => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}})
                    }
                };
                self.send(&reply);
            }
            (Some(id), None) => {
                let Some(waiter) = id.as_i64().and_then(|id| lock(&self.pending).remove(&id)) else { return };
                let result = match message.get("error") {
                    Some(error) => {
                        Err(error.get("message").and_then(Value::as_str).unwrap_or("error").to_string())
                    }
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = waiter.send(result);
            }
            (None, Some(method)) if method == "textDocument/publishDiagnostics" => {
                self.publish(message.get("params").cloned().unwrap_or(Value::Null));
            }
            _ => {}
        }
    }
}

fn convert(diagnostic: lsp_types::Diagnostic) -> Diagnostic {
    let severity = match diagnostic.severity {
        Some(DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(DiagnosticSeverity::INFORMATION) => Severity::Information,
        Some(DiagnosticSeverity::HINT) => Severity::Hint,
        _ => Severity::Error,
    };
    Diagnostic {
        line: diagnostic.range.start.line.saturating_add(1),
        column: diagnostic.range.start.character.saturating_add(1),
        severity,
        code: diagnostic.code.map(|c| match c {
            NumberOrString::Number(n) => n.to_string(),
            NumberOrString::String(s) => s,
        }),
        source: diagnostic.source,
        message: diagnostic.message,
    }
}

/// A running server.
pub struct Client {
    /// The program's name, for messages.
    pub name: String,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    /// Open documents and their versions.
    versions: Mutex<HashMap<PathBuf, i32>>,
    group: Arc<Group>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.group.kill();
    }
}

fn describe(status: std::io::Result<ExitStatus>) -> String {
    match status.map(process::exit_parts) {
        Ok((Some(code), _)) => format!("exited with status {code}"),
        Ok((None, Some(signal))) => format!("was killed by {}", process::signal_name(signal)),
        Ok(_) => "exited".into(),
        Err(e) => format!("could not be waited for ({e})"),
    }
}

impl Client {
    /// Start the `ready` program with `args` in `root` and wire up its pipes. The server is not initialized yet.
    pub fn spawn(ready: &Ready, args: &[String], root: &Path) -> std::io::Result<Arc<Client>> {
        let (mut child, group) = process::spawn_server(&ready.program, args, root, &ready.environment)?;
        let group = Arc::new(group);
        let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (outgoing, mut queue) = mpsc::unbounded_channel::<Vec<u8>>();
        let shared = Arc::new(Shared {
            outgoing,
            pending: Mutex::new(HashMap::new()),
            published: Mutex::new(HashMap::new()),
            changes: watch::Sender::new(0),
            gone: Mutex::new(None),
            stderr: Mutex::new(String::new()),
            root_uri: uri_of(root),
            root_name: root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        });
        if let Some(mut stdin) = stdin {
            tokio::spawn(async move {
                while let Some(frame) = queue.recv().await {
                    if stdin.write_all(&frame).await.is_err() || stdin.flush().await.is_err() {
                        return;
                    }
                }
            });
        }
        if let Some(stdout) = stdout {
            let shared = shared.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stdout);
                loop {
                    match framing::read(&mut reader).await {
                        Ok(Some(message)) => shared.dispatch(message),
                        Ok(None) => break,
                        Err(e) => {
                            shared.mark_gone(format!("sent a malformed message ({e})"));
                            break;
                        }
                    }
                }
            });
        }
        let stderr_done = stderr.map(|mut stderr| {
            let shared = shared.clone();
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    let mut tail = lock(&shared.stderr);
                    tail.push_str(&String::from_utf8_lossy(&buffer[..n]));
                    if tail.len() > STDERR_TAIL {
                        let cut = tail.ceil_char_boundary(tail.len() - STDERR_TAIL);
                        tail.drain(..cut);
                    }
                }
            })
        });
        {
            let (shared, group) = (shared.clone(), group.clone());
            tokio::spawn(async move {
                let status = group.wait(&mut child).await;
                // Its last words first (a process it left behind may hold stderr open: do not wait long).
                if let Some(done) = stderr_done {
                    let _ = tokio::time::timeout(STDERR_DRAIN, done).await;
                }
                shared.mark_gone(describe(status));
            });
        }
        let name = ready.program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Arc::new(Client {
            name,
            shared,
            next_id: AtomicI64::new(1),
            versions: Mutex::new(HashMap::new()),
            group,
        }))
    }

    /// Why the server is gone (with the end of its stderr), or `None` while it runs.
    pub fn gone(&self) -> Option<String> {
        let why = lock(&self.shared.gone).clone()?;
        let stderr = lock(&self.shared.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).map(str::trim);
        Some(match last {
            Some(line) => format!("{why}: {}", line.chars().take(200).collect::<String>()),
            None => why,
        })
    }

    /// Send a request and wait for its answer (no time limit: callers bound it).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id, tx);
        if let Some(why) = self.gone() {
            lock(&self.shared.pending).remove(&id);
            return Err(why);
        }
        self.shared.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await.map_err(|_| "the server stopped".to_string())?
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.shared.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// `initialize` and `initialized`, announcing what this client supports.
    pub async fn initialize(&self, root: &Path) -> Result<(), String> {
        let folder = json!({"uri": self.shared.root_uri, "name": self.shared.root_name});
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "tinycode", "version": env!("CARGO_PKG_VERSION")},
            "rootPath": root,
            "rootUri": self.shared.root_uri,
            "workspaceFolders": [folder],
            "capabilities": {
                "workspace": {"configuration": true, "workspaceFolders": true},
                "window": {"workDoneProgress": true},
                "textDocument": {
                    "synchronization": {"didSave": true, "dynamicRegistration": false},
                    "publishDiagnostics": {"versionSupport": true, "relatedInformation": false}
                }
            }
        });
        self.request("initialize", params).await?;
        self.notify("initialized", json!({}));
        Ok(())
    }

    /// The publish counter now: diagnostics published later are fresh.
    pub fn mark(&self) -> u64 {
        *self.shared.changes.borrow()
    }

    /// Give the server the file's new text: `didOpen` the first time, `didChange` after, then `didSave`.
    pub fn touch(&self, path: &Path, text: &str) {
        let uri = uri_of(path);
        let version = {
            let mut versions = lock(&self.versions);
            let next = versions.get(path).map(|v| v + 1);
            versions.insert(path.to_path_buf(), next.unwrap_or(0));
            next
        };
        match version {
            None => self.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": language_id(path), "version": 0, "text": text}}),
            ),
            Some(version) => self.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
            ),
        }
        self.notify("textDocument/didSave", json!({"textDocument": {"uri": uri}}));
    }

    /// Whether the server has been given `path`.
    pub fn is_open(&self, path: &Path) -> bool {
        lock(&self.versions).contains_key(path)
    }

    fn seq_of(&self, path: &Path) -> Option<u64> {
        lock(&self.shared.published).get(path).map(|p| p.seq)
    }

    /// Wait until the diagnostics of `path` differ from `seen`, or the server goes away (false).
    async fn changed(&self, path: &Path, seen: Option<u64>, changes: &mut watch::Receiver<u64>) -> bool {
        loop {
            if self.gone().is_some() {
                return false;
            }
            if self.seq_of(path) != seen {
                return true;
            }
            if changes.changed().await.is_err() {
                return false;
            }
        }
    }

    /// Wait until diagnostics for `path` newer than `mark` arrive and then none for `settle`, or the server goes
    /// away. Unbounded otherwise: callers put a time limit on it. Returns whether fresh diagnostics arrived.
    pub async fn settle(&self, path: &Path, mark: u64, settle: Duration) -> bool {
        let mut changes = self.shared.changes.subscribe();
        loop {
            let seen = self.seq_of(path);
            if seen.is_some_and(|seq| seq > mark) {
                break;
            }
            if !self.changed(path, seen, &mut changes).await {
                return false;
            }
        }
        loop {
            let seen = self.seq_of(path);
            match tokio::time::timeout(settle, self.changed(path, seen, &mut changes)).await {
                Ok(true) => continue,
                Ok(false) | Err(_) => return true,
            }
        }
    }

    /// The latest diagnostics of `path`, if the server published any.
    pub fn diagnostics(&self, path: &Path) -> Option<Vec<Diagnostic>> {
        lock(&self.shared.published).get(path).map(|p| p.diagnostics.clone())
    }

    /// Every file with published diagnostics, sorted by path.
    pub fn all(&self) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        let mut all: Vec<(PathBuf, Vec<Diagnostic>)> =
            lock(&self.shared.published).iter().map(|(p, d)| (p.clone(), d.diagnostics.clone())).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// `shutdown` (at most 2 s), `exit`, up to 2 s to go, then the group is killed.
    pub async fn shutdown(&self) {
        if self.gone().is_none() {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.request("shutdown", Value::Null)).await;
            self.notify("exit", Value::Null);
            let mut changes = self.shared.changes.subscribe();
            let exited = async {
                while lock(&self.shared.gone).is_none() {
                    if changes.changed().await.is_err() {
                        return;
                    }
                }
            };
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, exited).await;
        }
        self.group.kill();
    }
}
