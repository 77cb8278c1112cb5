//! The rules a project remembers from "always" answers: shared by every session of the project in this
//! process, saved to the store so they survive restarts, and listed and revoked by number (`/permissions`).
//!
//! Only rules that cannot widen themselves are kept: an "always allow" for commands names one plain command prefix
//! (`git commit`) or one exact command, never a shell, interpreter or wrapper (`sh`, `python3`, `env`, `xargs`,
//! `sudo`, `find`, …), a path or everything, and destructive or secret-touching commands are never allowed for
//! good. Rules saved by older versions that break this are dropped when loaded.
//!
//! Owns the in-memory list and its persistence. Rule semantics (matching, scope) belong to the parent module.

use std::sync::{OnceLock, RwLock};

use super::{Action, Category, EXACTLY, Rule};
use crate::shell::classify::may_be_prefix;
use crate::store::Store;

/// May `rule` be remembered from an "always" answer (or kept from the store)?
pub fn may_remember(rule: &Rule) -> bool {
    if rule.action != Action::Allow {
        return true;
    }
    match Category::parse(&rule.permission) {
        Some(Category::DestructiveShell | Category::SecretShell | Category::Schedule) => false,
        Some(Category::Shell) => rule.pattern.ends_with(EXACTLY) || may_be_prefix(&rule.pattern),
        Some(_) => true,
        None => false,
    }
}

/// One project's remembered rules, oldest first.
pub struct Remembered {
    project: String,
    rules: RwLock<Vec<Rule>>,
    store: OnceLock<Store>,
}

impl Remembered {
    /// An empty list for `project` (the session directory), not saved anywhere yet.
    pub fn new(project: &str) -> Self {
        Self { project: project.to_string(), rules: RwLock::new(Vec::new()), store: OnceLock::new() }
    }

    /// The project's saved rules, kept in `store` from now on. Unreadable rows are skipped.
    pub async fn load(project: &str, store: Store) -> Self {
        let remembered = Self::new(project);
        match store.rules(project).await {
            Ok(rows) => {
                let rules = rows
                    .into_iter()
                    .filter_map(|r| {
                        let action = serde_json::from_value(serde_json::Value::String(r.action)).ok()?;
                        Some(Rule { permission: r.permission, pattern: r.pattern, action })
                    })
                    .filter(|rule| {
                        let keep = may_remember(rule);
                        if !keep {
                            tracing::warn!(permission = %rule.permission, pattern = %rule.pattern, "dropped a remembered rule that could allow more than the user saw");
                        }
                        keep
                    })
                    .collect();
                *write(&remembered.rules) = rules;
            }
            Err(e) => tracing::warn!(error = %e, "could not read remembered permission rules"),
        }
        let _ = remembered.store.set(store);
        remembered
    }

    pub fn project(&self) -> &str {
        &self.project
    }

    pub fn list(&self) -> Vec<Rule> {
        match self.rules.read() {
            Ok(rules) => rules.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Remember `rule`, replacing an earlier rule for the same permission and pattern. A rule that
    /// [`may_remember`] refuses is not kept.
    pub async fn add(&self, rule: Rule) {
        if !may_remember(&rule) {
            tracing::warn!(permission = %rule.permission, pattern = %rule.pattern, "not remembering a rule that could allow more than the user saw");
            return;
        }
        {
            let mut rules = write(&self.rules);
            rules.retain(|r| !(r.permission == rule.permission && r.pattern == rule.pattern));
            rules.push(rule.clone());
        }
        if let Some(store) = self.store.get() {
            let at = crate::clock::now_millis();
            let saved = store
                .add_rule(&self.project, &rule.permission, &rule.pattern, rule.action.as_str(), at)
                .await;
            if let Err(e) = saved {
                tracing::error!(error = %e, "could not save a permission rule");
            }
        }
    }

    /// Forget rule `number` (1-based, as listed). Returns it, or `None` when there is no such rule.
    pub async fn revoke(&self, number: usize) -> Option<Rule> {
        let rule = {
            let mut rules = write(&self.rules);
            if number == 0 || number > rules.len() {
                return None;
            }
            rules.remove(number - 1)
        };
        if let Some(store) = self.store.get()
            && let Err(e) = store.remove_rule(&self.project, &rule.permission, &rule.pattern).await
        {
            tracing::error!(error = %e, "could not forget a permission rule");
        }
        Some(rule)
    }

    /// Forget every rule. Returns how many there were.
    pub async fn clear(&self) -> usize {
        let count = std::mem::take(&mut *write(&self.rules)).len();
        if let Some(store) = self.store.get()
            && let Err(e) = store.clear_rules(&self.project).await
        {
            tracing::error!(error = %e, "could not forget the permission rules");
        }
        count
    }
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    match lock.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::Action;

    #[tokio::test]
    async fn rules_that_could_allow_more_than_the_user_saw_are_never_remembered() {
        let remembered = Remembered::new("/p");
        for (permission, pattern) in [
            ("shell", "sh"),
            ("shell", "bash -c"),
            ("shell", "python3"),
            ("shell", "env"),
            ("shell", "xargs"),
            ("shell", "sudo"),
            ("shell", "find"),
            ("shell", "npm exec"),
            ("shell", "./bin/cat"),
            ("shell", "PATH=./bin"),
            ("shell", "*"),
            ("destructive-shell", "rm"),
            ("secret-shell", "cat .env (exactly)"),
            ("*", "*"),
        ] {
            remembered.add(Rule::new(permission, pattern, Action::Allow)).await;
        }
        assert_eq!(remembered.list(), vec![]);
        for rule in [
            Rule::new("shell", "git commit", Action::Allow),
            Rule::new("shell", "sh -c 'echo hi' (exactly)", Action::Allow),
            Rule::new("shell", "sh", Action::Deny),
            Rule::new("destructive-shell", "rm", Action::Deny),
            Rule::new("edit", "/p/**", Action::Allow),
        ] {
            remembered.add(rule.clone()).await;
            assert_eq!(remembered.list().last(), Some(&rule));
        }
    }

    #[tokio::test]
    async fn unsafe_rules_saved_by_an_older_version_are_dropped_when_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        store.add_rule("/p", "shell", "sh", "allow", 1).await.unwrap();
        store.add_rule("/p", "shell", "git status", "allow", 2).await.unwrap();
        store.add_rule("/p", "destructive-shell", "rm", "allow", 3).await.unwrap();
        let loaded = Remembered::load("/p", store).await;
        assert_eq!(loaded.list(), vec![Rule::new("shell", "git status", Action::Allow)]);
    }

    #[tokio::test]
    async fn rules_survive_a_reload_and_revoking_or_clearing_reaches_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let first = Remembered::load("/p", store.clone()).await;
        first.add(Rule::new("shell", "git commit", Action::Allow)).await;
        first.add(Rule::new("edit", "/p/**", Action::Allow)).await;
        first.add(Rule::new("shell", "git commit", Action::Deny)).await;
        first.add(Rule::new("shell", "git push", Action::Deny)).await;
        let reloaded = Remembered::load("/p", store.clone()).await;
        assert_eq!(
            reloaded.list(),
            vec![
                Rule::new("edit", "/p/**", Action::Allow),
                Rule::new("shell", "git commit", Action::Deny),
                Rule::new("shell", "git push", Action::Deny),
            ]
        );
        assert_eq!(reloaded.revoke(2).await, Some(Rule::new("shell", "git commit", Action::Deny)));
        assert_eq!(reloaded.revoke(9).await, None);
        assert_eq!(reloaded.revoke(0).await, None);
        let again = Remembered::load("/p", store.clone()).await;
        assert_eq!(again.list().len(), 2);
        assert_eq!(again.clear().await, 2);
        assert_eq!(Remembered::load("/p", store.clone()).await.list(), vec![]);
        assert_eq!(Remembered::load("/other", store).await.list(), vec![]);
    }
}
