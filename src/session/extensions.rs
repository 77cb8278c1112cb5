//! What a session takes from the user's setup: its MCP servers (the editor's plus the configuration's, started
//! in the background and changed when trust or the editor's list changes), its skills and custom commands
//! (rediscovered on a blocking thread when the session opens and before every prompt, the `skill` tool offered
//! while there are skills), the slash commands
//! advertised to the editor (only once the editor has the session, and again whenever they change), and notices
//! about what failed (an MCP server, a skill file), each said once.
//!
//! Owns that wiring. Discovery belongs to `extensions`, servers to `mcp`, routing to `commands`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Session, commands, lock};
use crate::agent::AgentEvent;
use crate::agent::system_prompt::Extras;
use crate::config::Config;
use crate::extensions::{Catalog, Places};
use crate::mcp::{Declared, Report, spec};

/// Where skills and commands are looked for, for a session rooted at `cwd`.
pub(super) fn places(sources: &crate::config::Sources, cwd: &std::path::Path) -> Places {
    Places {
        cwd: cwd.to_path_buf(),
        home: sources.env.get("HOME").filter(|h| !h.is_empty()).map(std::path::PathBuf::from),
        config_home: sources.user_config_home.clone(),
    }
}

fn read<T: Clone>(lock: &std::sync::RwLock<T>) -> T {
    match lock.read() {
        Ok(value) => value.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

impl Session {
    /// Where skills and commands are looked for.
    pub(super) fn places(&self) -> Places {
        places(&self.sources, &self.cwd)
    }

    /// The skills and commands as last discovered.
    pub(super) fn catalog(&self) -> Catalog {
        read(&self.catalog)
    }

    /// Rediscover skills and commands and advertise the commands again when they changed.
    pub(super) async fn refresh_extensions(&self) {
        if self.rescan_extensions().await {
            self.advertise_commands(false);
        }
    }

    /// Rediscover skills and commands (directory listings, on a blocking thread: never on the async runtime);
    /// offer `skill` while there are skills; report unreadable files once, and refused instruction and config
    /// files. Returns whether anything changed.
    pub(super) async fn rescan_extensions(&self) -> bool {
        let places = self.places();
        let config = self.config();
        self.report_refused(&config.refused_files);
        let (cwd, global, configured) =
            (self.cwd.clone(), global_instructions(&self.sources), config.instructions.clone());
        let found = tokio::task::spawn_blocking(move || {
            (Catalog::discover(&places), refused_instructions(&cwd, global.as_deref(), &configured))
        });
        let (found, refused) = match found.await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "discovering skills and commands failed");
                return false;
            }
        };
        self.report_refused(&refused);
        self.use_catalog(found)
    }

    /// Name each of `refused` (files the reader refused, with why) to the user, once per session.
    pub(super) fn report_refused(&self, refused: &[(std::path::PathBuf, String)]) {
        for (path, why) in refused {
            self.refused_file(path, why, true);
        }
    }

    /// Take `found` as the skills and commands; returns whether it differs from what the session had.
    pub(super) fn use_catalog(&self, found: Catalog) -> bool {
        if found == self.catalog() {
            return false;
        }
        if found.skills.is_empty() {
            self.registry.unregister(crate::builtin::skill::ID);
        } else if self.registry.get(crate::builtin::skill::ID).is_none() {
            self.registry.register(crate::builtin::skill::def(self.catalog.clone()));
        }
        for problem in &found.problems {
            let key = format!("{}\0{}", problem.path.display(), problem.reason);
            if lock(&self.reported).insert(key) {
                self.notice(
                    "A skill or command file could not be used".into(),
                    format!("{}: {}", problem.path.display(), problem.reason),
                );
            }
        }
        match self.catalog.write() {
            Ok(mut catalog) => *catalog = found,
            Err(poisoned) => *poisoned.into_inner() = found,
        }
        true
    }

    /// Every command the session offers now.
    pub(super) fn commands(&self) -> Vec<crate::agent::event::CommandInfo> {
        commands::available(&self.catalog(), &self.mcp.prompt_commands())
    }

    /// Tell the editor the slash commands: when `force` (right after the session's answer), or when they changed
    /// since last time. Nothing is sent before the editor knows the session.
    pub fn advertise_commands(&self, force: bool) {
        if !self.announced.load(Ordering::SeqCst) {
            return;
        }
        let list = self.commands();
        {
            let mut advertised = lock(&self.advertised);
            if !force && advertised.as_ref() == Some(&list) {
                return;
            }
            *advertised = Some(list.clone());
        }
        self.sink().emit(AgentEvent::Commands(list));
    }

    /// The editor has the session (its answer went out): start its MCP servers, advertise the commands and say
    /// what was held back.
    pub fn announce(&self) {
        self.announced.store(true, Ordering::SeqCst);
        self.mcp.release();
        self.advertise_commands(true);
        let held: Vec<(String, String)> = lock(&self.pending_notices).drain(..).collect();
        for (title, description) in held {
            self.sink().emit(AgentEvent::Notice { title, description });
        }
    }

    /// Name a file tinycode refused to read on its own (`workspace::project_file`) and say why; with `once`, only
    /// the first time this session meets it (discovery repeats before every prompt).
    pub(super) fn refused_file(&self, path: &std::path::Path, why: &str, once: bool) {
        let key = format!("{}\0{why}", path.display());
        if once && !lock(&self.reported).insert(key) {
            return;
        }
        self.notice(
            "A file was not read".into(),
            format!("{}: {why}. Nothing of it was given to the model.", path.display()),
        );
    }

    /// Tell the user something outside the conversation (held until the editor knows the session).
    pub(super) fn notice(&self, title: String, description: String) {
        if self.announced.load(Ordering::SeqCst) {
            self.sink().emit(AgentEvent::Notice { title, description });
        } else {
            lock(&self.pending_notices).push((title, description));
        }
    }

    /// What the session's MCP servers report.
    pub(super) fn mcp_report(&self, report: Report) {
        match report {
            Report::Failed { server, reason } => self.notice(
                format!("MCP server `{server}` is unavailable"),
                format!("{reason}. Its tools are withdrawn; `/mcp` shows the servers."),
            ),
            Report::Changed => self.advertise_commands(false),
        }
    }

    /// The servers the session should run under `config`.
    pub(super) fn mcp_specs(&self, config: &Config) -> Vec<spec::Spec> {
        let declared = lock(&self.declared).clone();
        spec::resolve(&declared, &config.mcp_servers, config.mcp_startup_timeout, config.mcp_call_timeout)
    }

    /// Run the servers `config` and the editor's list call for (unchanged ones keep running).
    pub(super) fn apply_mcp(&self, config: &Config) {
        self.mcp.apply(self.mcp_specs(config));
    }

    /// The editor (another connection) declares its servers anew.
    pub fn redeclare(&self, declared: Vec<Declared>) {
        *lock(&self.declared) = declared;
        self.apply_mcp(&self.config());
    }

    /// Instruction files and skills for the system prompt.
    pub(super) fn extras(&self, config: &Config) -> Extras {
        Extras {
            global_instructions: global_instructions(&self.sources),
            instruction_files: config.instructions.clone(),
            skills: self.catalog().skills.iter().map(|s| (s.name.clone(), s.description.clone())).collect(),
        }
    }
}

/// The user's global instruction file (`~/.config/tinycode/AGENTS.md`).
pub(super) fn global_instructions(sources: &crate::config::Sources) -> Option<std::path::PathBuf> {
    sources.user_config_home.as_ref().map(|home| home.join("tinycode").join("AGENTS.md"))
}

/// The instruction files of a session rooted at `cwd` that the reader refuses, with why (blocking: metadata of a
/// few files). The system prompt leaves them out by itself; this is for telling the user.
pub(super) fn refused_instructions(
    cwd: &std::path::Path,
    global: Option<&std::path::Path>,
    configured: &[std::path::PathBuf],
) -> Vec<(std::path::PathBuf, String)> {
    use crate::agent::instructions;
    let files = instructions::files(cwd, global, configured);
    instructions::refused(&files).into_iter().map(|(path, refusal)| (path, refusal.to_string())).collect()
}

/// The report function a session's servers get: it reaches the session while it lives.
pub(super) fn reporter(
    session: Arc<std::sync::OnceLock<std::sync::Weak<Session>>>,
) -> Arc<dyn Fn(Report) + Send + Sync> {
    Arc::new(move |report| {
        if let Some(session) = session.get().and_then(std::sync::Weak::upgrade) {
            session.mcp_report(report);
        }
    })
}
