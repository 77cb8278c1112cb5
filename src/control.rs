//! What tools may change about their session besides files: the to-do list (`todowrite`), a pending switch of
//! agent (`plan_enter` / `plan_exit`), the way to put a question to the user (`question`), the git worktree the
//! session works in (`enter_worktree` / `exit_worktree`, applied after the tool round), the session's scheduled
//! jobs (`cron_*`, through the [`Jobs`] seam) and the wake-up signal `sleep` waits for (a message from the user),
//! with a shorter limit on one `sleep` where a harness sets one.
//!
//! Owns that shared state and the seams the session plugs in (a hook that saves and shows the to-do list, the
//! [`Asker`], [`Jobs`]). Must not know how the session persists or how the editor asks.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// The state of a to-do item. `completed` is accepted for `done`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    #[serde(alias = "completed")]
    Done,
}

/// How much an item matters. `medium` is accepted for `normal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    High,
    #[default]
    #[serde(alias = "medium")]
    Normal,
    Low,
}

/// One item of the session's to-do list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
    #[serde(default)]
    pub priority: Priority,
    /// The step in the present continuous ("Adding the login form"), shown while it is in progress.
    #[serde(default, rename = "activeForm", alias = "active_form", skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

/// Called with the whole list after every change (to save it and show it).
pub type TodoHook = Arc<dyn Fn(&[Todo]) + Send + Sync>;

/// A question for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub call_id: String,
    pub question: String,
    /// Choices; empty for a free-text answer.
    pub options: Vec<String>,
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Text(String),
    /// The user said no.
    Declined,
    /// The user closed the question without answering.
    Dismissed,
    /// The turn was cancelled while the question was open.
    Cancelled,
    /// The editor cannot ask this question; it must go out as a message and the turn must end.
    Unavailable,
}

/// The seam to the user for questions. Implemented by the `acp` layer.
pub trait Asker: Send + Sync {
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Answer>;
}

/// A git worktree a session works in (made by `enter_worktree`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// The worktree's top directory.
    pub path: PathBuf,
    /// Where the session's tools work: the worktree's copy of the session's directory.
    pub dir: PathBuf,
    /// Its branch.
    pub branch: String,
    /// The commit it started from (`exit_worktree` counts commits beyond it).
    pub base: String,
    /// The name given to `enter_worktree` (resuming by name finds it again).
    pub name: String,
    /// The repository's main work tree (where the worktree is removed from).
    pub repo: PathBuf,
}

/// A scheduled job as the `cron_*` tools see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    /// The 5-field cron expression, in local time.
    pub cron: String,
    pub prompt: String,
    pub recurring: bool,
    /// Kept in the session store and scheduled again after a restart.
    pub durable: bool,
    /// When it fires next (ISO 8601, UTC), if it will.
    pub next_run: Option<String>,
}

/// What `cron_create` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    pub cron: String,
    pub prompt: String,
    pub recurring: bool,
    pub durable: bool,
}

/// The session's scheduled jobs. Implemented by the session layer; errors are messages for the model.
pub trait Jobs: Send + Sync {
    fn create(&self, job: NewJob) -> BoxFuture<'_, Result<Job, String>>;
    fn list(&self) -> BoxFuture<'_, Vec<Job>>;
    /// `Ok(false)`: there is no such job in this session.
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, String>>;
}

/// One session's tool-visible state.
#[derive(Default)]
pub struct Control {
    todos: Mutex<Vec<Todo>>,
    on_todos: RwLock<Option<TodoHook>>,
    pending_switch: Mutex<Option<String>>,
    asker: RwLock<Option<Arc<dyn Asker>>>,
    /// The worktree the session works in now.
    worktree: Mutex<Option<Worktree>>,
    /// A change of worktree a tool asked for (`Some(None)`: back to the project), applied after the tool round.
    pending_worktree: Mutex<Option<Option<Worktree>>>,
    jobs: RwLock<Option<Arc<dyn Jobs>>>,
    /// Bumped (with why) whenever the user sends something while a turn runs; `sleep` wakes on it.
    wakes: tokio::sync::watch::Sender<(u64, &'static str)>,
    /// A shorter limit on one `sleep` than the tool's own (harnesses that call tools by the thousand).
    longest_sleep: Mutex<Option<std::time::Duration>>,
    /// Files the session's tools changed, counted.
    edits: AtomicU64,
    /// `edits` when the current list got its first unfinished item.
    edits_at_list_start: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn read<T: Clone>(lock: &RwLock<T>) -> T {
    match lock.read() {
        Ok(value) => value.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

fn write<T>(lock: &RwLock<T>, value: T) {
    match lock.write() {
        Ok(mut guard) => *guard = value,
        Err(poisoned) => *poisoned.into_inner() = value,
    }
}

impl Control {
    pub fn todos(&self) -> Vec<Todo> {
        lock(&self.todos).clone()
    }

    /// Put back a saved list (on load), without announcing it.
    pub fn restore_todos(&self, todos: Vec<Todo>) {
        *lock(&self.todos) = todos;
    }

    /// Replace the whole list, announce it, and return the list it replaced.
    pub fn set_todos(&self, todos: Vec<Todo>) -> Vec<Todo> {
        let previous = std::mem::replace(&mut *lock(&self.todos), todos.clone());
        let unfinished = |list: &[Todo]| list.iter().any(|t| t.status != TodoStatus::Done);
        if !unfinished(&previous) && unfinished(&todos) {
            self.edits_at_list_start.store(self.edits.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        if let Some(hook) = read(&self.on_todos) {
            hook(&todos);
        }
        previous
    }

    /// A tool changed a file.
    pub fn note_edit(&self) {
        self.edits.fetch_add(1, Ordering::Relaxed);
    }

    /// Files changed since the current to-do list got its first unfinished item.
    pub fn edits_since_list_start(&self) -> u64 {
        self.edits.load(Ordering::Relaxed).saturating_sub(self.edits_at_list_start.load(Ordering::Relaxed))
    }

    pub fn on_todos(&self, hook: TodoHook) {
        write(&self.on_todos, Some(hook));
    }

    /// Ask for a switch to `agent` once the current tool round is over.
    pub fn request_switch(&self, agent: &str) {
        *lock(&self.pending_switch) = Some(agent.to_string());
    }

    /// The switch to apply now, if one was requested.
    pub fn take_switch(&self) -> Option<String> {
        lock(&self.pending_switch).take()
    }

    pub fn set_asker(&self, asker: Option<Arc<dyn Asker>>) {
        write(&self.asker, asker);
    }

    pub fn asker(&self) -> Option<Arc<dyn Asker>> {
        read(&self.asker)
    }

    /// The worktree the session works in, counting a change asked for in this tool round.
    pub fn worktree(&self) -> Option<Worktree> {
        match lock(&self.pending_worktree).clone() {
            Some(pending) => pending,
            None => lock(&self.worktree).clone(),
        }
    }

    /// Put back the worktree a stored session was in (on load), without a pending change.
    pub fn restore_worktree(&self, worktree: Option<Worktree>) {
        *lock(&self.worktree) = worktree;
    }

    /// Move the session into `worktree` (`None`: back to the project) once the current tool round is over.
    pub fn request_worktree(&self, worktree: Option<Worktree>) {
        *lock(&self.pending_worktree) = Some(worktree);
    }

    /// The change of worktree to apply now, if one was asked for; it becomes the current worktree.
    pub fn take_worktree_change(&self) -> Option<Option<Worktree>> {
        let change = lock(&self.pending_worktree).take()?;
        *lock(&self.worktree) = change.clone();
        Some(change)
    }

    pub fn set_jobs(&self, jobs: Option<Arc<dyn Jobs>>) {
        write(&self.jobs, jobs);
    }

    /// The session's scheduled jobs; `None` where scheduling is off or not offered (headless runs).
    pub fn jobs(&self) -> Option<Arc<dyn Jobs>> {
        read(&self.jobs)
    }

    /// The user sent something while a turn runs (`why`, as `sleep` reports it): wake a `sleep`.
    pub fn wake(&self, why: &'static str) {
        self.wakes.send_modify(|(n, reason)| {
            *n += 1;
            *reason = why;
        });
    }

    /// Changes when [`Control::wake`] is called; the value says why.
    pub fn wakes(&self) -> tokio::sync::watch::Receiver<(u64, &'static str)> {
        self.wakes.subscribe()
    }

    /// Cut every `sleep` of this session at `limit` (below the tool's own limit; a longer one changes nothing).
    pub fn limit_sleep(&self, limit: std::time::Duration) {
        *lock(&self.longest_sleep) = Some(limit);
    }

    /// The limit [`Control::limit_sleep`] set, if any.
    pub fn longest_sleep(&self) -> Option<std::time::Duration> {
        *lock(&self.longest_sleep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn todo_items_accept_common_synonyms_and_default_to_normal_priority() {
        let items: Vec<Todo> = serde_json::from_value(serde_json::json!([
            {"content": "a", "status": "completed", "priority": "medium"},
            {"content": "b", "status": "in_progress", "activeForm": "Doing b"},
        ]))
        .unwrap();
        assert_eq!(
            items,
            vec![
                Todo {
                    content: "a".into(),
                    status: TodoStatus::Done,
                    priority: Priority::Normal,
                    active_form: None
                },
                Todo {
                    content: "b".into(),
                    status: TodoStatus::InProgress,
                    priority: Priority::Normal,
                    active_form: Some("Doing b".into())
                },
            ]
        );
    }

    #[test]
    fn every_change_reaches_the_hook_and_a_switch_is_taken_once() {
        let control = Control::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        control.on_todos(Arc::new(move |todos| sink.lock().unwrap().push(todos.len())));
        let item = Todo {
            content: "x".into(),
            status: TodoStatus::Pending,
            priority: Priority::High,
            active_form: None,
        };
        assert_eq!(control.set_todos(vec![item.clone()]), vec![]);
        assert_eq!(control.set_todos(vec![]), vec![item.clone()]);
        assert_eq!(*seen.lock().unwrap(), vec![1, 0]);
        control.set_todos(vec![]);
        control.note_edit();
        assert_eq!(control.edits_since_list_start(), 1);
        control.set_todos(vec![item.clone()]);
        assert_eq!(control.edits_since_list_start(), 0, "a new list starts counting afresh");
        control.note_edit();
        assert_eq!(control.edits_since_list_start(), 1);
        control.request_switch("plan");
        assert_eq!(control.take_switch(), Some("plan".into()));
        assert_eq!(control.take_switch(), None);
    }
}
