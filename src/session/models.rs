//! The models a session can pick: for each provider, its configured models plus whatever its `GET /models`
//! answers, fetched per provider in the background once the editor has its session (so `session/new` never
//! waits on the network, nor on building the HTTP client). For a server on this machine, what it reports about
//! the default model (context, tools, images) is asked for too. A failed fetch is tried again by the next
//! session. Sessions watch their lists and announce them when they grow.
//!
//! Owns the model-list cache. Must not touch session settings.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::lock;
use crate::bus::{Bus, Event};
use crate::config::Config;
use crate::config::providers::Provider;
use crate::llm::{detect, router};

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
    /// The provider and the configuration to fetch with.
    source: Mutex<Option<(Provider, Config)>>,
    bus: Mutex<Option<Bus>>,
}

impl ModelList {
    fn new() -> Self {
        Self {
            ids: Mutex::new(Vec::new()),
            fetch: Mutex::new(Fetch::Idle),
            changed: watch::channel(0).0,
            source: Mutex::new(None),
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
        let source = lock(&self.source).clone().zip(lock(&self.bus).clone());
        if let (true, Some(((provider, config), bus))) = (start, source) {
            let list = self.clone();
            tokio::spawn(async move { fetch(&list, &provider, &config, &bus).await });
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

/// Every provider's list, keyed by provider name and base URL.
#[derive(Default)]
pub struct Catalogue {
    lists: Mutex<HashMap<(String, String), Arc<ModelList>>>,
}

impl Catalogue {
    /// The lists of `config`'s providers, each holding its configured models (call [`ModelList::refresh`] to
    /// fetch), with the provider's name.
    pub fn for_config(&self, config: &Config, bus: &Bus) -> Vec<(String, Arc<ModelList>)> {
        config
            .providers
            .iter()
            .enumerate()
            .map(|(index, provider)| {
                (provider.name.clone(), self.for_provider(provider, index == 0, config, bus))
            })
            .collect()
    }

    fn for_provider(&self, provider: &Provider, default: bool, config: &Config, bus: &Bus) -> Arc<ModelList> {
        let key = (provider.name.clone(), provider.base_url.clone());
        let list = lock(&self.lists).entry(key).or_insert_with(|| Arc::new(ModelList::new())).clone();
        list.extend(&configured(provider, default, config));
        lock(&list.source).get_or_insert_with(|| (provider.clone(), config.clone()));
        lock(&list.bus).get_or_insert_with(|| bus.clone());
        list
    }
}

/// The configured models of `provider`: the session default first (when it is this provider's), its own list,
/// then (for the default provider) the top-level `models`.
fn configured(provider: &Provider, default: bool, config: &Config) -> Vec<String> {
    let current = config
        .split_model(&config.model)
        .filter(|(p, _)| p.name == provider.name)
        .map(|(_, m)| m.to_string());
    let extra = if default { config.models.clone() } else { Vec::new() };
    current.into_iter().chain(provider.models.iter().cloned()).chain(extra).collect()
}

/// The ids the model picker offers, from each provider's list in turn: `NAME/model` when `qualified`, each once.
pub fn offered(qualified: bool, lists: impl IntoIterator<Item = (String, Vec<String>)>) -> Vec<String> {
    let mut ids = Vec::new();
    for (name, list) in lists {
        for id in list {
            let id = if qualified { format!("{name}/{id}") } else { id };
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

/// Each provider's list before anything was fetched: its configured models (what [`Catalogue::for_config`]
/// gives a process that has fetched nothing yet).
pub fn configured_lists(config: &Config) -> Vec<(String, Vec<String>)> {
    let providers = config.providers.iter().enumerate();
    providers
        .map(|(index, provider)| (provider.name.clone(), configured(provider, index == 0, config)))
        .collect()
}

async fn fetch(list: &ModelList, provider: &Provider, config: &Config, bus: &Bus) {
    let endpoint = router::endpoint(provider, config);
    let result = router::list_models(&endpoint, provider.kind).await;
    let (state, models) = match result {
        Ok(ids) => {
            list.extend(&ids);
            (Fetch::Done, Some(ids))
        }
        Err(e) => {
            tracing::info!(provider = %provider.name, error = %e, "the provider's model list is unavailable; offering the configured models");
            (Fetch::Idle, None)
        }
    };
    if provider.is_local()
        && let Some(model) = list.get().first()
    {
        detect::describe(&provider.base_url, model).await;
    }
    *lock(&list.fetch) = state;
    bus.publish(Event::ModelsListed { base_url: provider.base_url.clone(), models });
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
