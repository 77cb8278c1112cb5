//! Persistence: one SQLite database (bundled SQLite) holding sessions, their messages and parts, todos,
//! remembered permission rules, token usage, checkpoints (what each turn changed) and durable scheduled jobs. WAL mode and a busy timeout let several tinycode processes
//! (several editor windows) share the file; ordered migrations are tracked in `PRAGMA user_version`.
//!
//! All SQL runs on one dedicated thread per process (`worker`); callers await the result, so blocking never
//! happens on the async runtime. A write the database refuses for now is held and retried there, in order; a
//! damaged file found at start is moved aside (`damage`) and a fresh database takes its place.
//! Owns the schema and the SQL. Must not know about ACP or the turn loop.

pub mod checkpoints;
pub mod damage;
pub mod inspect;
pub mod jobs;
pub mod messages;
pub mod rules;
pub mod sessions;
mod worker;

pub use worker::{BUSY_TIMEOUT_VAR, Fault, Health, Sidelined, Tuning};
use worker::{Job, Kind, Worker, Write};

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;

/// Why a store operation failed. Handled by the session layer: a failure to open ends the request with an
/// error naming the database (and tells the editor its sessions are not saved); a write the database refuses
/// is held and retried by the worker, and the session tells the editor at the end of the turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the session database {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("session database error: {0}")]
    Sql(String),
    #[error("the session database is closed")]
    Closed,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sql(e.to_string())
    }
}

/// The database file inside the data directory (`TINYCODE_DATA_DIR`).
pub fn database_path(data_dir: &Path) -> PathBuf {
    data_dir.join("tinycode.db")
}

/// How long a write waits for another process's transaction before failing.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Migrations in order; entry `n` takes the schema from version `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    title TEXT,
    mode TEXT NOT NULL DEFAULT 'build',
    model TEXT,
    thought_level TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, id DESC);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE TABLE parts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX parts_by_message ON parts (message_id, seq);
CREATE TABLE todos (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    items TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE permission_rules (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project TEXT NOT NULL,
    permission TEXT NOT NULL,
    pattern TEXT NOT NULL,
    action TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (project, permission, pattern)
);
CREATE TABLE usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
"#,
    r#"
ALTER TABLE sessions ADD COLUMN parent_id TEXT REFERENCES sessions (id) ON DELETE CASCADE;
ALTER TABLE sessions ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN agent TEXT;
CREATE INDEX sessions_by_parent ON sessions (parent_id, created_at);
ALTER TABLE usage ADD COLUMN via TEXT;
"#,
    r#"
ALTER TABLE sessions ADD COLUMN worktree TEXT;
CREATE TABLE checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    prompt TEXT NOT NULL,
    uncovered TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    undone_at INTEGER
);
CREATE INDEX checkpoints_by_session ON checkpoints (session_id, id);
CREATE TABLE checkpoint_files (
    checkpoint_id INTEGER NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    before BLOB,
    after TEXT,
    PRIMARY KEY (checkpoint_id, path)
);
CREATE TABLE cron_jobs (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    cron TEXT NOT NULL,
    prompt TEXT NOT NULL,
    recurring INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    last_fired INTEGER
);
"#,
    // A job fires only in a process serving its project; what an unattended run did waits for the editor.
    r#"
ALTER TABLE cron_jobs ADD COLUMN project TEXT NOT NULL DEFAULT '';
UPDATE cron_jobs SET project = COALESCE((SELECT cwd FROM sessions WHERE sessions.id = cron_jobs.session_id), '');
CREATE INDEX cron_jobs_by_project ON cron_jobs (project);
CREATE TABLE job_reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    job_id TEXT NOT NULL,
    ran_at INTEGER NOT NULL,
    report TEXT NOT NULL
);
CREATE INDEX job_reports_by_session ON job_reports (session_id, id);
"#,
];

/// A handle to the database thread. Cheap to clone; the thread ends when the last handle is dropped.
#[derive(Clone)]
pub struct Store {
    jobs: mpsc::Sender<Job>,
    pub path: PathBuf,
    health: tokio::sync::watch::Receiver<Health>,
}

fn configure(conn: &mut Connection, busy_timeout: Duration) -> Result<(), rusqlite::Error> {
    conn.busy_timeout(busy_timeout)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // SQLite's page cache (2 MB by default) grew with every message written and stayed: the agent's memory rose
    // with each long answer. 256 KiB holds what a turn touches; the rest is in the system's file cache.
    conn.pragma_update(None, "cache_size", -256)?;
    damage::check_whole(conn)?;
    migrate(conn)
}

/// Apply the migrations the database has not seen, each in its own transaction. A database already up to date
/// is not written to (so one another process holds locked, or one that refuses writes, still opens for reading,
/// its writes held until it takes them).
fn migrate(conn: &mut Connection) -> Result<(), rusqlite::Error> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version as usize >= MIGRATIONS.len() {
        return Ok(());
    }
    loop {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        let Some(sql) = MIGRATIONS.get(version as usize) else { return Ok(()) };
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
    }
}

/// Open (creating if needed) and configure the database at `path`. A damaged file there is moved aside and a
/// fresh database made in its place (said on stderr, and returned for the editor).
fn connect(path: &Path, tuning: &Tuning) -> Result<(Connection, Option<Sidelined>), StoreError> {
    let failed = |message: String| StoreError::Open { path: path.to_path_buf(), message };
    // The database holds every prompt and every file read: the folder and the file are the user's alone.
    if let Some(dir) = path.parent() {
        crate::private::secure_data_dir(dir).map_err(|e| failed(e.to_string()))?;
    }
    let private = |path: &Path| crate::private::touch(path).map_err(|e| failed(e.to_string()));
    private(path)?;
    let judged = damage::identity(path);
    let error = match connect_once(path, tuning) {
        Ok(conn) => return Ok((conn, None)),
        Err(e) if damage::is_damage(&e) && tuning.sideline_damaged => e,
        Err(e) => return Err(failed(e.to_string())),
    };
    let reason = error.to_string();
    let moved = damage::sideline(path, judged).map_err(|e| {
        failed(format!("{reason}; it could not be moved aside ({e}), so it was left as it is"))
    })?;
    private(path)?;
    let conn = connect_once(path, tuning).map_err(|e| failed(e.to_string()))?;
    let sidelined = moved.map(|moved_to| {
        tracing::error!(
            "the session database {} is damaged ({reason}): moved, unchanged, to {}; starting a fresh one",
            path.display(),
            moved_to.display()
        );
        Sidelined { damaged: path.to_path_buf(), moved_to, reason }
    });
    Ok((conn, sidelined))
}

fn connect_once(path: &Path, tuning: &Tuning) -> Result<Connection, rusqlite::Error> {
    let mut conn = Connection::open(path)?;
    let mut waited = Duration::ZERO;
    loop {
        match configure(&mut conn, tuning.busy_timeout) {
            Ok(()) => return Ok(conn),
            // Two agents making a new database at once both want it whole to switch it to WAL; SQLite then fails
            // one of them at once rather than wait (it would deadlock). The other is done within milliseconds.
            Err(e) if is_busy(&e) && waited < tuning.busy_timeout => {
                std::thread::sleep(OPEN_RETRY);
                waited += OPEN_RETRY;
            }
            Err(e) => return Err(e),
        }
    }
}

/// How long an open waits before trying again when another agent holds the new database.
const OPEN_RETRY: Duration = Duration::from_millis(5);

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// A database being opened on its own thread ([`Store::open_in_background`]).
pub struct Opening(tokio::sync::oneshot::Receiver<Result<Store, StoreError>>);

impl Opening {
    /// The store, once open.
    pub async fn store(self) -> Result<Store, StoreError> {
        self.0.await.unwrap_or(Err(StoreError::Closed))
    }
}

/// A store for the opened `conn`, and the worker that will run its jobs.
fn started(
    path: &Path,
    conn: Connection,
    sidelined: Option<Sidelined>,
    tuning: Tuning,
) -> (Store, Worker, mpsc::Receiver<Job>) {
    let (jobs, queue) = mpsc::channel::<Job>();
    let (health, watch) = tokio::sync::watch::channel(Health { sidelined, ..Health::default() });
    (
        Store { jobs, path: path.to_path_buf(), health: watch },
        Worker::new(conn, path.to_path_buf(), tuning, health),
        queue,
    )
}

impl Store {
    /// Open (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Self::open_with(path, Tuning::default())
    }

    /// [`Store::open`] with these waits (and, in tests, a fault switch).
    pub fn open_with(path: &Path, tuning: Tuning) -> Result<Store, StoreError> {
        let (conn, sidelined) = connect(path, &tuning)?;
        let (store, worker, queue) = started(path, conn, sidelined, tuning);
        std::thread::Builder::new()
            .name("tinycode-store".into())
            .spawn(move || worker.run(queue))
            .map_err(|e| StoreError::Open { path: path.to_path_buf(), message: e.to_string() })?;
        Ok(store)
    }

    /// Start opening the database at `path` on the thread that will run its jobs, and return at once: the
    /// agent opens it beside its own start instead of when the first session needs it.
    pub fn open_in_background(path: PathBuf, tuning: Tuning) -> Opening {
        let (opened, opening) = tokio::sync::oneshot::channel();
        let thread = path.clone();
        let spawned =
            std::thread::Builder::new().name("tinycode-store".into()).spawn(move || {
                match connect(&thread, &tuning) {
                    Ok((conn, sidelined)) => {
                        let (store, worker, queue) = started(&thread, conn, sidelined, tuning);
                        let _ = opened.send(Ok(store));
                        worker.run(queue);
                    }
                    Err(e) => {
                        let _ = opened.send(Err(e));
                    }
                }
            });
        match spawned {
            Ok(_) => Opening(opening),
            Err(e) => {
                let (failed, opening) = tokio::sync::oneshot::channel();
                let _ = failed.send(Err(StoreError::Open { path, message: e.to_string() }));
                Opening(opening)
            }
        }
    }

    /// How the database is doing: writes held in memory, the last failure, a damaged file moved aside.
    pub fn health(&self) -> Health {
        self.health.borrow().clone()
    }

    /// Follow [`Store::health`] as it changes.
    pub fn watch_health(&self) -> tokio::sync::watch::Receiver<Health> {
        self.health.clone()
    }

    /// Try the held writes now (after everything queued so far), and say how the database is doing then.
    pub async fn save_now(&self) -> Health {
        let (reply, answer) = tokio::sync::oneshot::channel();
        if self.jobs.send(Job::SaveNow(reply)).is_err() {
            return self.health();
        }
        answer.await.unwrap_or_else(|_| self.health())
    }

    /// Run `work` on the database thread.
    pub async fn call<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.queue(work).await
    }

    /// Queue `work` on the database thread now (after everything queued before, before everything queued after),
    /// and wait for its result when the returned future is awaited.
    pub fn queue<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + 'static {
        self.seeing_held(move |conn, _| work(conn))
    }

    /// [`Store::queue`] for a read that also sees the sessions and messages still held in memory.
    fn seeing_held<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection, &worker::Held) -> Result<T, rusqlite::Error> + Send + 'static,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + 'static {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = Job::Read(Box::new(move |conn, held| {
            let _ = reply.send(work(conn, held).map_err(StoreError::from));
        }));
        let sent = self.jobs.send(job).map_err(|_| StoreError::Closed);
        async move {
            sent?;
            answer.await.map_err(|_| StoreError::Closed)?
        }
    }

    /// Queue the write `work` without waiting for it. Writes run in the order they were queued, so writes queued
    /// one after another (even from synchronous code) land in that order; one the database refuses for now is
    /// held with every later one and tried again (so `work` may run more than once: one statement or one
    /// transaction). Errors are logged; [`Store::health`] says what is held.
    pub fn submit(
        &self,
        what: &'static str,
        work: impl FnMut(&mut Connection) -> Result<(), rusqlite::Error> + Send + 'static,
    ) {
        self.write_later(what, Kind::Other(Box::new(work)));
    }

    fn write_later(&self, what: &'static str, kind: Kind) {
        if self.jobs.send(Job::Write(Write { what, kind })).is_err() {
            tracing::error!("could not save {what}: the session database is closed");
        }
    }

    /// Wait until every job queued so far has run.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.call(|_| Ok(())).await
    }

    /// Fold the write-ahead log into the database and empty it, as closing the last connection would. The agent
    /// exits without closing its connection, and the next start would otherwise read the whole log back (it grew
    /// by every session written, so every start got slower). Runs after everything queued so far. Best effort:
    /// while another agent reads the database the log stays as it is, and this does not wait for it.
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        self.call(|conn| {
            let busy: i64 = conn.query_row("PRAGMA busy_timeout", [], |row| row.get(0))?;
            let busy = Duration::from_millis(busy.max(0) as u64);
            conn.busy_timeout(Duration::ZERO)?;
            let folded = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            conn.busy_timeout(busy)?;
            folded
        })
        .await
    }

    /// The schema version (for tests and diagnostics).
    pub async fn version(&self) -> Result<i64, StoreError> {
        self.call(|conn| conn.query_row("PRAGMA user_version", [], |row| row.get(0))).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn opening_twice_migrates_once_and_uses_wal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/tinycode.db");
        let first = Store::open(&path).unwrap();
        assert_eq!(first.version().await.unwrap(), MIGRATIONS.len() as i64);
        let second = Store::open(&path).unwrap();
        assert_eq!(second.version().await.unwrap(), MIGRATIONS.len() as i64);
        let mode: String =
            second.call(|c| c.query_row("PRAGMA journal_mode", [], |r| r.get(0))).await.unwrap();
        assert_eq!(mode, "wal");
    }

    #[tokio::test]
    async fn a_database_another_process_holds_locked_at_start_opens_and_its_writes_wait_for_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tinycode.db");
        drop(Store::open(&path).unwrap());
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let tuning = Tuning { busy_timeout: Duration::from_millis(20), ..Tuning::default() };
        let store = Store::open_with(&path, tuning).unwrap();
        store.submit("a rule", |c| {
            c.execute_batch("INSERT INTO permission_rules (project, permission, pattern, action, created_at) VALUES ('/p', 'shell', 'ls', 'allow', 1)")
        });
        let held = store.save_now().await;
        assert_eq!((held.held, held.failure.as_deref()), (1, Some("database is locked")));
        holder.execute_batch("ROLLBACK").unwrap();
        assert_eq!(store.save_now().await, Health::default());
        let rules =
            store.call(|c| c.query_row("SELECT count(*) FROM permission_rules", [], |r| r.get::<_, i64>(0)));
        assert_eq!(rules.await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_checkpoint_empties_the_log_so_the_next_open_has_nothing_to_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tinycode.db");
        let store = Store::open(&path).unwrap();
        store
            .call(|c| c.execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (7)"))
            .await
            .unwrap();
        let log = dir.path().join("tinycode.db-wal");
        assert!(std::fs::metadata(&log).unwrap().len() > 0, "written to the log first");
        store.checkpoint().await.unwrap();
        assert_eq!(std::fs::metadata(&log).unwrap().len(), 0);
        let reopened = Store::open(&path).unwrap();
        let n = reopened.call(|c| c.query_row("SELECT n FROM t", [], |r| r.get::<_, i64>(0))).await.unwrap();
        assert_eq!(n, 7, "nothing lost");
        // Another connection reading does not hold the checkpoint up, and loses nothing either.
        let reader = rusqlite::Connection::open(&path).unwrap();
        let tx = reader.unchecked_transaction().unwrap();
        let _: i64 = tx.query_row("SELECT n FROM t", [], |r| r.get(0)).unwrap();
        store.call(|c| c.execute_batch("INSERT INTO t VALUES (8)")).await.unwrap();
        store.checkpoint().await.unwrap();
        drop(tx);
        let count =
            reopened.call(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))).await;
        assert_eq!(count.unwrap(), 2);
    }

    #[test]
    fn agents_opening_a_new_database_at_the_same_moment_all_get_it() {
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("tinycode.db");
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
            let openers: Vec<_> = (0..6)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        Store::open(&path).map(|_| ()).map_err(|e| e.to_string())
                    })
                })
                .collect();
            for opener in openers {
                assert_eq!(opener.join().unwrap(), Ok(()), "round {round}");
            }
        }
    }

    #[tokio::test]
    async fn a_store_opened_in_the_background_is_migrated_and_runs_jobs_in_the_order_queued() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/tinycode.db");
        let store = Store::open_in_background(path.clone(), Tuning::default()).store().await.unwrap();
        assert_eq!((store.path.clone(), store.version().await.unwrap()), (path, MIGRATIONS.len() as i64));
        let first = store.queue(|c| c.execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)"));
        let second = store.queue(|c| c.query_row("SELECT n FROM t", [], |r| r.get::<_, i64>(0)));
        assert_eq!(second.await.unwrap(), 1, "queued after the table was made, though awaited first");
        first.await.unwrap();
    }

    #[tokio::test]
    async fn a_database_that_cannot_be_opened_in_the_background_says_which() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        let path = dir.path().join("file/tinycode.db");
        match Store::open_in_background(path.clone(), Tuning::default()).store().await {
            Err(StoreError::Open { path: named, .. }) => assert_eq!(named, path),
            other => panic!("{:?}", other.map(|s| s.path)),
        }
    }

    #[tokio::test]
    async fn the_page_cache_is_bounded_so_memory_stays_flat_as_sessions_grow() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("tinycode.db")).unwrap();
        let pages: i64 = store.call(|c| c.query_row("PRAGMA cache_size", [], |r| r.get(0))).await.unwrap();
        assert_eq!(pages, -256, "256 KiB");
    }

    /// The names of the files in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Open `path` after `damage` was done to it: it must be moved aside byte for byte, for `reason`.
    async fn sidelined_after(damage: impl FnOnce(&Path), reason: &str) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tinycode.db");
        // Closed before the damage (the last connection to close folds the log in and removes it).
        let old = Connection::open(&path).unwrap();
        old.pragma_update(None, "journal_mode", "WAL").unwrap();
        old.execute_batch("CREATE TABLE t (n TEXT); INSERT INTO t VALUES (hex(randomblob(20000)))").unwrap();
        old.close().unwrap();
        damage(&path);
        let damaged = std::fs::read(&path).unwrap();
        let store = Store::open(&path).unwrap();
        let sidelined = store.health().sidelined.unwrap();
        assert_eq!(sidelined.damaged, path);
        assert!(sidelined.reason.starts_with(reason), "{}", sidelined.reason);
        assert_eq!(std::fs::read(&sidelined.moved_to).unwrap(), damaged, "moved unchanged");
        assert_eq!(store.version().await.unwrap(), MIGRATIONS.len() as i64, "a fresh database");
        drop(store);
        // The next start finds the fresh one whole and moves nothing.
        assert_eq!(Store::open(&path).unwrap().health().sidelined, None);
        let aside = sidelined.moved_to.file_name().unwrap().to_string_lossy().into_owned();
        // Besides their logs (which come and go with connections): the damaged file and the fresh one.
        let databases: Vec<String> =
            names(dir.path()).into_iter().filter(|n| !n.ends_with("-wal") && !n.ends_with("-shm")).collect();
        assert_eq!(databases, vec![aside, "tinycode.db".to_string()]);
    }

    #[tokio::test]
    async fn a_file_that_is_not_a_database_is_moved_aside_unchanged_and_a_fresh_one_takes_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tinycode.db");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        let store = Store::open(&path).unwrap();
        let sidelined = store.health().sidelined.unwrap();
        assert_eq!(std::fs::read(&sidelined.moved_to).unwrap(), vec![7u8; 4096]);
        assert_eq!(sidelined.reason, "file is not a database");
        assert_eq!(store.version().await.unwrap(), MIGRATIONS.len() as i64);
    }

    #[test]
    fn a_command_that_only_reads_leaves_a_damaged_database_where_it_is_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tinycode.db");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        let reading = Tuning { sideline_damaged: false, ..Tuning::default() };
        match Store::open_with(&path, reading) {
            Err(StoreError::Open { path: named, message }) => {
                assert_eq!((named, message.as_str()), (path.clone(), "file is not a database"))
            }
            other => panic!("{:?}", other.map(|s| s.path)),
        }
        assert_eq!(std::fs::read(&path).unwrap(), vec![7u8; 4096]);
        assert_eq!(names(dir.path()), vec!["tinycode.db".to_string()]);
    }

    #[tokio::test]
    async fn a_database_whose_header_was_overwritten_is_moved_aside() {
        let overwrite = |path: &Path| {
            let mut bytes = std::fs::read(path).unwrap();
            bytes[..16].copy_from_slice(b"not sqlite here!");
            std::fs::write(path, bytes).unwrap();
        };
        sidelined_after(overwrite, "file is not a database").await;
    }

    #[tokio::test]
    async fn a_truncated_database_is_moved_aside() {
        let truncate = |path: &Path| {
            let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            let length = file.metadata().unwrap().len();
            file.set_len(length / 2).unwrap();
        };
        sidelined_after(truncate, "database disk image is malformed").await;
    }

    #[tokio::test]
    async fn a_database_whose_schema_page_is_garbled_is_moved_aside() {
        let garble = |path: &Path| {
            let mut bytes = std::fs::read(path).unwrap();
            for byte in &mut bytes[100..4096] {
                *byte = 0xA5;
            }
            std::fs::write(path, bytes).unwrap();
        };
        sidelined_after(garble, "database disk image is malformed").await;
    }
}
