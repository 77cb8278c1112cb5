//! Sessions: one [`Session`] per ACP session (its directory, configuration, model client, permission service
//! and conversation), and the [`Manager`] that creates, finds and cancels them. Several sessions run at once;
//! within one session turns are serialised, and a new prompt cancels the running turn and queues behind it.
//!
//! Owns session lifetime and turn scheduling. Must not import `acp`: the editor is reached only through the
//! seams in [`Seams`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::{Conversation, EventSink, StopReason, Turn, TurnError};
use crate::bus::Bus;
use crate::config::{Config, ConfigError, Sources};
use crate::llm::openai::OpenAiClient;
use crate::llm::{ModelClient, UserPart};
use crate::permission::{self, Approver, Ruleset};
use crate::tool::Registry;
use crate::tool::files::{ClientFs, FileLocks, Files};
use crate::tool::shell::tasks::Tasks;
use crate::tool::shell::terminal::ClientTerminals;

/// What a session needs from the editor.
#[derive(Clone)]
pub struct Seams {
    pub sink: Arc<dyn EventSink>,
    pub approver: Option<Arc<dyn Approver>>,
    /// The editor's file system, when it offers one.
    pub fs: Option<Arc<dyn ClientFs>>,
    /// The editor's terminals, when it offers them.
    pub terminals: Option<Arc<dyn ClientTerminals>>,
}

/// One session.
pub struct Session {
    pub id: String,
    pub cwd: PathBuf,
    pub config: Config,
    /// MCP servers the client asked for, recorded as sent.
    pub mcp_servers: Vec<Value>,
    model: Arc<dyn ModelClient>,
    registry: Arc<Registry>,
    perms: Arc<permission::Service>,
    files: Arc<Files>,
    tasks: Arc<Tasks>,
    terminals: Option<Arc<dyn ClientTerminals>>,
    sink: Arc<dyn EventSink>,
    bus: Bus,
    conversation: tokio::sync::Mutex<Conversation>,
    /// The running (or queued) turn: its number and cancel token.
    active: Mutex<Option<(u64, CancellationToken)>>,
    turns: AtomicU64,
    closed: CancellationToken,
}

impl Session {
    /// Run one prompt turn. A turn already running is cancelled first; this one starts when it has ended.
    pub async fn prompt(&self, input: Vec<UserPart>) -> Result<StopReason, TurnError> {
        let cancel = self.closed.child_token();
        let number = self.turns.fetch_add(1, Ordering::Relaxed);
        if let Some((_, previous)) = self.lock_active().replace((number, cancel.clone())) {
            previous.cancel();
        }
        let mut conversation = self.conversation.lock().await;
        if cancel.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        let turn = Turn {
            session_id: &self.id,
            files: self.files.clone(),
            tasks: self.tasks.clone(),
            terminals: self.terminals.clone(),
            cwd: &self.cwd,
            config: &self.config,
            model: self.model.as_ref(),
            registry: &self.registry,
            sink: self.sink.clone(),
            perms: Some(self.perms.clone()),
            bus: &self.bus,
            cancel: cancel.clone(),
        };
        let result = turn.run(&mut conversation, input).await;
        debug_assert_eq!(conversation.history.check(), Ok(()));
        let mut active = self.lock_active();
        if active.as_ref().is_some_and(|(n, _)| *n == number) {
            *active = None;
        }
        result
    }

    /// Cancel the running turn, if any.
    pub fn cancel(&self) {
        if let Some((_, token)) = self.lock_active().as_ref() {
            token.cancel();
        }
    }

    /// Cancel everything, stop the session's background tasks, and refuse further work.
    pub fn close(&self) {
        self.closed.cancel();
        self.tasks.stop_all();
    }

    fn lock_active(&self) -> std::sync::MutexGuard<'_, Option<(u64, CancellationToken)>> {
        match self.active.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// A copy of the conversation history (for tests and diagnostics).
    pub async fn history(&self) -> crate::agent::history::History {
        self.conversation.lock().await.history.clone()
    }
}

/// All sessions of one process.
pub struct Manager {
    sources: Sources,
    registry: Arc<Registry>,
    bus: Bus,
    locks: Arc<FileLocks>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Manager {
    pub fn new(sources: Sources) -> Self {
        Self::with_registry(sources, Arc::new(Registry::builtins()))
    }

    /// A manager whose sessions use `registry` (tests and embedders add their own tools).
    pub fn with_registry(sources: Sources, registry: Arc<Registry>) -> Self {
        Self {
            sources,
            registry,
            bus: Bus::new(),
            locks: Arc::new(FileLocks::default()),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        match self.sessions.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Create a session rooted at the absolute directory `cwd`.
    /// `seams` builds the editor seams for the new session's id.
    pub fn create(
        &self,
        cwd: &Path,
        mcp_servers: Vec<Value>,
        seams: impl FnOnce(&str) -> Seams,
    ) -> Result<Arc<Session>, ConfigError> {
        let config = Config::load(&self.sources, cwd)?;
        let id = format!("sess_{}", uuid::Uuid::new_v4().simple());
        let seams = seams(&id);
        let tasks = Arc::new(Tasks::new(config.data_dir.join("tasks").join(&id)));
        let terminals = seams.terminals.clone().filter(|_| config.client_terminals);
        let files = Arc::new(Files::new(
            vec![cwd.to_path_buf()],
            seams.fs,
            self.locks.clone(),
            config.formatters.clone(),
        ));
        let session = Arc::new(Session {
            id: id.clone(),
            cwd: cwd.to_path_buf(),
            model: Arc::new(OpenAiClient::new(&config)),
            config,
            mcp_servers,
            registry: self.registry.clone(),
            perms: Arc::new(permission::Service::new(Ruleset::build_defaults(), seams.approver)),
            files,
            tasks,
            terminals,
            sink: seams.sink,
            bus: self.bus.clone(),
            conversation: tokio::sync::Mutex::new(Conversation::default()),
            active: Mutex::new(None),
            turns: AtomicU64::new(0),
            closed: CancellationToken::new(),
        });
        self.lock().insert(id, session.clone());
        Ok(session)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// Cancel every running turn and close every session (the client went away).
    pub fn close_all(&self) {
        for session in self.lock().drain().map(|(_, s)| s) {
            session.close();
        }
    }
}
