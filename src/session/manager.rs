//! The sessions of one process: creating them, loading stored ones (with the events that redraw them), resuming,
//! listing, closing and deleting. Opens the store in the background at start-up and keeps the providers' model
//! lists (`models`), so `session/new` never waits on the disk or the network. Runs the scheduler of its
//! sessions' jobs while it serves ([`Manager::run_schedule`]): the stored jobs of a project are scheduled when an
//! editor first opens a session there, so a process fires only the jobs of the projects it serves.
//!
//! Owns the live-session table, the store handle, the scheduler and the projects it serves.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

use super::models::Catalogue;
use super::prepared::Prepared;
use super::settings::Settings;
use super::{Seams, Session, lock};
use crate::agent::journal;
use crate::agent::{AgentEvent, Conversation};
use crate::bus::Bus;
use crate::config::trust::Trust;
use crate::config::{Config, ConfigError, Loaded, Sources};
use crate::control::Control;
use crate::llm::detect::Detector;
use crate::llm::router::Router;
use crate::permission;
use crate::permission::remembered::Remembered;
use crate::schedule::{Clock, Scheduler, Zone};
use crate::shell::environment::Environment;
use crate::shell::launch::Launcher;
use crate::shell::tasks::Tasks;
use crate::store::sessions::{Page, SessionRow};
use crate::store::{Store, StoreError};
use crate::tool::Registry;
use crate::workspace::changes::Recorder;
use crate::workspace::files::{FileLocks, Files};
use crate::workspace::ignore_rules::Stack;

/// Why a session operation failed. Handled by the ACP layer, which maps each to an error code.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// -32002: no such session.
    #[error("Session not found: {0}")]
    NotFound(String),
    /// -32602: the request cannot be honoured as given.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Schedule the durable jobs kept in `store`.
async fn schedule_stored_jobs(
    stored: impl Future<Output = Result<Vec<crate::store::jobs::JobRow>, StoreError>>,
    scheduler: Arc<Scheduler>,
) {
    match stored.await {
        Ok(rows) => {
            for job in rows.into_iter().filter_map(super::jobs::from_row) {
                if let Err(e) = scheduler.add(job) {
                    tracing::warn!(error = %e, "a stored job was not scheduled");
                }
            }
        }
        Err(e) => tracing::error!(error = %e, "the scheduled jobs could not be read"),
    }
}

/// The built-in tools, with the web tools' settings from the user's own file and environment only, never a
/// project's.
fn built_in(sources: &Sources) -> Arc<Registry> {
    let web = crate::config::web::WebSettings::load(sources).unwrap_or_else(|e| {
        tracing::error!(error = %e, "web tool settings ignored");
        crate::config::web::WebSettings::default()
    });
    Arc::new(crate::builtin::registry_with(&web))
}

/// Sessions listed per page.
pub const PAGE_SIZE: usize = 50;

/// All sessions of one process.
pub struct Manager {
    sources: Sources,
    /// The tools sessions start with. The built-in set is built on a thread of its own as the manager is created
    /// (the largest part of start-up, which `initialize` does not need); the first session waits for it.
    registry: Arc<OnceLock<Arc<Registry>>>,
    bus: Bus,
    locks: Arc<FileLocks>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    store: tokio::sync::OnceCell<Result<Store, StoreError>>,
    /// The database being opened since start-up, until [`Manager::store`] takes it.
    opening: Mutex<Option<crate::store::Opening>>,
    /// A test seam: makes the store's writes fail while set.
    store_fault: Option<crate::store::Fault>,
    /// The user was told that a damaged database was moved aside (once, on the first session).
    told_sidelined: std::sync::atomic::AtomicBool,
    /// Model ids by provider, fetched from `GET /models`.
    catalogue: Arc<Catalogue>,
    /// Which projects the user trusts to configure the agent, and this process's answers.
    trust: Arc<Trust>,
    /// Put the trust question to the user (not in headless runs, which never trust a project).
    ask_trust: bool,
    /// Remembered permission rules by project.
    projects: tokio::sync::Mutex<HashMap<String, Arc<Remembered>>>,
    /// The sessions' scheduled jobs.
    scheduler: Arc<Scheduler>,
    /// The projects an editor opened a session in: only their stored jobs are scheduled here.
    served: Mutex<HashSet<String>>,
    /// What the sessions the scheduler opened without an editor do, by session.
    witnesses: Mutex<HashMap<String, Arc<super::jobs::Witness>>>,
    /// Fires when the manager shuts down (stops the scheduler).
    stop: CancellationToken,
    /// Offer scheduled jobs and fire them (not in one-shot headless runs).
    schedule: bool,
    /// Finds local model servers when nothing is configured.
    detector: Arc<Detector>,
}

impl Manager {
    pub fn new(sources: Sources) -> Self {
        let manager = Self::with_tools(sources, Arc::new(OnceLock::new()));
        let (registry, sources) = (manager.registry.clone(), manager.sources.clone());
        let build = move || {
            registry.get_or_init(|| built_in(&sources));
        };
        // At the process's priority: the first session needs them and would otherwise wait on a thread that gets
        // the CPU last (`initialize` no longer waits for anything built here). Should the thread not start, the
        // first session builds the tools itself.
        crate::warm::spawn("tinycode-tools", build, || {});
        manager
    }

    /// A manager whose sessions use `registry` (tests and embedders add their own tools).
    pub fn with_registry(sources: Sources, registry: Arc<Registry>) -> Self {
        Self::with_tools(sources, Arc::new(OnceLock::from(registry)))
    }

    fn with_tools(sources: Sources, registry: Arc<OnceLock<Arc<Registry>>>) -> Self {
        let targets = crate::llm::detect::default_targets(sources.var("OLLAMA_HOST"));
        Self {
            detector: Arc::new(Detector::new(targets)),
            trust: Arc::new(Trust::new(&sources)),
            ask_trust: true,
            sources,
            registry,
            bus: Bus::new(),
            locks: Arc::new(FileLocks::default()),
            sessions: Mutex::new(HashMap::new()),
            store: tokio::sync::OnceCell::new(),
            opening: Mutex::new(None),
            store_fault: None,
            told_sidelined: std::sync::atomic::AtomicBool::new(false),
            catalogue: Arc::new(Catalogue::default()),
            projects: tokio::sync::Mutex::new(HashMap::new()),
            scheduler: Arc::new(Scheduler::new(Clock::System, Zone::Local)),
            served: Mutex::new(HashSet::new()),
            witnesses: Mutex::new(HashMap::new()),
            stop: CancellationToken::new(),
            schedule: true,
        }
    }

    /// Offer no scheduled jobs and fire none (a one-shot run ends before any would fire).
    pub fn without_schedule(mut self) -> Self {
        self.schedule = false;
        self
    }

    /// Read the time for scheduled jobs from `clock`, in `zone` (tests start it at a chosen moment).
    pub fn with_clock(mut self, clock: Clock, zone: Zone) -> Self {
        self.scheduler = Arc::new(Scheduler::new(clock, zone));
        self
    }

    /// Make the store's writes fail while `fault` is set (tests: a read-only database that recovers).
    pub fn with_store_fault(mut self, fault: crate::store::Fault) -> Self {
        self.store_fault = Some(fault);
        self
    }

    /// How the store waits for locks (`TINYCODE_DB_BUSY_TIMEOUT_MS`) and retries, with the test seam.
    pub fn store_tuning(&self) -> crate::store::Tuning {
        let mut tuning = crate::store::Tuning::from_var(self.sources.var(crate::store::BUSY_TIMEOUT_VAR));
        tuning.fault = self.store_fault.clone();
        tuning
    }

    /// Never ask the user to trust a project: its settings that need trust stay ignored.
    pub fn without_trust_questions(mut self) -> Self {
        self.ask_trust = false;
        self
    }

    /// Probe these loopback targets (instead of the default ports) when nothing is configured.
    pub fn with_detector(mut self, detector: Detector) -> Self {
        self.detector = Arc::new(detector);
        self
    }

    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// Where this manager's configuration comes from.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// The configuration for a session rooted at `cwd`, with local servers found by probing when nothing is
    /// configured (the probes are cached).
    pub async fn load_config(&self, cwd: &Path) -> Result<Loaded, SessionError> {
        let mut loaded = Config::load(&self.sources, cwd, &self.trust)?;
        if loaded.config.providers.is_empty() {
            let found = self.detector.detect().await;
            loaded.config.adopt_detected(found.into_iter().map(|f| f.provider).collect());
        }
        Ok(loaded)
    }

    /// Reload every live session's configuration (after the user signed in).
    pub async fn reload_all(&self) {
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
        for session in sessions {
            match self.load_config(&session.cwd).await {
                Ok(loaded) => session.reload(loaded),
                Err(e) => {
                    tracing::warn!(session = %session.id, error = %e, "the configuration could not be reloaded")
                }
            }
        }
    }

    /// The database file: `TINYCODE_DATA_DIR/tinycode.db` (default `$XDG_DATA_HOME/tinycode`).
    pub fn database_path(&self) -> std::path::PathBuf {
        crate::store::database_path(&self.sources.data_dir())
    }

    /// The store: the one being opened since start-up ([`Manager::with_opening`]), else opened on first use (on
    /// a blocking thread).
    pub async fn store(&self) -> Result<Store, StoreError> {
        let path = self.database_path();
        let tuning = self.store_tuning();
        self.store
            .get_or_init(|| {
                let opening = lock(&self.opening).take();
                async move {
                    let store = match opening {
                        Some(opening) => opening.store().await,
                        None => tokio::task::spawn_blocking(move || Store::open_with(&path, tuning))
                            .await
                            .unwrap_or(Err(StoreError::Closed)),
                    }?;
                    Ok(store)
                }
            })
            .await
            .clone()
    }

    /// An editor opened a session in `project`: from now on this process fires the project's stored jobs (read
    /// before the session can make one, so none is both read here and added by it).
    async fn serve(&self, project: &str) {
        if !self.schedule || !lock(&self.served).insert(project.to_string()) {
            return;
        }
        if let Ok(store) = self.store().await {
            schedule_stored_jobs(store.jobs_of(project), self.scheduler.clone()).await;
        }
    }

    /// The witness of a session the scheduler opened without an editor.
    pub(super) fn witness(&self, id: &str) -> Option<Arc<super::jobs::Witness>> {
        lock(&self.witnesses).get(id).cloned()
    }

    /// Use the database being opened by `opening` (started before the manager, at [`Self::database_path`]).
    pub fn with_opening(self, opening: crate::store::Opening) -> Self {
        *lock(&self.opening) = Some(opening);
        self
    }

    /// The tools new sessions start with (waiting for the built-in set while it is being built).
    fn registry(&self) -> &Arc<Registry> {
        self.registry.get_or_init(|| built_in(&self.sources))
    }

    fn live(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// The project's remembered permission rules, shared by its sessions; read from the store the first time.
    async fn remembered(&self, project: &str) -> Arc<Remembered> {
        let mut projects = self.projects.lock().await;
        if let Some(known) = projects.get(project) {
            return known.clone();
        }
        let remembered = match self.store().await {
            Ok(store) => Remembered::load(project, store).await,
            Err(_) => Remembered::new(project),
        };
        let remembered = Arc::new(remembered);
        projects.insert(project.to_string(), remembered.clone());
        remembered
    }

    /// Build a live session around stored or fresh state.
    async fn assemble(
        &self,
        row: &SessionRow,
        loaded: Loaded,
        conversation: Conversation,
        declared: Vec<crate::mcp::Declared>,
        seams: Seams,
    ) -> Arc<Session> {
        let Loaded { config, untrusted } = loaded;
        let cwd = Path::new(&row.cwd).to_path_buf();
        let store = self.store().await;
        let told = self.store_notice(&store);
        let store = store.map_err(|e| tracing::error!(error = %e, "sessions will not be saved")).ok();
        // Listing and reading agent files, skills and commands is blocking file I/O: never on the async runtime
        // (one blocking thread for all of it). The project's remembered rules are read from the store meanwhile.
        let (home, root) = (self.sources.user_config_home.clone(), cwd.clone());
        let places = super::extensions::places(&self.sources, &cwd);
        let (global, configured) =
            (super::extensions::global_instructions(&self.sources), config.instructions.clone());
        let files = tokio::task::spawn_blocking(move || {
            let refused = super::extensions::refused_instructions(&root, global.as_deref(), &configured);
            (
                super::agents::discover(home.as_deref(), &root),
                crate::extensions::Catalog::discover(&places),
                refused,
            )
        });
        let (files, rem) = tokio::join!(files, self.remembered(&row.cwd));
        let (agent_files, catalog, refused) = match files {
            Ok((agents, catalog, refused)) => (Arc::new(agents), Some(catalog), refused),
            Err(e) => {
                tracing::warn!(error = %e, "the agent files, skills and commands could not be read");
                (Arc::default(), None, Vec::new())
            }
        };
        let settings = Settings::of_row(row, &config);
        let perms = permission::Service::new(
            settings.mode.id(),
            rem,
            config.permission_rules.clone(),
            seams.approver.clone(),
        );
        let link = Arc::new(std::sync::OnceLock::new());
        let mcp = crate::mcp::Servers::new(cwd.clone(), super::extensions::reporter(link.clone()));
        mcp.set_elicitor(seams.elicitor.clone());
        mcp.hold();
        // One environment for every command the session runs: bash, tasks, formatters and MCP servers; one
        // launcher for the programs it starts on its own.
        let environment = Arc::new(Environment::new(&config.env_policy));
        let launcher = Arc::new(Launcher::new(&seams.roots(&cwd), environment.clone()));
        launcher.set_trusted(untrusted.is_none() && self.trust.knows(&crate::config::trust::canonical(&cwd)));
        let changes = Arc::new(Recorder::default());
        let closed = CancellationToken::new();
        mcp.set_launcher(launcher.clone());
        let session = Arc::new(Session {
            id: row.id.clone(),
            mcp,
            declared: Mutex::new(declared),
            catalog: Arc::new(std::sync::RwLock::new(crate::extensions::Catalog::default())),
            advertised: Mutex::new(None),
            announced: std::sync::atomic::AtomicBool::new(false),
            pending_notices: Mutex::new(Vec::new()),
            reported: Mutex::new(std::collections::HashSet::new()),
            told: Default::default(),
            files: Arc::new({
                let files = Files::new(
                    seams.roots(&cwd),
                    seams.fs.clone(),
                    self.locks.clone(),
                    config.formatters.clone(),
                )
                .with_launcher(launcher.clone())
                .with_diff_limit(config.max_diff_bytes)
                .with_changes(changes.clone());
                // Searches honour the user's global git excludes; the defaults are anchored at the project.
                files.set_ignores(Stack::new(&cwd, config.git_excludes.as_deref()));
                files
            }),
            tasks: Arc::new(
                Tasks::new(config.data_dir.join("tasks").join(&row.id)).with_environment(environment.clone()),
            ),
            lsp: Arc::new(crate::lsp::Service::new(config.lsp.clone(), launcher.clone(), &cwd)),
            launcher,
            terminals: seams.terminals.clone().filter(|_| config.client_terminals),
            model: Mutex::new(Arc::new(Router::new(&config))),
            models: Mutex::new(self.catalogue.for_config(&config, &self.bus)),
            models_swapped: Arc::new(tokio::sync::Notify::new()),
            catalogue: self.catalogue.clone(),
            cwd: cwd.clone(),
            created_at: row.created_at,
            registry: Arc::new(self.registry().fork()),
            perms: Arc::new(perms),
            sink: Mutex::new(seams.sink),
            settings_sink: Mutex::new(seams.settings.clone()),
            control: Arc::new(Control::default()),
            bus: self.bus.clone(),
            store,
            settings: Mutex::new(settings),
            title: Mutex::new(row.title.clone()),
            conversation: tokio::sync::Mutex::new(conversation),
            queue: super::queue::Queue::new(closed.clone()),
            changes,
            headless: std::sync::atomic::AtomicBool::new(false),
            closed,
            config: Mutex::new(Arc::new(config)),
            sources: self.sources.clone(),
            trust: self.trust.clone(),
            untrusted: Mutex::new(untrusted),
            trust_asker: Mutex::new(seams.trust.clone().filter(|_| self.ask_trust)),
            depth: 0,
            ancestors: Vec::new(),
            instructions: None,
            agent_files,
            children: Arc::default(),
            subagents: std::sync::OnceLock::new(),
        });
        session.enable_subagents();
        let _ = link.set(Arc::downgrade(&session));
        session.tell_when_held();
        session.apply_mcp(&session.config());
        session.report_refused(&session.config().refused_files);
        session.report_refused(&refused);
        session.report_refused(&session.agent_files.refused);
        if let Some(found) = catalog {
            session.use_catalog(found);
        } else {
            session.rescan_extensions().await;
        }
        lock(&self.sessions).insert(row.id.clone(), session.clone());
        session.control.set_asker(seams.asker.clone());
        if self.schedule && session.config().cron {
            session.control.set_jobs(Some(Arc::new(super::jobs::SessionJobs {
                session_id: row.id.clone(),
                project: row.cwd.clone(),
                scheduler: self.scheduler.clone(),
                store: session.store.clone(),
                durable: session.config().cron_durable,
            })));
        }
        session.watch_models();
        session.watch_todos();
        if let Some((title, description)) = told {
            session.notice(title, description);
        }
        session
    }

    /// What a new session must tell the user about the database: that it could not be opened (every time), or
    /// that a damaged one was moved aside (on the first session only).
    fn store_notice(&self, store: &Result<Store, StoreError>) -> Option<(String, String)> {
        let store = match store {
            Ok(store) => store,
            Err(e) => {
                return Some((
                    "Sessions are not being saved".into(),
                    format!("{e}. This conversation lives only in this process."),
                ));
            }
        };
        let sidelined = store.health().sidelined?;
        if self.told_sidelined.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        Some((
            "The session database was damaged".into(),
            format!(
                "{} could not be read ({}). It was moved, unchanged, to {} so you can recover it; tinycode carries on with a fresh database.",
                sidelined.damaged.display(),
                sidelined.reason,
                sidelined.moved_to.display()
            ),
        ))
    }

    /// Create a session rooted at the absolute directory `cwd`. `seams` builds the editor seams for its id.
    pub async fn create(
        &self,
        cwd: &Path,
        mcp_servers: Vec<crate::mcp::Declared>,
        seams: impl FnOnce(&str) -> Seams,
    ) -> Result<Arc<Session>, SessionError> {
        let prepared = Prepared::new(cwd, self.load_config(cwd).await?);
        Ok(self.create_prepared(prepared, mcp_servers, seams).await)
    }

    /// Create the session `prepared` decided on (its id, directory and configuration).
    pub async fn create_prepared(
        &self,
        prepared: Prepared,
        mcp_servers: Vec<crate::mcp::Declared>,
        seams: impl FnOnce(&str) -> Seams,
    ) -> Arc<Session> {
        let row = prepared.row(crate::clock::now_millis());
        let id = row.id.clone();
        self.serve(&row.cwd).await;
        if let Ok(store) = self.store().await {
            store.create_session_later(row.clone());
        }
        self.assemble(&row, prepared.loaded, Conversation::default(), mcp_servers, seams(&id)).await
    }

    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.live(id)
    }

    /// A live session, or a subagent of one (an editor that shows subagents as sessions may cancel one).
    pub fn get_or_subagent(&self, id: &str) -> Option<Arc<Session>> {
        self.live(id).or_else(|| {
            let sessions: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
            sessions.iter().find_map(|s| s.descendant(id))
        })
    }

    /// Open a stored session (or take over a live one) for a new connection, with the MCP servers the editor
    /// declares now (`None`: keep those it had). Returns the session and, when `replay` is set, the events that
    /// redraw its conversation.
    pub async fn open(
        &self,
        id: &str,
        cwd: &Path,
        declared: Option<Vec<crate::mcp::Declared>>,
        seams: Seams,
        replay: bool,
    ) -> Result<(Arc<Session>, Vec<AgentEvent>), SessionError> {
        let (session, events) = self.open_as(id, cwd, declared, seams, replay, true).await?;
        lock(&self.witnesses).remove(id);
        // What its scheduled jobs did while no editor had it open.
        if let Some(store) = &session.store {
            match store.take_job_reports(id).await {
                Ok(reports) => {
                    for report in reports {
                        let (title, text) = super::jobs::report_notice(&report);
                        session.notice(title, text);
                    }
                }
                Err(e) => {
                    tracing::warn!(session = id, error = %e, "what its scheduled jobs did could not be read")
                }
            }
        }
        Ok((session, events))
    }

    /// [`Manager::open`]; `attended`: an editor opens it (the project is served from now on).
    async fn open_as(
        &self,
        id: &str,
        cwd: &Path,
        declared: Option<Vec<crate::mcp::Declared>>,
        seams: Seams,
        replay: bool,
        attended: bool,
    ) -> Result<(Arc<Session>, Vec<AgentEvent>), SessionError> {
        let store = self.store().await?;
        let row = store.session(id).await?.ok_or_else(|| SessionError::NotFound(id.to_string()))?;
        if Path::new(&row.cwd) != cwd {
            return Err(SessionError::Invalid(format!(
                "session {id} belongs to {}, not {}",
                row.cwd,
                cwd.display()
            )));
        }
        if attended {
            self.serve(&row.cwd).await;
        }
        let stored = store.messages(id).await?;
        let loaded = self.load_config(cwd).await?;
        let config = &loaded.config;
        let todos = store.todos(id).await?;
        // Decoding a long conversation is CPU work: keep it off the async runtime.
        let (mut events, (history, shown)) = tokio::task::spawn_blocking(move || {
            let events = if replay { journal::replay(&stored) } else { Vec::new() };
            (events, journal::rebuild(&stored))
        })
        .await
        .map_err(|e| StoreError::Sql(format!("the stored conversation could not be read: {e}")))?;
        if replay {
            if let Some(todos) = &todos {
                events.push(AgentEvent::Plan { items: todos.clone() });
            }
            // The subagents' tokens first: they ride along with the one usage update the context figures make.
            let spent = store.subagent_tokens(id).await?;
            if spent > 0 {
                events.push(AgentEvent::SubagentUsage { tokens: spent });
            }
            if let Some(used) = store.last_usage(id).await? {
                let model = row.model.clone().unwrap_or_else(|| config.model.clone());
                let size = config
                    .context_window
                    .unwrap_or_else(|| crate::llm::catalogue::for_model(config, &model).context);
                events.push(AgentEvent::Usage { used, size });
            }
        }
        if let Some(live) = self.live(id) {
            let seams = Seams { trust: seams.trust.filter(|_| self.ask_trust), ..seams };
            live.rebind(&seams);
            if let Some(declared) = declared {
                live.redeclare(declared);
            }
            return Ok((live, events));
        }
        let conversation = Conversation::restored(history, shown);
        let worktree = store.worktree(id).await?;
        let session = self.assemble(&row, loaded, conversation, declared.unwrap_or_default(), seams).await;
        if let Some(todos) = todos.and_then(|t| serde_json::from_value(t).ok()) {
            session.control.restore_todos(todos);
        }
        session.restore_worktree(worktree);
        Ok((session, events))
    }

    /// Open a stored session with no editor attached, for a scheduled job; `None` when it is gone.
    pub(super) async fn open_unattended(&self, id: &str) -> Option<Arc<Session>> {
        let store = self.store().await.ok()?;
        let row = store.session(id).await.ok()??;
        let witness = Arc::new(super::jobs::Witness::default());
        let seams = super::jobs::unattended(witness.clone());
        match self.open_as(id, Path::new(&row.cwd), None, seams, false, false).await {
            Ok((session, _)) => {
                session.headless.store(true, std::sync::atomic::Ordering::Relaxed);
                lock(&self.witnesses).insert(id.to_string(), witness);
                Some(session)
            }
            Err(e) => {
                tracing::warn!(session = id, error = %e, "a scheduled job's session could not be opened");
                None
            }
        }
    }

    /// Put away a session the scheduler opened (its durable jobs stay scheduled).
    pub(super) fn put_away(&self, id: &str) {
        let mut sessions = lock(&self.sessions);
        if sessions.get(id).is_some_and(|s| s.is_unattended())
            && let Some(session) = sessions.remove(id)
        {
            lock(&self.witnesses).remove(id);
            session.close();
        }
    }

    /// Fire the sessions' scheduled jobs (durable ones from the store included) until the manager shuts down.
    pub async fn run_schedule(&self) {
        if !self.schedule {
            return;
        }
        // The stored jobs of each project are scheduled as an editor first opens a session there.
        let scheduler = self.scheduler.clone();
        scheduler.run(self, self.stop.clone()).await;
    }

    /// One page of stored sessions, newest first.
    pub async fn list(&self, cwd: Option<&Path>, cursor: Option<String>) -> Result<Page, SessionError> {
        let store = self.store().await?;
        store.list_sessions(cwd.map(|c| c.display().to_string()), cursor, PAGE_SIZE).await.map_err(
            |e| match e {
                StoreError::Sql(message) if message == crate::store::sessions::BAD_CURSOR => {
                    SessionError::Invalid("invalid cursor".into())
                }
                other => other.into(),
            },
        )
    }

    /// Stop a session's work, close its MCP servers and forget it in memory (it stays stored).
    pub async fn close(&self, id: &str) -> Result<(), SessionError> {
        self.scheduler.forget_session(id, false);
        let live = lock(&self.sessions).remove(id);
        if let Some(session) = live {
            session.shutdown().await;
            return Ok(());
        }
        match self.store().await?.session(id).await? {
            Some(_) => Ok(()),
            None => Err(SessionError::NotFound(id.to_string())),
        }
    }

    /// Close a session and remove it (and everything it stored).
    pub async fn delete(&self, id: &str) -> Result<(), SessionError> {
        self.scheduler.forget_session(id, true);
        let live = lock(&self.sessions).remove(id);
        if let Some(session) = &live {
            session.shutdown().await;
        }
        let existed = self.store().await?.delete_session(id).await?;
        if existed || live.is_some() { Ok(()) } else { Err(SessionError::NotFound(id.to_string())) }
    }

    /// Cancel every running turn, stop every session's tasks, and make sure everything is saved.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        // Language servers first, so their polite shutdown is awaited (close would start it in the background).
        futures::future::join_all(sessions.iter().map(|s| s.stop_servers())).await;
        futures::future::join_all(sessions.iter().map(|s| s.shutdown())).await;
        // Everything saved, and the database's log folded in: the process exits without closing the database.
        if let Some(Ok(store)) = self.store.get() {
            let health = store.save_now().await;
            if health.held > 0 {
                let why = health.failure.unwrap_or_default();
                tracing::error!(
                    items = health.held,
                    "the session database never took these writes ({why}): lost"
                );
            }
            if let Err(e) = store.checkpoint().await {
                tracing::error!(error = %e, "could not finish saving");
            }
        }
    }
}
