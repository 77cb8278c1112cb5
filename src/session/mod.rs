//! Sessions: one [`Session`] per ACP session (its directory, configuration, settings, model client,
//! permission service, files, tasks and conversation), and the [`Manager`] that creates, loads, lists, closes
//! and deletes them. Several sessions run at once; within one session turns are serialised: a new prompt waits in
//! line behind the running turn, a steering message joins the running turn, and a cancel stops both. Every
//! completed event is saved as it happens, and every turn's file changes become a checkpoint that `/undo` and
//! `/restore N` revert.
//!
//! Owns session lifetime and turn scheduling. Must not import `acp`: the editor is reached only through the
//! seams in [`Seams`].

pub mod agents;
pub mod checkpoints;
pub mod commands;
mod extensions;
pub mod jobs;
pub mod manager;
pub mod models;
pub mod prepared;
pub mod queue;
pub mod relay;
pub mod saving;
pub mod settings;
mod slash;
pub mod subagents;
pub mod trust;
pub mod turns;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

use tokio_util::sync::CancellationToken;

use crate::agent::event::CommandInfo;
use crate::agent::{AgentEvent, AgentSwitcher, Conversation, EventSink};
use crate::bus::{Bus, Event};
use crate::config::Config;
use crate::config::Sources;
use crate::config::trust::{Request, Trust};
use crate::control::{Asker, Control, Todo, Worktree};
use crate::extensions::Catalog;
use crate::llm::{ModelClient, UserPart};
use crate::lsp;
use crate::mcp::{Elicitor, Servers};
use crate::permission::{self, Approver};
use crate::shell::tasks::Tasks;
use crate::shell::terminal::ClientTerminals;
use crate::store::Store;
use crate::store::sessions::SessionRow;
use crate::tool::Registry;
use crate::workspace::changes::Recorder;
use crate::workspace::files::{ClientFs, Files};
pub use manager::Manager;
use settings::{ConfigOption, Mode, Settings};
pub use trust::{TrustAnswer, TrustAsker};
pub use turns::Answer;

/// Where agent-side changes to a session's settings are announced (the editor's mode and option pickers).
pub trait SettingsSink: Send + Sync {
    /// `mode` is set when the mode itself changed; `options` is always the complete list.
    fn settings_changed(&self, mode: Option<Mode>, options: &[ConfigOption]);
}

/// What a session needs from the editor.
#[derive(Clone)]
pub struct Seams {
    pub sink: Arc<dyn EventSink>,
    pub settings: Arc<dyn SettingsSink>,
    pub approver: Option<Arc<dyn Approver>>,
    /// The editor's file system, when it offers one.
    pub fs: Option<Arc<dyn ClientFs>>,
    /// The editor's terminals, when it offers them.
    pub terminals: Option<Arc<dyn ClientTerminals>>,
    /// How questions reach the user; `None` sends them as messages and ends the turn.
    pub asker: Option<Arc<dyn Asker>>,
    /// How the user is asked to trust a project; `None` never asks (its settings that need trust stay ignored).
    pub trust: Option<Arc<dyn TrustAsker>>,
    /// The editor's form for MCP servers' questions; `None` declines them.
    pub elicitor: Option<Arc<dyn Elicitor>>,
    /// The editor's `additionalDirectories`: absolute roots the file tools treat as inside, like the
    /// session's own directory.
    pub additional_directories: Vec<PathBuf>,
}

impl Seams {
    /// The session's roots for these seams: its directory, then the additional directories.
    pub fn roots(&self, cwd: &std::path::Path) -> Vec<PathBuf> {
        std::iter::once(cwd.to_path_buf()).chain(self.additional_directories.iter().cloned()).collect()
    }
}

/// A title derived from a prompt: its first line, whitespace collapsed, at most 60 characters.
pub fn derive_title(parts: &[UserPart]) -> Option<String> {
    let mut text = String::new();
    for part in parts {
        let UserPart::Text(t) = part else { continue };
        let piece = match t.strip_prefix("<file path=\"") {
            // A mentioned file reads as its name, as the editor shows the mention.
            Some(rest) => rest.split('"').next().and_then(|p| p.rsplit('/').next()).unwrap_or_default(),
            None => t.as_str(),
        };
        let glued = text.ends_with(char::is_whitespace) || piece.starts_with(char::is_whitespace);
        if !text.is_empty() && !glued {
            text.push(' ');
        }
        text.push_str(piece);
    }
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let words = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.chars().count() <= 60 {
        return Some(words);
    }
    let cut: String = words.chars().take(60).collect();
    let cut = cut.rsplit_once(' ').map(|(head, _)| head.to_string()).filter(|h| h.len() > 20).unwrap_or(cut);
    Some(format!("{cut}…"))
}

/// One session.
pub struct Session {
    pub id: String,
    pub cwd: PathBuf,
    /// The configuration as it stands; replaced when the user trusts the project.
    config: Mutex<Arc<Config>>,
    created_at: i64,
    model: Mutex<Arc<dyn ModelClient>>,
    /// The built-in tools plus this session's MCP tools and `skill`.
    registry: Arc<Registry>,
    mcp: Arc<Servers>,
    /// The MCP servers the editor declared (config servers are added from the configuration).
    declared: Mutex<Vec<crate::mcp::Declared>>,
    /// Skills and custom commands, rediscovered before each prompt.
    catalog: Arc<RwLock<Catalog>>,
    /// The commands last advertised, and whether the editor may hear about the session yet (after its answer).
    advertised: Mutex<Option<Vec<CommandInfo>>>,
    announced: AtomicBool,
    /// Notices held until the editor knows the session, and problems already reported (each once).
    pending_notices: Mutex<Vec<(String, String)>>,
    reported: Mutex<std::collections::HashSet<String>>,
    /// What the user was told about saving.
    told: saving::Told,
    perms: Arc<permission::Service>,
    files: Arc<Files>,
    tasks: Arc<Tasks>,
    /// The session's language servers (diagnostics after edits), started only when the user turned them on.
    lsp: Arc<lsp::Service>,
    /// What starts the programs the session runs on its own (formatters, language servers, MCP servers); shared
    /// with its subagents.
    launcher: Arc<crate::shell::launch::Launcher>,
    terminals: Option<Arc<dyn ClientTerminals>>,
    sink: Mutex<Arc<dyn EventSink>>,
    settings_sink: Mutex<Arc<dyn SettingsSink>>,
    /// The to-do list, pending mode switch and question seam the tools share.
    control: Arc<Control>,
    bus: Bus,
    store: Option<Store>,
    settings: Mutex<Settings>,
    title: Mutex<Option<String>>,
    /// Each provider's model list, with the provider's name (the default provider first).
    models: Mutex<Vec<(String, Arc<models::ModelList>)>>,
    /// Fired when `models` is replaced (a trusted project named another provider).
    models_swapped: Arc<tokio::sync::Notify>,
    catalogue: Arc<models::Catalogue>,
    conversation: tokio::sync::Mutex<Conversation>,
    /// The running turn, the prompts waiting for it, and the steering messages for it.
    queue: queue::Queue,
    /// What the running turn changes in the files (its checkpoint).
    changes: Arc<Recorder>,
    /// Opened by the scheduler for a job, with no editor attached (yet).
    headless: AtomicBool,
    closed: CancellationToken,
    /// Where the configuration is reloaded from once the user trusts the project.
    sources: Sources,
    trust: Arc<Trust>,
    /// What the project file wants that needs the user's trust, while they have not given it.
    untrusted: Mutex<Option<Request>>,
    trust_asker: Mutex<Option<Arc<dyn TrustAsker>>>,
    /// How deep this session is nested below the user's (0 for the user's own session).
    depth: u32,
    /// The sessions above a subagent, nearest first: its token usage counts towards theirs.
    ancestors: Vec<String>,
    /// A subagent's own instructions, added to its system prompt.
    instructions: Option<String>,
    /// The agent files this session's `task` calls may start (with the config's agents, see `agents()`).
    agent_files: Arc<agents::Files>,
    /// The subagents this session started.
    children: Arc<subagents::Children>,
    /// Runs this session's `task` calls (set once the session is shared).
    subagents: std::sync::OnceLock<Arc<dyn crate::tool::subagent::Subagents>>,
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Session {
    fn sink(&self) -> Arc<dyn EventSink> {
        lock(&self.sink).clone()
    }

    /// Where the session's tools work: its directory, or the worktree it moved into.
    pub fn workdir(&self) -> PathBuf {
        self.control.worktree().map(|w| w.dir).unwrap_or_else(|| self.cwd.clone())
    }

    /// The session's roots with `root` in place of its first (the session's directory or worktree); the
    /// additional directories stay.
    fn with_root(&self, root: PathBuf) -> Vec<PathBuf> {
        std::iter::once(root).chain(self.files.roots().into_iter().skip(1)).collect()
    }

    /// Put the session back into the worktree it was in when it was stored (JSON), if that still exists.
    fn restore_worktree(&self, stored: Option<String>) {
        let Some(worktree) = stored.and_then(|json| serde_json::from_str::<Worktree>(&json).ok()) else {
            return;
        };
        if !worktree.dir.is_dir() {
            tracing::warn!(session = %self.id, path = %worktree.dir.display(), "the session's worktree is gone");
            return;
        }
        self.files.set_roots(self.with_root(worktree.dir.clone()));
        self.control.restore_worktree(Some(worktree));
    }

    /// Send this session's events to a (new) editor connection.
    pub fn rebind(&self, seams: &Seams) {
        self.headless.store(false, std::sync::atomic::Ordering::Relaxed);
        self.files.rebind(seams.roots(&self.workdir()), seams.fs.clone());
        *lock(&self.sink) = seams.sink.clone();
        *lock(&self.settings_sink) = seams.settings.clone();
        *lock(&self.trust_asker) = seams.trust.clone();
        self.control.set_asker(seams.asker.clone());
        self.mcp.set_elicitor(seams.elicitor.clone());
    }

    /// The configuration as it stands.
    pub fn config(&self) -> Arc<Config> {
        lock(&self.config).clone()
    }

    fn models(&self) -> Vec<(String, Arc<models::ModelList>)> {
        lock(&self.models).clone()
    }

    /// The models the picker offers: every provider's, named `NAME/model` when there are several.
    fn model_ids(&self) -> Vec<String> {
        let lists = self.models().into_iter().map(|(name, list)| (name, list.get()));
        models::offered(self.config().qualified(), lists)
    }

    /// What tinycode knows of `model` under this session's configuration.
    pub fn model_info(&self, model: &str) -> crate::llm::catalogue::ModelInfo {
        crate::llm::catalogue::for_model(&self.config(), model)
    }

    /// Save the new to-do list, show it as the editor's plan, and announce it.
    fn todos_changed(&self, todos: &[Todo]) {
        let items = serde_json::to_value(todos).unwrap_or_default();
        if let Some(store) = &self.store {
            store.set_todos_later(&self.id, items.clone(), crate::clock::now_millis());
        }
        self.sink().emit(AgentEvent::Plan { items: items.clone() });
        self.bus.publish(Event::TodosUpdated { session_id: self.id.clone(), todos: items });
    }

    /// Follow the to-do list's changes (set once the session is shared).
    fn watch_todos(self: &Arc<Self>) {
        let session = Arc::downgrade(self);
        self.control.on_todos(Arc::new(move |todos| {
            if let Some(session) = session.upgrade() {
                session.todos_changed(todos);
            }
        }));
    }

    /// Tell the editor about a change it did not ask for (a mode switch by the agent, a new model list).
    fn announce_settings(&self, mode_changed: bool) {
        let sink = lock(&self.settings_sink).clone();
        let mode = mode_changed.then(|| self.settings().mode);
        sink.settings_changed(mode, &self.options());
    }

    pub fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    pub fn title(&self) -> Option<String> {
        lock(&self.title).clone()
    }

    /// The config options as they stand now.
    pub fn options(&self) -> Vec<ConfigOption> {
        self.settings().options(&self.model_ids())
    }

    /// Change one option. Returns the complete new list.
    pub fn set_option(&self, option: &str, value: &str) -> Result<Vec<ConfigOption>, String> {
        let models = self.model_ids();
        lock(&self.settings).set(option, value, &models)?;
        self.apply_settings();
        Ok(self.options())
    }

    /// Make the permission service follow the mode and save the settings.
    fn apply_settings(&self) {
        let settings = self.settings();
        self.perms.set_agent(settings.mode.id());
        self.save();
    }

    fn row(&self) -> SessionRow {
        let settings = self.settings();
        SessionRow {
            id: self.id.clone(),
            cwd: self.cwd.display().to_string(),
            title: self.title(),
            mode: settings.mode.id().to_string(),
            model: Some(settings.model),
            thought_level: settings.thought_level,
            created_at: self.created_at,
            updated_at: crate::clock::now_millis(),
        }
    }

    fn save(&self) {
        if let Some(store) = &self.store {
            let row = self.row();
            store.submit("the session", move |c| {
                c.execute(
                    "UPDATE sessions SET title = ?2, mode = ?3, model = ?4, thought_level = ?5, updated_at = ?6 WHERE id = ?1",
                    rusqlite::params![row.id, row.title, row.mode, row.model, row.thought_level, row.updated_at],
                )
                .map(|_| ())
            });
        }
    }

    /// Give the session a title from its first prompt and tell the editor.
    fn name_from(&self, parts: &[UserPart]) {
        if self.title().is_some() {
            return;
        }
        let Some(title) = derive_title(parts) else { return };
        *lock(&self.title) = Some(title.clone());
        self.save();
        self.sink().emit(AgentEvent::SessionInfo {
            title: Some(title),
            updated_at: crate::clock::iso8601(crate::clock::now_millis()),
        });
    }

    /// A command's answer, shown as an agent message.
    fn reply(&self, text: &str) {
        self.sink().emit(AgentEvent::MessageChunk { message_id: new_id("msg"), text: text.into() });
    }

    /// Fetch the provider's model list in the background (after the editor has the session), unless done.
    pub fn refresh_models(&self) {
        for (_, list) in self.models() {
            list.refresh();
        }
    }

    /// Announce the model list to the editor whenever one of the provider lists grows or they are replaced,
    /// until the session closes.
    fn watch_models(self: &Arc<Self>) {
        let subscribe = |session: &Session| -> Vec<tokio::sync::watch::Receiver<u64>> {
            session.models().iter().map(|(_, list)| list.subscribe()).collect()
        };
        let mut changes = subscribe(self);
        let (session, closed, swapped) =
            (Arc::downgrade(self), self.closed.clone(), self.models_swapped.clone());
        tokio::spawn(async move {
            loop {
                let any_change = async {
                    if changes.is_empty() {
                        return std::future::pending::<bool>().await;
                    }
                    let waits = changes.iter_mut().map(|c| Box::pin(c.changed()));
                    futures::future::select_all(waits).await.0.is_ok()
                };
                tokio::select! {
                    _ = closed.cancelled() => return,
                    changed = any_change => if !changed { return },
                    () = swapped.notified() => {
                        let Some(session) = session.upgrade() else { return };
                        changes = subscribe(&session);
                    }
                }
                let Some(session) = session.upgrade() else { return };
                session.announce_settings(false);
            }
        });
    }

    /// Cancel everything, stop the session's background tasks and language servers, and refuse further work.
    pub fn close(&self) {
        self.closed.cancel();
        self.queue.cancel();
        self.tasks.stop_all();
        self.children.close_all();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let lsp = self.lsp.clone();
            runtime.spawn(async move { lsp.shutdown().await });
        }
    }

    /// Shut the session's language servers down and wait until they are gone (process exit).
    pub async fn stop_servers(&self) {
        self.lsp.shutdown().await;
    }

    /// Close the session and its MCP servers (each within about two seconds, all at once).
    pub async fn shutdown(&self) {
        self.close();
        self.mcp.close().await;
    }

    /// A copy of the conversation history (for tests and diagnostics).
    pub async fn history(&self) -> crate::agent::history::History {
        self.conversation.lock().await.history.clone()
    }
}

impl AgentSwitcher for Session {
    fn switch_agent(&self, agent: &str) {
        let Some(mode) = Mode::parse(agent) else {
            tracing::warn!(agent, "ignoring a switch to an unknown agent");
            return;
        };
        lock(&self.settings).mode = mode;
        self.apply_settings();
        self.announce_settings(true);
        self.bus.publish(Event::AgentSwitched { session_id: self.id.clone(), agent: mode.id().to_string() });
    }

    fn switch_worktree(&self, worktree: Option<&Worktree>) -> PathBuf {
        let root = worktree.map(|w| w.dir.clone()).unwrap_or_else(|| self.cwd.clone());
        self.files.set_roots(self.with_root(root.clone()));
        if let Some(store) = &self.store {
            store.set_worktree_later(&self.id, worktree.and_then(|w| serde_json::to_string(w).ok()));
        }
        tracing::info!(session = %self.id, root = %root.display(), "the session's tools work in a new root");
        root
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_the_first_line_of_the_prompt_and_stay_short() {
        let title = |text: &str| derive_title(&[UserPart::Text(text.into())]);
        assert_eq!(title("  fix   the login bug\nmore details"), Some("fix the login bug".into()));
        assert_eq!(
            title(
                "please refactor the authentication middleware so that it supports rotating keys and audit logs"
            ),
            Some("please refactor the authentication middleware so that it…".into())
        );
        assert_eq!(title("   "), None);
        let mention = |path: &str| UserPart::Text(format!("<file path=\"{path}\">\nbody\n</file>"));
        assert_eq!(
            derive_title(&[mention("/w/src/x.rs"), UserPart::Text("explain".into())]),
            Some("x.rs explain".into())
        );
        assert_eq!(
            derive_title(&[
                UserPart::Text("What does ".into()),
                mention("/w/lib.rs"),
                UserPart::Text(" return?".into())
            ]),
            Some("What does lib.rs return?".into())
        );
    }
}
