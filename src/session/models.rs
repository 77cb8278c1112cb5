//! The models a session can pick: the configured ones plus whatever the provider's `GET /models` answers,
//! fetched per provider in the background, once the editor has its session (so `session/new` never waits on
//! the network, nor on building the HTTP client). A failed fetch is tried again by the next session. Sessions
//! watch their list and announce it when it grows.
//!
//! Owns the model-list cache. Must not touch session settings.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::lock;
use crate::bus::{Bus, Event};
use crate::config::Config;
use crate::llm::chat;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fetch {
    /// Not fetched yet, or the last attempt failed.
    Idle,
    Running,
    Done,
}

/// One provider's model ids, in the order they became known.
pub struct ModelList {
    ids: Mutex<Vec<String>>,
    fetch: Mutex<Fetch>,
    changed: watch::Sender<u64>,
    /// The provider, for fetching.
    config: Mutex<Option<Config>>,
    bus: Mutex<Option<Bus>>,
}

impl ModelList {
    fn new() -> Self {
        Self {
            ids: Mutex::new(Vec::new()),
            fetch: Mutex::new(Fetch::Idle),
            changed: watch::channel(0).0,
            config: Mutex::new(None),
            bus: Mutex::new(None),
        }
    }

    pub fn get(&self) -> Vec<String> {
        lock(&self.ids).clone()
    }

    /// Fetch the provider's list in the background, unless a fetch ran or runs.
    pub fn refresh(self: &Arc<Self>) {
        let start = {
            let mut fetch = lock(&self.fetch);
            let idle = *fetch == Fetch::Idle;
            if idle {
                *fetch = Fetch::Running;
            }
            idle
        };
        let provider = lock(&self.config).clone().zip(lock(&self.bus).clone());
        if let (true, Some((config, bus))) = (start, provider) {
            let list = self.clone();
            tokio::spawn(async move { fetch(&list, &config, &bus).await });
        }
    }

    /// Fires whenever the list grows.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Add the ids not known yet; tells watchers when anything was added.
    fn extend(&self, ids: &[String]) {
        let added = {
            let mut known = lock(&self.ids);
            let before = known.len();
            for id in ids {
                if !known.contains(id) {
                    known.push(id.clone());
                }
            }
            known.len() > before
        };
        if added {
            self.changed.send_modify(|n| *n += 1);
        }
    }
}

/// Every provider's list, keyed by base URL.
#[derive(Default)]
pub struct Catalogue {
    lists: Mutex<HashMap<String, Arc<ModelList>>>,
}

impl Catalogue {
    /// The list for `config`'s provider, holding its configured models (call [`ModelList::refresh`] to fetch).
    pub fn for_provider(&self, config: &Config, bus: &Bus) -> Arc<ModelList> {
        let list = lock(&self.lists)
            .entry(config.base_url.clone())
            .or_insert_with(|| Arc::new(ModelList::new()))
            .clone();
        list.extend(&configured(config));
        lock(&list.config).get_or_insert_with(|| config.clone());
        lock(&list.bus).get_or_insert_with(|| bus.clone());
        list
    }
}

/// The configured models, the session default first.
fn configured(config: &Config) -> Vec<String> {
    std::iter::once(config.model.clone()).chain(config.models.iter().cloned()).collect()
}

async fn fetch(list: &ModelList, config: &Config, bus: &Bus) {
    let result = chat::list_models(config).await;
    let (state, models) = match result {
        Ok(ids) => {
            list.extend(&ids);
            (Fetch::Done, Some(ids))
        }
        Err(e) => {
            tracing::info!(error = %e, "the provider's model list is unavailable; offering the configured models");
            (Fetch::Idle, None)
        }
    };
    *lock(&list.fetch) = state;
    bus.publish(Event::ModelsListed { base_url: config.base_url.clone(), models });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_grows_without_duplicates_and_tells_watchers_only_when_it_grows() {
        let list = ModelList::new();
        let mut watcher = list.subscribe();
        list.extend(&["a".into(), "b".into()]);
        assert!(watcher.has_changed().unwrap());
        watcher.mark_unchanged();
        list.extend(&["b".into(), "a".into()]);
        assert!(!watcher.has_changed().unwrap());
        list.extend(&["c".into()]);
        assert_eq!(list.get(), vec!["a", "b", "c"]);
        assert!(watcher.has_changed().unwrap());
    }
}
