//! Project trust in a live session: the one question per project and process, put after the editor has the
//! session, the project's settings applied from the next prompt once the user trusts them (here or with
//! `tinycode trust`), and the launcher told when the project is trusted (the user's formatters and language
//! servers wait until then, with one notice).
//!
//! Owns when to ask and when to reload. What needs trust and the record belong to `config::trust`; how the
//! question reaches the user belongs to the [`TrustAsker`] seam.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Session, lock};
use crate::config::trust::{Request, Standing};
use crate::config::{Config, Loaded};
use crate::llm::router::Router;

/// The user's answer to "trust this project?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustAnswer {
    Trust,
    /// "Not now", a dismissed question, or a client that cannot ask: not asked again in this process.
    NotNow,
}

/// How the question reaches the user. Implemented by the `acp` layer.
pub trait TrustAsker: Send + Sync {
    fn ask_trust<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, TrustAnswer>;
    /// Tell the user what became of the answer.
    fn trust_settled(&self, request: &Request, note: &str);
}

/// What the user is told after "trust".
pub const TRUSTED: &str = "Trusted: these settings apply from your next message and in new sessions.";

/// The notice's title when formatters and language servers wait for trust.
const HELD_TITLE: &str = "Formatters and language servers are waiting";

fn held(project: &std::path::Path) -> String {
    format!(
        "They run only in projects you trust, because they run programs the project can choose (a toolchain file, \
         build scripts). To trust {0}, run `tinycode trust {0}`.",
        project.display()
    )
}

fn not_now(request: &Request) -> String {
    format!(
        "Not trusted: these settings stay ignored, and tinycode will not ask again until it restarts. To trust the \
         project later, run `tinycode trust {}`.",
        request.project.display()
    )
}

impl Session {
    /// Ask the user to trust the project when its file wants what needs trust, unless this process already
    /// asked (or is asking) about these settings. Runs in the background: call it after the editor has the session.
    pub fn offer_trust(self: &Arc<Self>) {
        let Some(request) = lock(&self.untrusted).clone() else { return };
        let Some(asker) = lock(&self.trust_asker).clone() else { return };
        if !self.trust.begin_ask(&request) {
            return;
        }
        let (trust, closed) = (self.trust.clone(), self.closed.clone());
        tokio::spawn(async move {
            let answer = tokio::select! {
                answer = asker.ask_trust(&request) => answer,
                () = closed.cancelled() => {
                    trust.end_ask(&request);
                    return;
                }
            };
            match answer {
                TrustAnswer::Trust => match trust.grant(&request) {
                    Ok(()) => asker.trust_settled(&request, TRUSTED),
                    Err(e) => {
                        tracing::error!(error = %e, "the project trust could not be saved");
                        let note =
                            format!("Trusted until tinycode restarts, but the decision was not saved: {e}.");
                        asker.trust_settled(&request, &note);
                    }
                },
                TrustAnswer::NotNow => {
                    trust.decline(&request);
                    asker.trust_settled(&request, &not_now(&request));
                }
            }
            trust.end_ask(&request);
        });
    }

    /// Before a prompt: if the user has trusted the project since the session started, reload the
    /// configuration and apply it, and let the launcher run formatters and language servers.
    pub(super) fn apply_trust(&self) {
        let request = lock(&self.untrusted).clone();
        if let Some(request) = request
            && self.trust.standing(&request.project, &request.fingerprint) == Standing::Trusted
        {
            match Config::load(&self.sources, &self.cwd, &self.trust) {
                Ok(loaded) => self.reload(loaded),
                Err(e) => tracing::warn!(error = %e, "the trusted project settings could not be loaded"),
            }
        }
        if !self.launcher.trusted()
            && lock(&self.untrusted).is_none()
            && self.trust.knows(&crate::config::trust::canonical(&self.cwd))
        {
            self.launcher.set_trusted(true);
        }
    }

    /// Tell the user, once, when the first formatter or language server waits for the project's trust.
    pub(super) fn tell_when_held(self: &Arc<Self>) {
        let (session, project) = (Arc::downgrade(self), self.cwd.clone());
        self.launcher.on_hold(Arc::new(move || {
            if let Some(session) = session.upgrade() {
                session.notice(HELD_TITLE.into(), held(&project));
            }
        }));
    }

    /// Use a freshly loaded configuration (local servers found earlier stay when it configures none).
    pub fn reload(&self, loaded: Loaded) {
        let Loaded { mut config, untrusted } = loaded;
        *lock(&self.untrusted) = untrusted;
        if config.providers.is_empty() {
            config.adopt_detected(self.config().providers.clone());
        }
        self.reconfigure(config);
    }

    /// Use `config` from now on: provider, permission rules, formatters and MCP servers. The mode and model of this session
    /// stay as they are (`default_mode` and `model` are for new sessions).
    fn reconfigure(&self, config: Config) {
        self.perms.set_config_rules(config.permission_rules.clone());
        self.files.set_formatters(config.formatters.clone());
        self.apply_mcp(&config);
        *lock(&self.model) = Arc::new(Router::new(&config));
        if self.config().providers != config.providers {
            let lists = self.catalogue.for_config(&config, &self.bus);
            *lock(&self.models) = lists.clone();
            self.models_swapped.notify_one();
            for (_, list) in lists {
                list.refresh();
            }
        }
        *lock(&self.config) = Arc::new(config);
        tracing::info!(session = %self.id, "trusted project settings applied");
    }
}
