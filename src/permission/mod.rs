//! Permission: the categories of seed 000 §8.4, rules `{permission, pattern, action}`, their evaluation, and
//! the [`Approver`] seam through which the user is asked.
//!
//! Owns the decision "may this run?". Must not know how the question reaches the user (the `acp` layer
//! implements [`Approver`]) and must not execute anything itself.

pub mod protected;
pub mod remembered;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::display::{Content, Presentation};

/// The permission categories of seed 000 §8.4, plus `external_directory` and `secret-read` for the file tools.
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
    /// A read, search or listing outside the session's directories (asked per directory).
    #[serde(rename = "external_directory")]
    ExternalDirectory,
    /// A file tool reading a secret file (`.env`, a private key): asked every time.
    #[serde(rename = "secret-read")]
    SecretRead,
    /// A tool of an MCP server; patterns are `server/tool`.
    #[serde(rename = "mcp")]
    Mcp,
    /// Work that runs later without anyone watching (`cron_create`): asked in every mode, never "always".
    #[serde(rename = "schedule")]
    Schedule,
}

impl Category {
    pub const ALL: [Category; 12] = [
        Category::Read,
        Category::Edit,
        Category::Shell,
        Category::Webfetch,
        Category::PlanEnter,
        Category::PlanExit,
        Category::DestructiveShell,
        Category::SecretShell,
        Category::ExternalDirectory,
        Category::SecretRead,
        Category::Mcp,
        Category::Schedule,
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
            Category::ExternalDirectory => "external_directory",
            Category::SecretRead => "secret-read",
            Category::Mcp => "mcp",
            Category::Schedule => "schedule",
        }
    }

    /// Categories whose asks can never be answered "always allow".
    pub fn always_asks(self) -> bool {
        matches!(
            self,
            Category::DestructiveShell | Category::SecretShell | Category::SecretRead | Category::Schedule
        )
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

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }
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

/// The end of a shell pattern that covers one command exactly, not every command it starts.
pub const EXACTLY: &str = " (exactly)";

/// A shell pattern covering exactly `command` (normalised as the classifier writes it).
pub fn exact_pattern(command: &str) -> String {
    format!("{command}{EXACTLY}")
}

/// Does `pattern` cover `value` for this category? Shell categories use whole-word command prefixes
/// (`git commit` covers `git commit -m x` but not `git committed`), or the whole command when the pattern ends in
/// [`EXACTLY`]; the others use globs.
fn pattern_matches(category: Category, pattern: &str, value: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match category {
        Category::Shell | Category::DestructiveShell | Category::SecretShell
            if pattern.ends_with(EXACTLY) =>
        {
            pattern == value
        }
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
        Self { rules: agent_rules("build") }
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
    /// Set by the service when the call changes a protected path (why): it asks in every mode and the ask
    /// offers no "always".
    pub protected: Option<String>,
}

impl Ask {
    /// May the user answer "always allow"? Not for destructive or secret-touching commands, nor protected paths.
    pub fn offers_always(&self) -> bool {
        !self.category.always_asks() && self.protected.is_none()
    }
}

/// The user's answer to an [`Ask`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// The turn was cancelled while the question was open.
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
    /// A rule denies it; the model is told which one and why.
    Denied {
        rule: Rule,
        why: String,
    },
    /// The user said no; the model is told and the turn goes on.
    Rejected,
    /// The turn must end as cancelled.
    Cancelled,
}

/// Why making scheduled work asks in every mode: it runs later, when nobody may be watching.
pub const SCHEDULED: &str = "A scheduled job runs its prompt later, when nobody may be watching.";

/// How an ask that must be asked every time names its reason.
fn label(category: Category) -> &'static str {
    if category == Category::Schedule { "Scheduled work" } else { "Protected" }
}

/// The value `todowrite` is checked against under `edit`: it changes the session's plan, not a file.
pub const TODOS_PATTERN: &str = "session:todos";

/// The rules every agent (mode) starts from; user, project and remembered rules come after and win.
/// Leaving plan mode asks, so the user approves the plan it shows.
pub fn agent_rules(agent: &str) -> Vec<Rule> {
    let build = vec![
        Rule::new("*", "*", Action::Ask),
        Rule::new("read", "*", Action::Allow),
        Rule::new("edit", TODOS_PATTERN, Action::Allow),
        Rule::new("plan_enter", "*", Action::Allow),
    ];
    match agent {
        "plan" => vec![
            Rule::new("*", "*", Action::Ask),
            Rule::new("read", "*", Action::Allow),
            Rule::new("edit", TODOS_PATTERN, Action::Allow),
            Rule::new("plan_enter", "*", Action::Deny),
        ],
        "accept-edits" => [build, vec![Rule::new("edit", "*", Action::Allow)]].concat(),
        "yolo" => vec![
            Rule::new("*", "*", Action::Allow),
            Rule::new("secret-shell", "*", Action::Ask),
            Rule::new("secret-read", "*", Action::Ask),
        ],
        _ => build,
    }
}

/// Tools that change session state only and stay usable in plan mode (planning is not editing).
const PLAN_SAFE_TOOLS: [&str; 1] = ["todowrite"];

/// The fail-closed check in front of every rule: plan mode never edits and never runs anything that is not a
/// read, whatever the rules say.
pub fn guard(agent: &str, ask: &Ask) -> Option<(Rule, String)> {
    // An MCP tool may change anything; only one its server marks read-only is even asked about in plan mode.
    let mcp_change = ask.category == Category::Mcp && ask.presentation.kind != crate::display::Kind::Read;
    let forbidden = mcp_change
        || matches!(
            ask.category,
            Category::Edit
                | Category::Shell
                | Category::DestructiveShell
                | Category::SecretShell
                | Category::Schedule
        );
    (agent == "plan" && forbidden && !PLAN_SAFE_TOOLS.contains(&ask.tool.as_str())).then(|| {
        (
            Rule::new(ask.category.as_str(), "*", Action::Deny),
            "Plan mode does not change files or run commands that change anything. Finish the plan, then call plan_exit (or ask the user to switch modes).".to_string(),
        )
    })
}

/// The permission service of one session: the agent (mode) whose rules apply, rules from configuration, the
/// rules remembered from "always" answers (shared by the project's sessions and saved), and the way to ask.
/// Asks are serialised so two tool calls never interleave their questions; an "always" answer also settles the
/// asks waiting behind it.
pub struct Service {
    agent: std::sync::RwLock<String>,
    config_rules: std::sync::RwLock<Vec<Rule>>,
    remembered: Arc<remembered::Remembered>,
    approver: Option<Arc<dyn Approver>>,
    ask_lock: tokio::sync::Mutex<()>,
    /// A scheduled job's turn is running: the default mode's rules apply at most, whatever the mode.
    capped: std::sync::atomic::AtomicBool,
}

/// The mode whose rules a scheduled job's turn gets in a session in `agent`: never more than the default's
/// (plan mode stays plan mode).
pub fn at_most_default(agent: &str) -> &str {
    if agent == "plan" { agent } else { "build" }
}

/// While held, the service gives no more than the default mode's rights ([`Service::cap`]).
pub struct Capped<'a>(&'a Service);

impl Drop for Capped<'_> {
    fn drop(&mut self) {
        self.0.capped.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `path` with symlinks resolved as far as the file system has it (the missing tail kept as is).
fn resolve_existing(path: &Path) -> PathBuf {
    let mut tail = Vec::new();
    let mut current = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(current) {
            return tail.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (current.file_name(), current.parent()) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                current = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

fn read<T: Clone>(lock: &std::sync::RwLock<T>) -> T {
    match lock.read() {
        Ok(value) => value.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

fn write<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    match lock.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Service {
    /// `remembered` holds the project's "always" rules (the project is the session directory).
    pub fn new(
        agent: &str,
        remembered: Arc<remembered::Remembered>,
        config_rules: Vec<Rule>,
        approver: Option<Arc<dyn Approver>>,
    ) -> Self {
        Self {
            agent: std::sync::RwLock::new(agent.to_string()),
            config_rules: std::sync::RwLock::new(config_rules),
            remembered,
            approver,
            ask_lock: tokio::sync::Mutex::new(()),
            capped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Give no more than the default mode's rights (plus configured and remembered rules) until the guard is
    /// dropped: for a scheduled job's turn, which nobody may be watching, whatever mode the session is in.
    pub fn cap(&self) -> Capped<'_> {
        self.capped.store(true, std::sync::atomic::Ordering::SeqCst);
        Capped(self)
    }

    /// Whether a scheduled job's turn is running ([`Service::cap`]).
    pub fn is_capped(&self) -> bool {
        self.capped.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The mode whose rules decide now.
    fn deciding_agent(&self) -> String {
        let agent = self.agent();
        if self.is_capped() { at_most_default(&agent).to_string() } else { agent }
    }

    pub fn agent(&self) -> String {
        read(&self.agent)
    }

    pub fn set_agent(&self, agent: &str) {
        *write(&self.agent) = agent.to_string();
    }

    /// Replace the rules from configuration (the user trusted the project that sets them).
    pub fn set_config_rules(&self, rules: Vec<Rule>) {
        *write(&self.config_rules) = rules;
    }

    /// Who answers this session's asks (a subagent's asks go to its parent's).
    pub fn approver(&self) -> Option<Arc<dyn Approver>> {
        self.approver.clone()
    }

    /// The rules from configuration, as they stand.
    pub fn config_rules(&self) -> Vec<Rule> {
        read(&self.config_rules)
    }

    /// The project's remembered rules (to list and revoke them).
    pub fn remembered(&self) -> &Arc<remembered::Remembered> {
        &self.remembered
    }

    fn ruleset(&self) -> Ruleset {
        let mut rules = agent_rules(&self.deciding_agent());
        rules.extend(read(&self.config_rules));
        rules.extend(self.remembered.list());
        Ruleset { rules }
    }

    /// Why this call must ask whatever the rules say: it changes a protected path (checked on the path as given
    /// and with its symlinks resolved), or names one in a command that is not read-only.
    fn protection(&self, ask: &Ask) -> Option<String> {
        let root = Path::new(self.remembered.project());
        match ask.category {
            Category::Edit => {
                ask.presentation.patterns.iter().map(Path::new).filter(|p| p.is_absolute()).find_map(|p| {
                    protected::protected(p, root)
                        .or_else(|| protected::protected(&resolve_existing(p), &resolve_existing(root)))
                })
            }
            Category::Shell | Category::DestructiveShell => ask
                .raw_input
                .get("command")
                .and_then(Value::as_str)
                .and_then(|command| protected::in_command(command, root, root)),
            Category::Schedule => Some(SCHEDULED.to_string()),
            _ => None,
        }
    }

    fn decide(&self, ask: &Ask, protected: bool) -> Result<Action, Verdict> {
        if let Some((rule, why)) = guard(&self.deciding_agent(), ask) {
            return Err(Verdict::Denied { rule, why });
        }
        let rules = self.ruleset();
        let star = ["*".to_string()];
        let patterns =
            if ask.presentation.patterns.is_empty() { &star[..] } else { &ask.presentation.patterns[..] };
        let mut overall = Action::Allow;
        for value in patterns {
            // No matching rule at all fails closed to "ask".
            match rules.evaluate(ask.category, value) {
                Some(rule) if rule.action == Action::Deny => {
                    return Err(Verdict::Denied {
                        rule: rule.clone(),
                        why: "Do not retry this call.".into(),
                    });
                }
                Some(rule) if rule.action == Action::Allow => {}
                _ => overall = Action::Ask,
            }
        }
        // A protected path asks even when a rule or the mode allows the call (only a deny beats it).
        Ok(if protected { Action::Ask } else { overall })
    }

    /// The pattern an "always" answer remembers: the command prefix for commands, the whole project for edits,
    /// the value itself otherwise.
    fn remembered_patterns(&self, ask: &Ask) -> Vec<String> {
        if ask.presentation.patterns.is_empty() {
            return vec!["*".into()];
        }
        let project = self.remembered.project().trim_end_matches('/');
        let mut patterns: Vec<String> = ask
            .presentation
            .patterns
            .iter()
            .map(|p| match ask.category {
                Category::Edit if p.starts_with(&format!("{project}/")) => format!("{project}/**"),
                _ => p.clone(),
            })
            .collect();
        patterns.dedup();
        patterns
    }

    async fn remember(&self, ask: &Ask, action: Action) {
        for pattern in self.remembered_patterns(ask) {
            self.remembered.add(Rule::new(ask.category.as_str(), &pattern, action)).await;
        }
    }

    /// Put `ask` to the user whatever the rules and the mode say (an undo that would discard newer changes, a
    /// worktree removal that would lose work). Nobody to ask is a rejection.
    pub async fn insist(&self, ask: &Ask) -> Reply {
        let Some(approver) = &self.approver else { return Reply::RejectOnce };
        let _serial = self.ask_lock.lock().await;
        approver.ask(ask).await
    }

    /// Ask the user whatever the rules would allow (a deny rule and the plan-mode guard still refuse): for code
    /// the user did not write in this conversation, such as the shell lines of a custom command. The ask offers
    /// no "always" and nothing is remembered; nobody to ask means no.
    pub async fn confirm(&self, ask: &Ask, why: &str) -> Verdict {
        if let Err(verdict) = self.decide(ask, true) {
            return verdict;
        }
        let Some(approver) = &self.approver else { return Verdict::Rejected };
        let _serial = self.ask_lock.lock().await;
        let ask = Ask { protected: Some(why.to_string()), ..ask.clone() };
        match approver.ask(&ask).await {
            Reply::AllowOnce | Reply::AllowAlways => Verdict::Allow,
            Reply::RejectOnce | Reply::RejectAlways => Verdict::Rejected,
            Reply::Cancelled => Verdict::Cancelled,
        }
    }

    /// Decide whether the call may run, asking the user when the rules say so.
    pub async fn check(&self, ask: &Ask) -> Verdict {
        let protection = self.protection(ask);
        match self.decide(ask, protection.is_some()) {
            Err(verdict) => return verdict,
            Ok(Action::Allow) => return Verdict::Allow,
            Ok(_) => {}
        }
        let Some(approver) = &self.approver else {
            // Nobody can answer: fail closed.
            return Verdict::Rejected;
        };
        let _serial = self.ask_lock.lock().await;
        // An "always" answer given to an earlier ask may already settle this one.
        match self.decide(ask, protection.is_some()) {
            Err(verdict) => return verdict,
            Ok(Action::Allow) => return Verdict::Allow,
            Ok(_) => {}
        }
        let marked;
        let ask = match protection {
            Some(why) => {
                let mut presentation = ask.presentation.clone();
                presentation
                    .content
                    .push(Content::Text(format!("**{}:** {why} This asks every time.", label(ask.category))));
                marked = Ask { protected: Some(why), presentation, ..ask.clone() };
                &marked
            }
            None => ask,
        };
        match approver.ask(ask).await {
            Reply::AllowOnce => Verdict::Allow,
            // Destructive and secret-touching commands and protected paths ask every time: "always" counts once.
            Reply::AllowAlways if !ask.offers_always() => Verdict::Allow,
            Reply::AllowAlways => {
                self.remember(ask, Action::Allow).await;
                Verdict::Allow
            }
            Reply::RejectOnce => Verdict::Rejected,
            Reply::RejectAlways => {
                self.remember(ask, Action::Deny).await;
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
        shown: Mutex<Vec<Ask>>,
    }

    impl Approver for Scripted {
        fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Reply> {
            self.asked.lock().unwrap().push(ask.presentation.title.clone());
            self.shown.lock().unwrap().push(ask.clone());
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
            protected: None,
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
    fn exact_shell_patterns_cover_only_the_very_same_command() {
        let sh = exact_pattern("sh -c 'echo hi'");
        assert_eq!(sh, "sh -c 'echo hi' (exactly)");
        assert!(pattern_matches(Category::Shell, &sh, &exact_pattern("sh -c 'echo hi'")));
        assert!(!pattern_matches(Category::Shell, &sh, &exact_pattern("sh -c 'echo hi' x")));
        assert!(!pattern_matches(Category::Shell, &sh, &exact_pattern("sh -c 'curl x | python3'")));
        assert!(!pattern_matches(Category::Shell, &sh, "sh"));
        assert!(pattern_matches(Category::Shell, "sh", &sh), "a configured prefix still covers it");
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

    fn service(agent: &str, config: Vec<Rule>, approver: Option<Arc<Scripted>>) -> Service {
        let remembered = Arc::new(remembered::Remembered::new("/p"));
        Service::new(agent, remembered, config, approver.map(|a| a as Arc<dyn Approver>))
    }

    fn scripted(replies: Vec<Reply>) -> Arc<Scripted> {
        Arc::new(Scripted {
            replies: Mutex::new(replies),
            asked: Mutex::new(vec![]),
            shown: Mutex::new(vec![]),
        })
    }

    #[tokio::test]
    async fn reads_are_allowed_by_default_without_asking() {
        assert_eq!(service("build", vec![], None).check(&ask(Category::Read, "/a")).await, Verdict::Allow);
    }

    #[tokio::test]
    async fn an_ask_without_anyone_to_answer_fails_closed() {
        assert_eq!(service("build", vec![], None).check(&ask(Category::Edit, "/a")).await, Verdict::Rejected);
    }

    #[tokio::test]
    async fn a_deny_rule_from_config_names_itself_and_never_asks() {
        let approver = scripted(vec![]);
        let s = service("build", vec![Rule::new("shell", "rm", Action::Deny)], Some(approver.clone()));
        assert_eq!(
            s.check(&ask(Category::Shell, "rm -rf x")).await,
            Verdict::Denied {
                rule: Rule::new("shell", "rm", Action::Deny),
                why: "Do not retry this call.".into()
            }
        );
        assert!(approver.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn always_answers_cover_later_asks_with_a_sensible_scope() {
        let approver =
            scripted(vec![Reply::AllowAlways, Reply::Cancelled, Reply::RejectAlways, Reply::Cancelled]);
        let s = service("build", vec![], Some(approver.clone()));
        assert_eq!(s.check(&ask(Category::Edit, "/p/a.rs")).await, Verdict::Allow);
        assert_eq!(
            s.check(&ask(Category::Edit, "/p/deep/b.rs")).await,
            Verdict::Allow,
            "edits are remembered for the project"
        );
        assert_eq!(
            s.check(&ask(Category::Edit, "/elsewhere/c.rs")).await,
            Verdict::Cancelled,
            "outside the project it asks again"
        );
        assert_eq!(s.check(&ask(Category::Shell, "git push")).await, Verdict::Rejected);
        assert_eq!(
            s.check(&ask(Category::Shell, "git push")).await,
            Verdict::Denied {
                rule: Rule::new("shell", "git push", Action::Deny),
                why: "Do not retry this call.".into()
            }
        );
        assert_eq!(s.check(&ask(Category::Shell, "git status")).await, Verdict::Cancelled);
        assert_eq!(
            *approver.asked.lock().unwrap(),
            vec!["/p/a.rs", "/elsewhere/c.rs", "git push", "git status"]
        );
        assert_eq!(
            s.remembered().list(),
            vec![Rule::new("edit", "/p/**", Action::Allow), Rule::new("shell", "git push", Action::Deny)]
        );
    }

    #[tokio::test]
    async fn plan_mode_refuses_edits_and_commands_even_when_rules_allow_them() {
        let s = service("plan", vec![Rule::new("*", "*", Action::Allow)], None);
        s.remembered().add(Rule::new("edit", "*", Action::Allow)).await;
        for category in [Category::Edit, Category::Shell, Category::DestructiveShell, Category::SecretShell] {
            assert!(matches!(s.check(&ask(category, "x")).await, Verdict::Denied { .. }), "{category:?}");
        }
        assert_eq!(s.check(&ask(Category::Read, "x")).await, Verdict::Allow);
        let mut todo = ask(Category::Edit, "todos");
        todo.tool = "todowrite".into();
        assert_eq!(s.check(&todo).await, Verdict::Allow, "planning tools stay usable");
        s.set_agent("build");
        assert_eq!(s.check(&ask(Category::Edit, "x")).await, Verdict::Allow, "the config rule applies again");
    }

    #[tokio::test]
    async fn mcp_tools_ask_and_plan_mode_refuses_those_their_server_does_not_mark_read_only() {
        let approver = scripted(vec![Reply::AllowOnce, Reply::AllowAlways]);
        let plan = service("plan", vec![], Some(approver.clone()));
        assert!(matches!(plan.check(&ask(Category::Mcp, "fx/write")).await, Verdict::Denied { .. }));
        let mut read_only = ask(Category::Mcp, "fx/echo");
        read_only.presentation.kind = crate::display::Kind::Read;
        assert_eq!(plan.check(&read_only).await, Verdict::Allow, "asked, and the user allowed it");
        let build = service("build", vec![], Some(approver.clone()));
        assert_eq!(build.check(&read_only).await, Verdict::Allow);
        assert_eq!(build.check(&read_only).await, Verdict::Allow, "remembered for fx/echo");
        assert_eq!(*approver.asked.lock().unwrap(), vec!["fx/echo", "fx/echo"]);
        assert_eq!(build.remembered().list(), vec![Rule::new("mcp", "fx/echo", Action::Allow)]);
    }

    #[tokio::test]
    async fn confirm_asks_whatever_the_rules_allow_and_offers_no_always() {
        let approver = scripted(vec![Reply::AllowAlways, Reply::AllowOnce]);
        let s = service("yolo", vec![], Some(approver.clone()));
        let line = ask(Category::Read, "ls");
        assert_eq!(s.confirm(&line, "a command's shell line").await, Verdict::Allow);
        assert_eq!(s.confirm(&line, "a command's shell line").await, Verdict::Allow);
        let shown = approver.shown.lock().unwrap().clone();
        assert_eq!(shown.len(), 2, "asked every time, even in yolo for a read-only command");
        assert!(!shown[0].offers_always());
        assert_eq!(s.remembered().list(), vec![], "nothing is remembered");
        let denied = service("build", vec![Rule::new("shell", "rm", Action::Deny)], Some(scripted(vec![])));
        assert!(matches!(denied.confirm(&ask(Category::Shell, "rm x"), "why").await, Verdict::Denied { .. }));
    }

    #[tokio::test]
    async fn each_mode_starts_from_its_own_rules() {
        let accept = service("accept-edits", vec![], None);
        assert_eq!(accept.check(&ask(Category::Edit, "/p/x")).await, Verdict::Allow);
        assert_eq!(
            accept.check(&ask(Category::Shell, "make")).await,
            Verdict::Rejected,
            "commands still ask"
        );
        let yolo = service("yolo", vec![], None);
        assert_eq!(yolo.check(&ask(Category::DestructiveShell, "rm -rf x")).await, Verdict::Allow);
        assert_eq!(
            yolo.check(&ask(Category::SecretShell, "cat .env")).await,
            Verdict::Rejected,
            "secrets still ask"
        );
    }

    fn command(line: &str) -> Ask {
        let mut ask = ask(Category::Shell, line.split_whitespace().next().unwrap());
        ask.raw_input = serde_json::json!({"command": line});
        ask
    }

    #[tokio::test]
    async fn protected_paths_ask_in_every_mode_whatever_the_rules_and_never_offer_or_remember_always() {
        for mode in ["build", "accept-edits", "yolo"] {
            let approver = scripted(vec![Reply::AllowAlways, Reply::AllowAlways, Reply::RejectOnce]);
            let s = service(mode, vec![Rule::new("*", "*", Action::Allow)], Some(approver.clone()));
            s.remembered().add(Rule::new("edit", "/p/**", Action::Allow)).await;
            let config = ask(Category::Edit, "/p/.tinycode/config.toml");
            assert_eq!(s.check(&config).await, Verdict::Allow, "{mode}");
            assert_eq!(s.check(&config).await, Verdict::Allow, "{mode}: asked again");
            assert_eq!(s.check(&command("cp hook .git/hooks/pre-commit")).await, Verdict::Rejected, "{mode}");
            assert_eq!(s.check(&ask(Category::Edit, "/p/src/main.rs")).await, Verdict::Allow, "{mode}");
            let shown = approver.shown.lock().unwrap().clone();
            assert_eq!(shown.len(), 3, "{mode}: ordinary files follow the rules");
            assert!(shown.iter().all(|a| !a.offers_always() && a.protected.is_some()), "{mode}");
            assert_eq!(
                shown[0].presentation.content,
                vec![Content::Text(
                    "**Protected:** /p/.tinycode/config.toml is a protected path: `.tinycode` holds settings that can run code or change what the agent may do. This asks every time.".into()
                )]
            );
            assert_eq!(s.remembered().list(), vec![Rule::new("edit", "/p/**", Action::Allow)], "{mode}");
        }
    }

    #[tokio::test]
    async fn scheduling_asks_in_every_mode_offers_no_always_and_plan_mode_refuses_it() {
        for mode in ["build", "accept-edits", "yolo"] {
            let approver = scripted(vec![Reply::AllowAlways, Reply::RejectOnce]);
            let s = service(mode, vec![Rule::new("*", "*", Action::Allow)], Some(approver.clone()));
            let job = ask(Category::Schedule, "session:cron");
            assert_eq!(s.check(&job).await, Verdict::Allow, "{mode}");
            assert_eq!(s.check(&job).await, Verdict::Rejected, "{mode}: asked again");
            let shown = approver.shown.lock().unwrap().clone();
            assert!(shown.iter().all(|a| !a.offers_always()), "{mode}");
            assert_eq!(
                shown[0].presentation.content,
                vec![Content::Text(format!("**Scheduled work:** {SCHEDULED} This asks every time."))]
            );
            assert_eq!(s.remembered().list(), vec![], "{mode}");
        }
        let plan = service("plan", vec![], Some(scripted(vec![])));
        assert!(matches!(plan.check(&ask(Category::Schedule, "x")).await, Verdict::Denied { .. }));
        assert!(!remembered::may_remember(&Rule::new("schedule", "*", Action::Allow)));
    }

    #[tokio::test]
    async fn a_capped_service_gives_the_default_modes_rights_and_plan_stays_plan() {
        let yolo = service("yolo", vec![], None);
        yolo.remembered().add(Rule::new("shell", "git status", Action::Allow)).await;
        {
            let _job = yolo.cap();
            assert_eq!(yolo.check(&ask(Category::Shell, "rm -rf x")).await, Verdict::Rejected);
            assert_eq!(
                yolo.check(&ask(Category::Shell, "git status")).await,
                Verdict::Allow,
                "remembered rules apply"
            );
            assert_eq!(yolo.check(&ask(Category::Read, "/a")).await, Verdict::Allow);
        }
        assert_eq!(
            yolo.check(&ask(Category::Shell, "rm -rf x")).await,
            Verdict::Allow,
            "the cap ends with the job"
        );
        let plan = service("plan", vec![], None);
        let _job = plan.cap();
        assert!(matches!(plan.check(&ask(Category::Edit, "/p/x")).await, Verdict::Denied { .. }));
    }

    #[tokio::test]
    async fn a_protected_path_is_still_denied_by_a_deny_rule_and_fails_closed_without_anyone_to_ask() {
        let s = service("yolo", vec![Rule::new("edit", "**/.git/**", Action::Deny)], None);
        assert!(matches!(s.check(&ask(Category::Edit, "/p/.git/config")).await, Verdict::Denied { .. }));
        assert_eq!(s.check(&ask(Category::Edit, "/p/.vscode/tasks.json")).await, Verdict::Rejected);
        assert_eq!(s.check(&command("git config core.hooksPath /tmp/x")).await, Verdict::Rejected);
        assert_eq!(s.check(&command("cargo build")).await, Verdict::Allow);
    }

    #[tokio::test]
    async fn a_symlink_into_a_protected_directory_is_protected_by_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(root.join(".git/hooks"), root.join("docs")).unwrap();
        let remembered = Arc::new(remembered::Remembered::new(&root.display().to_string()));
        let s = Service::new("yolo", remembered, vec![], None);
        let through = root.join("docs/pre-commit").display().to_string();
        assert_eq!(s.check(&ask(Category::Edit, &through)).await, Verdict::Rejected);
        assert_eq!(
            s.check(&ask(Category::Edit, &root.join("x.rs").display().to_string())).await,
            Verdict::Allow
        );
    }
}
