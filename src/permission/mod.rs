//! Permission: the categories of seed 000 §8.4, rules `{permission, pattern, action}`, their evaluation, and
//! the [`Approver`] seam through which the user is asked.
//!
//! Owns the decision "may this run?". Must not know how the question reaches the user (the `acp` layer
//! implements [`Approver`]) and must not execute anything itself.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::display::Presentation;

/// The permission categories of seed 000 §8.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Category {
    #[serde(rename = "read")]
    Read,
    #[serde(rename = "edit")]
    Edit,
    #[serde(rename = "shell")]
    Shell,
    #[serde(rename = "webfetch")]
    Webfetch,
    #[serde(rename = "plan_enter")]
    PlanEnter,
    #[serde(rename = "plan_exit")]
    PlanExit,
    #[serde(rename = "destructive-shell")]
    DestructiveShell,
    #[serde(rename = "secret-shell")]
    SecretShell,
}

impl Category {
    pub const ALL: [Category; 8] = [
        Category::Read,
        Category::Edit,
        Category::Shell,
        Category::Webfetch,
        Category::PlanEnter,
        Category::PlanExit,
        Category::DestructiveShell,
        Category::SecretShell,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Read => "read",
            Category::Edit => "edit",
            Category::Shell => "shell",
            Category::Webfetch => "webfetch",
            Category::PlanEnter => "plan_enter",
            Category::PlanExit => "plan_exit",
            Category::DestructiveShell => "destructive-shell",
            Category::SecretShell => "secret-shell",
        }
    }

    pub fn parse(name: &str) -> Option<Category> {
        // Agent allowlists may say `bash` for `shell` (seed 000 §8.3, bash).
        let name = if name == "bash" { "shell" } else { name };
        Category::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

/// What a rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Ask,
    Deny,
}

/// One rule. `permission` is a category name or `*`; `pattern` is a path glob, a command prefix or a host
/// (depending on the category), or `*` for everything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub permission: String,
    pub pattern: String,
    pub action: Action,
}

impl Rule {
    pub fn new(permission: &str, pattern: &str, action: Action) -> Self {
        Self { permission: permission.to_string(), pattern: pattern.to_string(), action }
    }

    fn matches(&self, category: Category, value: &str) -> bool {
        if self.permission != "*" && Category::parse(&self.permission) != Some(category) {
            return false;
        }
        pattern_matches(category, &self.pattern, value)
    }
}

/// Does `pattern` cover `value` for this category? Shell categories use whole-word command prefixes
/// (`git commit` covers `git commit -m x` but not `git committed`); the others use globs.
fn pattern_matches(category: Category, pattern: &str, value: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match category {
        Category::Shell | Category::DestructiveShell | Category::SecretShell => {
            let want: Vec<&str> = pattern.split_whitespace().collect();
            let have: Vec<&str> = value.split_whitespace().collect();
            !want.is_empty() && have.len() >= want.len() && want.iter().zip(&have).all(|(w, h)| w == h)
        }
        _ => globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .build()
            .map(|g| g.compile_matcher().is_match(value))
            .unwrap_or(false),
    }
}

/// An ordered list of rules; the last matching rule wins, so later (more specific, user-added) rules override.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ruleset {
    pub rules: Vec<Rule>,
}

impl Ruleset {
    /// The `build` agent's defaults: reads and searches run freely, everything that changes something asks.
    pub fn build_defaults() -> Self {
        Self {
            rules: vec![
                Rule::new("*", "*", Action::Ask),
                Rule::new("read", "*", Action::Allow),
                Rule::new("plan_enter", "*", Action::Allow),
            ],
        }
    }

    /// The rule that decides `value` in `category`, if any.
    pub fn evaluate(&self, category: Category, value: &str) -> Option<&Rule> {
        self.rules.iter().rev().find(|r| r.matches(category, value))
    }
}

/// A request to let one tool call run.
#[derive(Debug, Clone)]
pub struct Ask {
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    pub category: Category,
    pub presentation: Presentation,
    pub raw_input: Value,
}

/// The user's answer to an [`Ask`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// The turn was cancelled while the question was open (or the client failed to answer).
    Cancelled,
}

/// The seam to the user. Implemented by the `acp` layer with `session/request_permission`.
pub trait Approver: Send + Sync {
    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Reply>;
}

/// The outcome of a permission check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// A rule denies it; the model is told which one.
    Denied(Rule),
    /// The user said no; the model is told and the turn goes on.
    Rejected,
    /// The turn must end as cancelled.
    Cancelled,
}

/// The permission service of one session: its ruleset, the rules remembered from "always" answers, and the
/// way to ask. Asks are serialised so two tool calls never interleave their questions.
pub struct Service {
    ruleset: std::sync::RwLock<Ruleset>,
    approver: Option<Arc<dyn Approver>>,
    ask_lock: tokio::sync::Mutex<()>,
}

impl Service {
    pub fn new(ruleset: Ruleset, approver: Option<Arc<dyn Approver>>) -> Self {
        Self { ruleset: std::sync::RwLock::new(ruleset), approver, ask_lock: tokio::sync::Mutex::new(()) }
    }

    fn decide(&self, category: Category, patterns: &[String]) -> Result<Action, Rule> {
        let rules = match self.ruleset.read() {
            Ok(rules) => rules,
            Err(poisoned) => poisoned.into_inner(),
        };
        let star = ["*".to_string()];
        let patterns = if patterns.is_empty() { &star[..] } else { patterns };
        let mut overall = Action::Allow;
        for value in patterns {
            // No matching rule at all fails closed to "ask".
            match rules.evaluate(category, value) {
                Some(rule) if rule.action == Action::Deny => return Err(rule.clone()),
                Some(rule) if rule.action == Action::Allow => {}
                _ => overall = Action::Ask,
            }
        }
        Ok(overall)
    }

    fn remember(&self, category: Category, patterns: &[String], action: Action) {
        let mut rules = match self.ruleset.write() {
            Ok(rules) => rules,
            Err(poisoned) => poisoned.into_inner(),
        };
        for pattern in patterns {
            rules.rules.push(Rule::new(category.as_str(), pattern, action));
        }
    }

    /// Decide whether the call may run, asking the user when the rules say so.
    pub async fn check(&self, ask: &Ask) -> Verdict {
        match self.decide(ask.category, &ask.presentation.patterns) {
            Err(rule) => return Verdict::Denied(rule),
            Ok(Action::Allow) => return Verdict::Allow,
            Ok(_) => {}
        }
        let Some(approver) = &self.approver else {
            // Nobody can answer: fail closed.
            return Verdict::Rejected;
        };
        let _serial = self.ask_lock.lock().await;
        // An "always" answer given to an earlier ask may already cover this one.
        match self.decide(ask.category, &ask.presentation.patterns) {
            Err(rule) => return Verdict::Denied(rule),
            Ok(Action::Allow) => return Verdict::Allow,
            Ok(_) => {}
        }
        match approver.ask(ask).await {
            Reply::AllowOnce => Verdict::Allow,
            Reply::AllowAlways => {
                self.remember(ask.category, &ask.presentation.patterns, Action::Allow);
                Verdict::Allow
            }
            Reply::RejectOnce => Verdict::Rejected,
            Reply::RejectAlways => {
                self.remember(ask.category, &ask.presentation.patterns, Action::Deny);
                Verdict::Rejected
            }
            Reply::Cancelled => Verdict::Cancelled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Scripted {
        replies: Mutex<Vec<Reply>>,
        asked: Mutex<Vec<String>>,
    }

    impl Approver for Scripted {
        fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Reply> {
            self.asked.lock().unwrap().push(ask.presentation.title.clone());
            let reply = self.replies.lock().unwrap().remove(0);
            Box::pin(async move { reply })
        }
    }

    fn ask(category: Category, pattern: &str) -> Ask {
        Ask {
            session_id: "s".into(),
            call_id: "c".into(),
            tool: "t".into(),
            category,
            presentation: Presentation {
                title: pattern.into(),
                patterns: vec![pattern.into()],
                ..Presentation::default()
            },
            raw_input: Value::Null,
        }
    }

    #[test]
    fn shell_patterns_are_whole_word_command_prefixes() {
        assert!(pattern_matches(Category::Shell, "git commit", "git commit -m x"));
        assert!(!pattern_matches(Category::Shell, "git commit", "git committed"));
        assert!(!pattern_matches(Category::Shell, "git commit", "git"));
        assert!(pattern_matches(Category::Edit, "/p/src/**", "/p/src/a/b.rs"));
        assert!(!pattern_matches(Category::Edit, "/p/src/**", "/p/other.rs"));
    }

    #[test]
    fn the_last_matching_rule_wins() {
        let rules = Ruleset {
            rules: vec![Rule::new("*", "*", Action::Ask), Rule::new("edit", "*.md", Action::Allow)],
        };
        assert_eq!(rules.evaluate(Category::Edit, "README.md").unwrap().action, Action::Allow);
        assert_eq!(rules.evaluate(Category::Edit, "main.rs").unwrap().action, Action::Ask);
        assert_eq!(rules.evaluate(Category::Read, "main.rs").unwrap().action, Action::Ask);
    }

    #[tokio::test]
    async fn reads_are_allowed_by_default_without_asking() {
        let service = Service::new(Ruleset::build_defaults(), None);
        assert_eq!(service.check(&ask(Category::Read, "/a")).await, Verdict::Allow);
    }

    #[tokio::test]
    async fn an_ask_without_anyone_to_answer_fails_closed() {
        let service = Service::new(Ruleset::build_defaults(), None);
        assert_eq!(service.check(&ask(Category::Edit, "/a")).await, Verdict::Rejected);
    }

    #[tokio::test]
    async fn a_deny_rule_names_itself_and_never_asks() {
        let mut rules = Ruleset::build_defaults();
        rules.rules.push(Rule::new("shell", "rm", Action::Deny));
        let approver = Arc::new(Scripted { replies: Mutex::new(vec![]), asked: Mutex::new(vec![]) });
        let service = Service::new(rules, Some(approver.clone()));
        assert_eq!(
            service.check(&ask(Category::Shell, "rm -rf x")).await,
            Verdict::Denied(Rule::new("shell", "rm", Action::Deny))
        );
        assert!(approver.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn always_answers_cover_later_asks_of_the_same_pattern() {
        let approver = Arc::new(Scripted {
            replies: Mutex::new(vec![Reply::AllowAlways, Reply::RejectAlways, Reply::Cancelled]),
            asked: Mutex::new(vec![]),
        });
        let service = Service::new(Ruleset::build_defaults(), Some(approver.clone()));
        assert_eq!(service.check(&ask(Category::Edit, "/a")).await, Verdict::Allow);
        assert_eq!(service.check(&ask(Category::Edit, "/a")).await, Verdict::Allow);
        assert_eq!(service.check(&ask(Category::Edit, "/b")).await, Verdict::Rejected);
        assert_eq!(
            service.check(&ask(Category::Edit, "/b")).await,
            Verdict::Denied(Rule::new("edit", "/b", Action::Deny))
        );
        assert_eq!(service.check(&ask(Category::Edit, "/c")).await, Verdict::Cancelled);
        assert_eq!(*approver.asked.lock().unwrap(), vec!["/a", "/b", "/c"]);
    }
}
