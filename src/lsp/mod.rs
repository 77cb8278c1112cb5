//! Language-server diagnostics for one session (seeds 003/004): off unless the user turns a language on under
//! `[lsp]`. Servers start through the session's launcher (`shell::launch`: found outside an untrusted project, and
//! held until the project is trusted), lazily per language and project root (in the background,
//! so a slow start never holds an edit longer than the wait budget), told about every write, and waited for at
//! most `[lsp] timeout_ms` (5 s) per write, settling 150 ms after the last publish. A server that fails to
//! start or stops is turned off for the rest of the session, with one note. Closing the session shuts every
//! server down (`shutdown`, `exit`, then the process group is killed).
//!
//! Implements the `workspace::diagnostics::Checker` seam the file tools call. Owns which servers run and when.
//! Must not know the tools or format text for the model.

pub mod client;
pub mod framing;
pub mod servers;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::LspConfig;
use crate::shell::launch::{LaunchError, Launcher, Purpose, Ready};
use crate::workspace::diagnostics::{Checker, FileDiagnostics, Report, Severity};
use crate::workspace::regular;
use client::Client;
use servers::Language;

/// Quiet time after the last publish before diagnostics count as settled.
pub const SETTLE: Duration = Duration::from_millis(150);
/// The longest a server may take to answer `initialize` (rust-analyzer on a big workspace takes a while).
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(45);
/// Other files with errors listed after a write.
pub const MAX_OTHER_FILES: usize = 5;
/// Largest file the `diagnostics` tool opens in a server.
const MAX_OPEN_BYTES: u64 = 4 << 20;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A server being started or running.
#[derive(Clone)]
enum Slot {
    Starting,
    Ready(Arc<Client>),
    Failed,
}

/// The language servers of one session.
pub struct Service {
    config: Mutex<LspConfig>,
    launcher: Arc<Launcher>,
    /// The session's directory: the root of files without a project marker.
    cwd: PathBuf,
    servers: Mutex<HashMap<(&'static str, PathBuf), watch::Receiver<Slot>>>,
    /// Languages turned off for the session because their server broke.
    broken: Mutex<BTreeSet<&'static str>>,
    /// Notes not yet delivered (each is said once).
    notes: Mutex<Vec<String>>,
    closed: CancellationToken,
}

impl Service {
    pub fn new(config: LspConfig, launcher: Arc<Launcher>, cwd: &Path) -> Self {
        Self {
            config: Mutex::new(config),
            launcher,
            cwd: cwd.to_path_buf(),
            servers: Mutex::new(HashMap::new()),
            broken: Mutex::new(BTreeSet::new()),
            notes: Mutex::new(Vec::new()),
            closed: CancellationToken::new(),
        }
    }

    /// Follow a configuration change (the user trusted the project's settings).
    pub fn configure(&self, config: LspConfig) {
        *lock(&self.config) = config;
    }

    /// Whether any language is turned on.
    pub fn enabled(&self) -> bool {
        !lock(&self.config).languages.is_empty()
    }

    fn budget(&self) -> Duration {
        lock(&self.config).timeout
    }

    /// Turn `language` off for the session and say so once.
    fn disable(&self, language: &'static str, why: String) {
        if lock(&self.broken).insert(language) {
            tracing::warn!(language, %why, "language server disabled for the session");
            lock(&self.notes)
                .push(format!("{why} LSP diagnostics for {language} are off for the rest of this session."));
        }
    }

    /// The language of `path` if it is turned on and not broken. While the project is not trusted, none is: its
    /// servers wait (the launcher tells the user once).
    fn language(&self, path: &Path) -> Option<&'static Language> {
        let language = servers::language_of(path)?;
        let on = lock(&self.config).languages.contains_key(language.name);
        let usable = on && !lock(&self.broken).contains(language.name);
        (usable && !self.launcher.holds(Purpose::LanguageServer)).then_some(language)
    }

    /// The command to run for `language` in `root`: the configured one, else the first known server the launcher
    /// finds.
    fn command(&self, language: &Language, root: &Path) -> Result<(Ready, Vec<String>), String> {
        let configured = lock(&self.config).languages.get(language.name).cloned().flatten();
        let prepare = |program: &str| self.launcher.prepare(Purpose::LanguageServer, program, root);
        if let Some(command) = configured {
            let (program, args) = command.split_first().ok_or("an empty command")?;
            let ready = prepare(program)
                .map_err(|e| format!("The {} language server cannot start: {e}.", language.name))?;
            return Ok((ready, args.to_vec()));
        }
        let mut refused = None;
        for candidate in language.servers {
            let Some((program, args)) = candidate.split_first() else { continue };
            match prepare(program) {
                Ok(ready) => return Ok((ready, args.iter().map(|a| a.to_string()).collect())),
                Err(LaunchError::NotFound { .. } | LaunchError::NotFoundOutside { .. }) => {}
                Err(e) => {
                    refused.get_or_insert(e);
                }
            }
        }
        if let Some(e) = refused {
            return Err(format!("The {} language server cannot start: {e}.", language.name));
        }
        let names: Vec<&str> = language.servers.iter().filter_map(|c| c.first().copied()).collect();
        Err(format!("No {} language server ({}) was found on PATH.", language.name, names.join(", ")))
    }

    /// The slot of `language` at `root`, starting its server in the background if none is running.
    fn slot(self: &Arc<Self>, language: &'static Language, root: PathBuf) -> watch::Receiver<Slot> {
        let mut servers = lock(&self.servers);
        if let Some(slot) = servers.get(&(language.name, root.clone())) {
            return slot.clone();
        }
        let (tx, rx) = watch::channel(Slot::Starting);
        servers.insert((language.name, root.clone()), rx.clone());
        let service = self.clone();
        tokio::spawn(async move {
            let started = tokio::select! {
                started = service.start(language, &root) => started,
                () = service.closed.cancelled() => return,
            };
            match started {
                Ok(client) => {
                    if service.closed.is_cancelled() {
                        client.shutdown().await;
                        return;
                    }
                    tx.send_replace(Slot::Ready(client));
                }
                Err(why) => {
                    service.disable(language.name, why);
                    tx.send_replace(Slot::Failed);
                }
            }
        });
        rx
    }

    async fn start(&self, language: &'static Language, root: &Path) -> Result<Arc<Client>, String> {
        let (ready, args) = self.command(language, root)?;
        let name = ready.program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let client = Client::spawn(&ready, &args, root).map_err(|e| {
            format!("The {} language server `{name}` could not be started: {e}.", language.name)
        })?;
        match tokio::time::timeout(INITIALIZE_TIMEOUT, client.initialize(root)).await {
            Ok(Ok(())) => Ok(client),
            Ok(Err(e)) => {
                let why = client.gone().unwrap_or(e);
                client.shutdown().await;
                Err(format!("The {} language server `{name}` failed to start ({why}).", language.name))
            }
            Err(_) => {
                client.shutdown().await;
                Err(format!(
                    "The {} language server `{name}` did not answer `initialize` within {} s.",
                    language.name,
                    INITIALIZE_TIMEOUT.as_secs()
                ))
            }
        }
    }

    /// Wait (until `deadline`) for the server of `path`; `None` if it failed or is still starting.
    async fn ready(
        self: &Arc<Self>,
        path: &Path,
        deadline: Instant,
    ) -> Option<(&'static Language, Arc<Client>)> {
        let language = self.language(path)?;
        let root = servers::root_for(language, path, &self.cwd);
        let mut slot = self.slot(language, root);
        let settled =
            tokio::time::timeout_at(deadline, slot.wait_for(|s| !matches!(s, Slot::Starting))).await;
        match settled.ok()?.ok()?.clone() {
            Slot::Ready(client) => Some((language, client)),
            Slot::Starting | Slot::Failed => None,
        }
    }

    /// Give `path`'s new text to its server and wait for its diagnostics until `deadline`. Returns the client
    /// when it answered in time (and had not stopped), or a note.
    async fn check(
        self: &Arc<Self>,
        path: &Path,
        text: &str,
        deadline: Instant,
    ) -> Result<Arc<Client>, Option<String>> {
        let Some(language) = self.language(path) else { return Err(None) };
        let Some((_, client)) = self.ready(path, deadline).await else {
            if lock(&self.broken).contains(language.name) {
                return Err(None);
            }
            return Err(Some(format!(
                "The {} language server is still starting: diagnostics are pending (ask with the diagnostics tool later).",
                language.name
            )));
        };
        let mark = client.mark();
        client.touch(path, text);
        let fresh = tokio::time::timeout_at(deadline, client.settle(path, mark, SETTLE)).await;
        if let Some(why) = client.gone() {
            self.disable(
                language.name,
                format!("The {} language server `{}` stopped ({why}).", language.name, client.name),
            );
            return Err(None);
        }
        match fresh {
            Ok(true) => Ok(client),
            _ => Err(Some(format!(
                "`{}` did not report diagnostics for {} within {} ms: they are pending (ask with the diagnostics tool later).",
                client.name,
                path.display(),
                self.budget().as_millis()
            ))),
        }
    }

    fn take_notes(&self, report: &mut Report) {
        report.notes.extend(lock(&self.notes).drain(..));
    }

    async fn after_write(self: Arc<Self>, files: &[(PathBuf, String)]) -> Report {
        let deadline = Instant::now() + self.budget();
        let checks = files.iter().map(|(path, text)| self.check(path, text, deadline));
        let results = futures::future::join_all(checks).await;
        let mut report = Report::default();
        let mut clients: Vec<Arc<Client>> = Vec::new();
        let mut pending = Vec::new();
        for ((path, _), result) in files.iter().zip(results) {
            match result {
                Ok(client) => {
                    let diagnostics = client.diagnostics(path).unwrap_or_default();
                    report.files.push(FileDiagnostics { path: path.clone(), diagnostics });
                    if !clients.iter().any(|c| Arc::ptr_eq(c, &client)) {
                        clients.push(client);
                    }
                }
                Err(Some(note)) => pending.push(note),
                Err(None) => {}
            }
        }
        let touched: Vec<&PathBuf> = files.iter().map(|(p, _)| p).collect();
        let others = clients
            .iter()
            .flat_map(|c| c.all())
            .filter(|(path, diagnostics)| {
                !touched.contains(&path) && diagnostics.iter().any(|d| d.severity == Severity::Error)
            })
            .take(MAX_OTHER_FILES)
            .map(|(path, diagnostics)| FileDiagnostics { path, diagnostics });
        report.files.extend(others);
        self.take_notes(&mut report);
        report.notes.extend(pending);
        report
    }

    async fn current_of(self: Arc<Self>, paths: &[PathBuf]) -> Option<Report> {
        let deadline = Instant::now() + self.budget();
        let mut report = Report::default();
        if paths.is_empty() {
            let clients: Vec<Arc<Client>> = lock(&self.servers)
                .values()
                .filter_map(|slot| match &*slot.borrow() {
                    Slot::Ready(client) => Some(client.clone()),
                    Slot::Starting | Slot::Failed => None,
                })
                .collect();
            if clients.is_empty() && !self.enabled() {
                return None;
            }
            for (path, diagnostics) in clients.iter().flat_map(|c| c.all()) {
                report.files.push(FileDiagnostics { path, diagnostics });
            }
            self.take_notes(&mut report);
            return Some(report);
        }
        let mut handled = false;
        for path in paths {
            if self.language(path).is_none() {
                continue;
            }
            handled = true;
            let open = match self.ready(path, deadline).await {
                Some((_, client)) if client.is_open(path) => Ok(client),
                _ => {
                    let read = regular::read(path, MAX_OPEN_BYTES);
                    match read {
                        Ok(read) if read.complete => {
                            self.check(path, &String::from_utf8_lossy(&read.bytes), deadline).await
                        }
                        Ok(_) => Err(Some(format!(
                            "{} is too large to open in a language server.",
                            path.display()
                        ))),
                        Err(e) => Err(Some(format!("{} cannot be read: {e}.", path.display()))),
                    }
                }
            };
            match open {
                Ok(client) => {
                    let diagnostics = client.diagnostics(path).unwrap_or_default();
                    report.files.push(FileDiagnostics { path: path.clone(), diagnostics });
                }
                Err(Some(note)) => report.notes.push(note),
                Err(None) => {}
            }
        }
        self.take_notes(&mut report);
        (handled || !report.notes.is_empty()).then_some(report)
    }

    /// Shut every server down (session end): `shutdown`, `exit`, then their process groups are killed.
    pub async fn shutdown(&self) {
        self.closed.cancel();
        let clients: Vec<Arc<Client>> = lock(&self.servers)
            .drain()
            .filter_map(|(_, slot)| match &*slot.borrow() {
                Slot::Ready(client) => Some(client.clone()),
                Slot::Starting | Slot::Failed => None,
            })
            .collect();
        futures::future::join_all(clients.iter().map(|c| c.shutdown())).await;
    }
}

/// The seam the file tools call (an `Arc` so background starts can outlive one call).
pub struct Diagnostics(pub Arc<Service>);

impl Checker for Diagnostics {
    fn written<'a>(&'a self, files: &'a [(PathBuf, String)]) -> BoxFuture<'a, Report> {
        Box::pin(self.0.clone().after_write(files))
    }

    fn current<'a>(&'a self, paths: &'a [PathBuf]) -> BoxFuture<'a, Option<Report>> {
        Box::pin(self.0.clone().current_of(paths))
    }

    fn handles(&self, path: &Path) -> bool {
        self.0.language(path).is_some()
    }
}
