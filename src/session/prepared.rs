//! A new session decided before it is built: its id and configuration, and what it offers the editor at first.
//! The manager builds every new session from one; the stdio transport makes one for the editor's first
//! `session/new` before the manager exists, answers with [`Prepared::first_state`], and hands it to the manager,
//! which builds the session with that very id and configuration.
//!
//! Owns that decision only. Must not build sessions, touch the store or reach the network.

use std::path::{Path, PathBuf};

use super::settings::{ConfigOption, Mode, Settings};
use crate::config::trust::Trust;
use crate::config::{Config, Loaded, Sources};
use crate::store::sessions::SessionRow;

/// A session about to be created.
pub struct Prepared {
    pub id: String,
    pub cwd: PathBuf,
    pub loaded: Loaded,
}

impl Prepared {
    /// A fresh id for a session rooted at `cwd` with `loaded` as its configuration.
    pub fn new(cwd: &Path, loaded: Loaded) -> Self {
        Self { id: format!("sess_{}", uuid::Uuid::new_v4().simple()), cwd: cwd.to_path_buf(), loaded }
    }

    /// The first session of a process, decided without a manager: the configuration as the manager would load it
    /// for a project nobody has answered a trust question about yet. `None` when the configuration cannot be
    /// read (the manager reports why) or names no provider (local servers must then be probed for, which only
    /// the manager does).
    pub fn without_manager(sources: &Sources, cwd: &Path) -> Option<Self> {
        let loaded = Config::load(sources, cwd, &Trust::new(sources)).ok()?;
        (!loaded.config.providers.is_empty()).then(|| Self::new(cwd, loaded))
    }

    /// The stored row the session starts as, created at `now` (milliseconds).
    pub fn row(&self, now: i64) -> SessionRow {
        let config = &self.loaded.config;
        SessionRow {
            id: self.id.clone(),
            cwd: self.cwd.display().to_string(),
            title: None,
            mode: config.default_mode.clone().unwrap_or_else(|| Mode::Build.id().into()),
            model: Some(config.model.clone()),
            thought_level: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// The mode and options the session offers before any model list was fetched: what `session/new` answers
    /// (the manager's session gives the same while its lists hold only the configured models).
    pub fn first_state(&self) -> (Mode, Vec<ConfigOption>) {
        let config = &self.loaded.config;
        let settings = Settings::of_row(&self.row(0), config);
        let ids = super::models::offered(config.qualified(), super::models::configured_lists(config));
        (settings.mode, settings.options(&ids))
    }
}
