//! Background tasks of one session (`bash` with `background: true`, and `monitor`): each runs in its own
//! process group with its complete output in a log file and its tail in memory. Tasks end with their session.
//! A monitored task leaves notes for the model, delivered with its next request (seed 003's wake-ups): when it
//! exits, after `check_after` if it still runs, and when its output first matches a pattern, as asked. Output
//! in notes is fenced as untrusted text (`fence`).
//!
//! Owns the task table and the session's command environment (which foreground commands use too). Signals go
//! through `process`, which only touches groups and trees this process created.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::capture::{Capture, Exit, Spill, describe_exit};
use super::environment::Environment;
use super::fence::fence;
use super::process::{self, Group};

/// How much of a task's output is kept in memory (the log has all of it).
const TAIL_BYTES: usize = 64 * 1024;
/// Characters of output a note carries.
const NOTE_CHARS: usize = 2_000;

/// When a monitored task wakes the model (notes delivered with its next request).
#[derive(Debug, Clone, Default)]
pub struct Notify {
    /// When it exits.
    pub on_exit: bool,
    /// Once, this long after the start, if it is still running.
    pub check_after: Option<Duration>,
    /// Once, when its output first matches.
    pub pattern: Option<regex::Regex>,
}

impl Notify {
    /// Nothing: the model reads the output when it wants.
    pub fn never() -> Self {
        Self::default()
    }

    /// Only when the task exits.
    pub fn on_exit() -> Self {
        Self { on_exit: true, ..Self::default() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Background,
    Monitor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Running,
    Exited(Exit),
}

/// One tracked task.
pub struct Task {
    pub id: String,
    pub command: String,
    pub kind: Kind,
    pub pid: i32,
    pub started: SystemTime,
    pub log: PathBuf,
    state: watch::Sender<State>,
    /// Bumped on every chunk of output.
    output_seq: watch::Sender<u64>,
    tail: Mutex<Capture>,
    group: Mutex<Option<Group>>,
    /// The pattern whose first match leaves a note (cleared once it matched).
    watched: Mutex<Option<(regex::Regex, Arc<Notes>)>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// How `kill` ended a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    AlreadyFinished(Exit),
    Terminated,
    Killed,
}

impl Task {
    pub fn state(&self) -> State {
        *self.state.borrow()
    }

    /// Resolves once the task has exited.
    pub async fn exited(&self) -> Exit {
        let mut state = self.state.subscribe();
        loop {
            if let State::Exited(exit) = *state.borrow_and_update() {
                return exit;
            }
            if state.changed().await.is_err() {
                return Exit { code: None, signal: None };
            }
        }
    }

    /// A receiver that changes whenever output arrives.
    pub fn output_changes(&self) -> watch::Receiver<u64> {
        self.output_seq.subscribe()
    }

    /// The last `max_chars` characters of output.
    pub fn tail(&self, max_chars: usize) -> String {
        let text = lock(&self.tail).text(usize::MAX / 2);
        let count = text.chars().count();
        if count <= max_chars {
            return text;
        }
        let cut: String = text.chars().skip(count - max_chars).collect();
        format!("... [earlier output omitted; see the log] ...\n{cut}")
    }

    /// SIGTERM the task's processes, wait up to `grace`, then kill its whole tree.
    pub async fn stop(&self, grace: Duration) -> Stopped {
        if let State::Exited(exit) = self.state() {
            return Stopped::AlreadyFinished(exit);
        }
        let signalled = lock(&self.group).as_ref().map(|g| g.signal(libc::SIGTERM));
        if signalled.is_none() {
            return Stopped::AlreadyFinished(Exit { code: None, signal: None });
        }
        if tokio::time::timeout(grace, self.exited()).await.is_ok() {
            return Stopped::Terminated;
        }
        if let Some(group) = lock(&self.group).as_ref() {
            group.kill();
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), self.exited()).await;
        Stopped::Killed
    }

    /// The last output, fenced as untrusted text.
    pub fn fenced_tail(&self, max_chars: usize) -> String {
        fence(&format!("{} (`{}`)", self.id, self.command), &self.tail(max_chars))
    }

    /// One line describing the task.
    pub fn summary(&self) -> String {
        let status = match self.state() {
            State::Running => "running".to_string(),
            State::Exited(exit) => match describe_exit(&self.command, exit).0 {
                Some(note) => format!("finished: {}", note.trim_end_matches('.')),
                None => "finished: exit code 0".to_string(),
            },
        };
        let kind = if self.kind == Kind::Monitor { " (monitored)" } else { "" };
        format!("{} [{status}] pid {}{kind}: {}", self.id, self.pid, self.command)
    }
}

/// The tasks of one session.
pub struct Tasks {
    dir: PathBuf,
    environment: Arc<Environment>,
    next: AtomicU64,
    tasks: Mutex<BTreeMap<u64, Arc<Task>>>,
    notes: Arc<Notes>,
    /// Bumped whenever a task exits (`sleep` wakes on it).
    exits: Arc<watch::Sender<u64>>,
}

/// Notes waiting for the model's next request.
#[derive(Default)]
struct Notes {
    list: Mutex<Vec<String>>,
    /// Bumped on every note.
    added: watch::Sender<u64>,
}

impl Notes {
    fn push(&self, note: String) {
        lock(&self.list).push(note);
        self.added.send_modify(|n| *n += 1);
    }
}

impl Tasks {
    /// Task logs go to `dir`. Commands get the default environment policy until [`Tasks::with_environment`].
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            environment: Arc::new(Environment::default()),
            next: AtomicU64::new(1),
            tasks: Mutex::new(BTreeMap::new()),
            notes: Arc::default(),
            exits: Arc::new(watch::Sender::new(0)),
        }
    }

    /// Run every command of the session with `environment`.
    pub fn with_environment(mut self, environment: Arc<Environment>) -> Self {
        self.environment = environment;
        self
    }

    /// The environment the session's commands get (foreground ones too).
    pub fn environment(&self) -> &Environment {
        &self.environment
    }

    /// Start `command` in `cwd`. A `limit` stops it (SIGTERM, then SIGKILL) when it runs that long. A monitored
    /// task leaves a note when it exits.
    pub fn start(
        &self,
        command: &str,
        cwd: &Path,
        kind: Kind,
        limit: Option<Duration>,
    ) -> std::io::Result<Arc<Task>> {
        let notify = if kind == Kind::Monitor { Notify::on_exit() } else { Notify::never() };
        self.start_with(command, cwd, kind, limit, notify)
    }

    /// [`Tasks::start`], with the notes `notify` asks for.
    pub fn start_with(
        &self,
        command: &str,
        cwd: &Path,
        kind: Kind,
        limit: Option<Duration>,
        notify: Notify,
    ) -> std::io::Result<Arc<Task>> {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("task_{number}");
        let (mut child, group) = process::spawn(command, cwd, &self.environment)?;
        let log = self.dir.join(format!("{id}-{}.log", uuid::Uuid::new_v4().simple()));
        let task = Arc::new(Task {
            id,
            command: command.to_string(),
            kind,
            pid: group.pgid,
            started: SystemTime::now(),
            log: log.clone(),
            state: watch::Sender::new(State::Running),
            output_seq: watch::Sender::new(0),
            tail: Mutex::new(Capture::new(0, TAIL_BYTES)),
            group: Mutex::new(Some(group)),
            watched: Mutex::new(notify.pattern.map(|pattern| (pattern, self.notes.clone()))),
        });
        lock(&self.tasks).insert(number, task.clone());
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let (pumped, notes, exits) = (task.clone(), self.notes.clone(), self.exits.clone());
        let on_exit = notify.on_exit;
        tokio::spawn(async move {
            let exit = pump(&pumped, &mut child, stdout, stderr, Spill::always(log), limit).await;
            // Whatever the command left running goes with it.
            drop(lock(&pumped.group).take());
            if on_exit {
                let note = describe_exit(&pumped.command, exit).0.unwrap_or_else(|| "Exit code 0.".into());
                notes.push(format!(
                    "Monitored task {} (`{}`) has exited. {note}\nLast output:\n{}",
                    pumped.id,
                    pumped.command,
                    pumped.fenced_tail(NOTE_CHARS)
                ));
            }
            pumped.state.send_replace(State::Exited(exit));
            exits.send_modify(|n| *n += 1);
        });
        if let Some(after) = notify.check_after {
            tokio::spawn(scheduled_check(task.clone(), self.notes.clone(), after));
        }
        Ok(task)
    }

    /// Changes whenever one of the session's tasks exits.
    pub fn exits(&self) -> watch::Receiver<u64> {
        self.exits.subscribe()
    }

    /// The task a process belongs to: its leader, a member of its process group, or a descendant.
    pub fn owner_of(&self, pid: i32) -> Option<Arc<Task>> {
        let group = super::tree::group(pid);
        self.list().into_iter().find(|task| {
            matches!(task.state(), State::Running)
                && (task.pid == pid
                    || group == Some(task.pid)
                    || super::tree::descendants(task.pid).contains(&pid))
        })
    }

    /// A task by id (`task_3`) or by the pid of its leader.
    pub fn find(&self, key: &str) -> Option<Arc<Task>> {
        let tasks = lock(&self.tasks);
        tasks.values().find(|t| t.id == key || key.parse::<i32>().is_ok_and(|pid| pid == t.pid)).cloned()
    }

    pub fn list(&self) -> Vec<Arc<Task>> {
        lock(&self.tasks).values().cloned().collect()
    }

    /// Notes from monitored tasks, for the model's next request.
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.notes.list))
    }

    /// A receiver that changes whenever a note is left.
    pub fn notes_added(&self) -> watch::Receiver<u64> {
        self.notes.added.subscribe()
    }

    /// Stop every running task (the session is closing).
    pub fn stop_all(&self) {
        for task in self.list() {
            drop(lock(&task.group).take());
        }
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// After `after`, a note with the output so far, if the task still runs.
async fn scheduled_check(task: Arc<Task>, notes: Arc<Notes>, after: Duration) {
    if tokio::time::timeout(after, task.exited()).await.is_ok() {
        return;
    }
    notes.push(format!(
        "Scheduled check of monitored task {} (`{}`) after {}: still running. Output so far:\n{}",
        task.id,
        task.command,
        seconds(after),
        task.fenced_tail(NOTE_CHARS)
    ));
}

impl Task {
    /// After new output: the note for the watched pattern, the first time the output matches it. Runs before
    /// the output is announced, so whoever sees the output also finds the note.
    fn check_pattern(&self) {
        let mut watched = lock(&self.watched);
        let Some((pattern, notes)) = watched.as_ref() else { return };
        let tail = self.tail(usize::MAX);
        if !pattern.is_match(&tail) {
            return;
        }
        notes.push(format!(
            "Monitored task {} (`{}`): its output matched `{}`. Output so far:\n{}",
            self.id,
            self.command,
            pattern.as_str(),
            fence(&format!("{} (`{}`)", self.id, self.command), &self.tail(NOTE_CHARS))
        ));
        *watched = None;
    }
}

/// `45 s`, `1.5 s`.
fn seconds(duration: Duration) -> String {
    let ms = duration.as_millis();
    match ms {
        0..1_000 => format!("{ms} ms"),
        _ if ms.is_multiple_of(1000) => format!("{} s", ms / 1000),
        _ => format!("{:.1} s", duration.as_secs_f64()),
    }
}

async fn read_into(mut pipe: impl tokio::io::AsyncRead + Unpin, tx: tokio::sync::mpsc::Sender<Vec<u8>>) {
    let mut buffer = vec![0u8; 8192];
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 || tx.send(buffer[..n].to_vec()).await.is_err() {
            break;
        }
    }
}

/// Copy a task's output into its log and tail until it exits; enforce its time limit.
async fn pump(
    task: &Task,
    child: &mut tokio::process::Child,
    stdout: Option<tokio::process::ChildStdout>,
    stderr: Option<tokio::process::ChildStderr>,
    mut spill: Spill,
    limit: Option<Duration>,
) -> Exit {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
    if let Some(out) = stdout {
        tokio::spawn(read_into(out, tx.clone()));
    }
    if let Some(err) = stderr {
        tokio::spawn(read_into(err, tx.clone()));
    }
    drop(tx);
    let deadline = limit.map(|l| tokio::time::Instant::now() + l);
    let mut record = |chunk: &[u8]| {
        spill.push(chunk);
        lock(&task.tail).push(chunk);
        task.check_pattern();
        task.output_seq.send_modify(|n| *n += 1);
    };
    let with_group = |act: &dyn Fn(&Group)| {
        if let Some(group) = lock(&task.group).as_ref() {
            act(group);
        }
    };
    let status = loop {
        tokio::select! {
            Some(chunk) = rx.recv() => record(&chunk),
            status = child.wait() => break status.ok(),
            () = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => {
                with_group(&|g| { g.signal(libc::SIGTERM); });
                let grace = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
                match grace {
                    Ok(status) => break status.ok(),
                    Err(_) => {
                        with_group(&Group::kill);
                        break child.wait().await.ok();
                    }
                }
            }
        }
    };
    // The leader is gone: stop the rest of its group so the pipes close, then drain them.
    with_group(&|g| {
        g.mark_reaped();
        g.kill();
    });
    while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(2), rx.recv()).await {
        record(&chunk);
    }
    let _ = spill.saved();
    let (code, signal) = status.map(process::exit_parts).unwrap_or((None, None));
    Exit { code, signal }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_task_runs_to_completion_with_its_output_logged_and_its_status_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let tasks = Tasks::new(dir.path().join("logs"));
        let task = tasks.start("echo one; echo two >&2; exit 3", dir.path(), Kind::Background, None).unwrap();
        assert_eq!(task.id, "task_1");
        let exit = task.exited().await;
        assert_eq!(exit, Exit { code: Some(3), signal: None });
        let log = std::fs::read_to_string(&task.log).unwrap();
        assert!(log.contains("one\n") && log.contains("two\n"), "{log}");
        assert_eq!(
            task.summary(),
            format!("task_1 [finished: Exit code 3] pid {}: echo one; echo two >&2; exit 3", task.pid)
        );
        assert!(tasks.find("task_1").is_some());
        assert!(tasks.find(&task.pid.to_string()).is_some());
        assert!(tasks.find("task_9").is_none());
    }

    #[tokio::test]
    async fn stopping_a_task_terminates_its_group_and_a_monitor_leaves_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let tasks = Tasks::new(dir.path().to_path_buf());
        let task = tasks.start("echo started; sleep 30", dir.path(), Kind::Monitor, None).unwrap();
        let mut changes = task.output_changes();
        while !task.tail(100).contains("started") {
            changes.changed().await.unwrap();
        }
        assert_eq!(task.stop(Duration::from_secs(5)).await, Stopped::Terminated);
        assert_eq!(task.exited().await.signal, Some(libc::SIGTERM));
        let notes = tasks.take_notes();
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with(
                "Monitored task task_1 (`echo started; sleep 30`) has exited. Killed by SIGTERM"
            ),
            "{}",
            notes[0]
        );
        assert!(
            notes[0].ends_with(
                "Last output:\n<untrusted-output source=\"task_1 (`echo started; sleep 30`)\">\nstarted\n</untrusted-output>"
            ),
            "{}",
            notes[0]
        );
        assert!(tasks.take_notes().is_empty());
        assert_eq!(
            task.stop(Duration::from_secs(1)).await,
            Stopped::AlreadyFinished(Exit { code: None, signal: Some(libc::SIGTERM) })
        );
    }

    #[tokio::test]
    async fn a_pattern_wakes_the_model_once_and_a_scheduled_check_reports_a_running_task() {
        let dir = tempfile::tempdir().unwrap();
        let tasks = Tasks::new(dir.path().to_path_buf());
        let notify = Notify {
            on_exit: false,
            check_after: None,
            pattern: Some(regex::Regex::new("listening on \\d+").unwrap()),
        };
        let mut added = tasks.notes_added();
        let task = tasks
            .start_with(
                "echo booting; echo listening on 8080; echo listening on 8081; sleep 30",
                dir.path(),
                Kind::Monitor,
                None,
                notify,
            )
            .unwrap();
        added.changed().await.unwrap();
        let notes = tasks.take_notes();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("Monitored task task_1 (`echo booting; echo listening on 8080; echo listening on 8081; sleep 30`): its output matched `listening on \\d+`. Output so far:\n<untrusted-output"), "{}", notes[0]);
        task.stop(Duration::from_secs(5)).await;
        assert!(tasks.take_notes().is_empty(), "no exit note was asked for");

        let checked = tasks
            .start_with(
                "sleep 30",
                dir.path(),
                Kind::Monitor,
                None,
                Notify { check_after: Some(Duration::from_millis(1)), ..Notify::never() },
            )
            .unwrap();
        added.changed().await.unwrap();
        let notes = tasks.take_notes();
        assert_eq!(
            notes,
            vec!["Scheduled check of monitored task task_2 (`sleep 30`) after 1 ms: still running. Output so far:\n<untrusted-output source=\"task_2 (`sleep 30`)\">\n\n</untrusted-output>".to_string()]
        );
        checked.stop(Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn a_time_limit_stops_a_task() {
        let dir = tempfile::tempdir().unwrap();
        let tasks = Tasks::new(dir.path().to_path_buf());
        let task =
            tasks.start("sleep 30", dir.path(), Kind::Background, Some(Duration::from_millis(50))).unwrap();
        assert_eq!(task.exited().await.signal, Some(libc::SIGTERM));
    }
}
