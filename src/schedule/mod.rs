//! Scheduled work: jobs that run a prompt in their session when a cron expression matches. Jobs fire only while
//! tinycode runs: a firing missed while it was not running is skipped, never caught up. A job whose last run is
//! still going skips the next firing; a one-shot job is removed once it fired; a recurring job expires
//! [`MAX_AGE`] after it was made. A recurring job fires up to [`MAX_JITTER`] after each match, by an offset
//! fixed by its id, so many jobs on `0 * * * *` do not all ask the model in the same second. Durable jobs are kept in the store and claimed there before each firing, so
//! two tinycode processes never run the same firing twice.
//!
//! The scheduler reads the time from a [`Clock`]: the system clock, one that starts at a given wall time and
//! advances with tokio's clock (tests pause and advance it), or one a test moves by hand.
//!
//! Owns the job table, the timer loop and the limits. Running a job is the [`Runner`]'s (the session manager's).

pub mod cron;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio_util::sync::CancellationToken;

pub use cron::{Cron, Zone};

/// How long a recurring job lives.
pub const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3_600);
/// The latest a recurring job fires after its expression matches (less than a minute, so it never reaches the
/// next match).
pub const MAX_JITTER: Duration = Duration::from_secs(30);
/// Jobs one session may have.
pub const MAX_JOBS_PER_SESSION: usize = 20;
/// With the system clock, the loop looks at the time at least this often (a suspended laptop, a changed clock).
const RECHECK: Duration = Duration::from_secs(30);

/// Where the scheduler reads the time.
#[derive(Debug, Clone)]
pub enum Clock {
    System,
    /// Wall time `wall_ms` at tokio instant `at`, advancing with tokio's clock.
    From {
        wall_ms: i64,
        at: tokio::time::Instant,
    },
    /// A clock that moves only when told (integration tests).
    Manual(Arc<ManualClock>),
}

/// The time of a [`Clock::Manual`].
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicI64,
    moved: tokio::sync::Notify,
}

impl ManualClock {
    pub fn new(now_ms: i64) -> Arc<Self> {
        Arc::new(Self { now_ms: AtomicI64::new(now_ms), moved: tokio::sync::Notify::new() })
    }

    /// Move to `now_ms`; the scheduler looks at the time again.
    pub fn set(&self, now_ms: i64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
        self.moved.notify_one();
    }

    pub fn now_ms(&self) -> i64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

impl Clock {
    /// A clock that reads `wall_ms` now and advances with tokio's (pausable) clock.
    pub fn starting_at(wall_ms: i64) -> Clock {
        Clock::From { wall_ms, at: tokio::time::Instant::now() }
    }

    /// Milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => crate::clock::now_millis(),
            Clock::From { wall_ms, at } => wall_ms + at.elapsed().as_millis() as i64,
            Clock::Manual(manual) => manual.now_ms(),
        }
    }

    /// Completes when a manual clock is moved; never for the others.
    async fn moved(&self) {
        match self {
            Clock::Manual(manual) => manual.moved.notified().await,
            _ => std::future::pending().await,
        }
    }
}

/// One job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: String,
    pub session_id: String,
    /// The directory of the session that made it: only a process serving this project fires it.
    pub project: String,
    /// The expression as written.
    pub expression: String,
    pub cron: Cron,
    pub prompt: String,
    pub recurring: bool,
    pub durable: bool,
    pub created_at: i64,
}

impl Job {
    /// How long after each match this job fires: 0 for one-shot jobs, else an offset below [`MAX_JITTER`]
    /// derived from the id (FNV-1a), the same in every process.
    pub fn jitter_ms(&self) -> i64 {
        if !self.recurring {
            return 0;
        }
        let hash = self
            .id
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        (hash % MAX_JITTER.as_millis() as u64) as i64
    }
}

/// Runs a job's firing. `false`: the job's session is gone, drop the job.
pub trait Runner: Send + Sync {
    fn fire(&self, job: Job, due: i64) -> BoxFuture<'_, bool>;
    /// Claim a durable job's firing in the store; `false` when another process did.
    fn claim<'a>(&'a self, job: &'a Job, due: i64) -> BoxFuture<'a, bool>;
    /// The job is over (fired once, expired, or its session is gone): forget it in the store too.
    fn retire<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, ()>;
}

struct Entry {
    job: Job,
    /// When it fires next (ms); `None` when it never will again.
    next: Option<i64>,
}

#[derive(Default)]
struct State {
    jobs: BTreeMap<String, Entry>,
    /// Jobs whose last firing is still running.
    running: HashSet<String>,
}

/// The jobs of one session manager.
pub struct Scheduler {
    clock: Clock,
    zone: Zone,
    state: Mutex<State>,
    changed: tokio::sync::Notify,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Scheduler {
    pub fn new(clock: Clock, zone: Zone) -> Self {
        Self { clock, zone, state: Mutex::default(), changed: tokio::sync::Notify::new() }
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The first firing of `cron` after now (ms), if any within the search window.
    pub fn next_firing(&self, cron: &Cron) -> Option<i64> {
        self.next_after(cron, self.now_ms())
    }

    fn next_after(&self, cron: &Cron, after_ms: i64) -> Option<i64> {
        cron.next_after(after_ms.div_euclid(1_000), self.zone).map(|secs| secs * 1_000)
    }

    /// When `job` fires for its first match after `after_ms` (ms): that match plus the job's jitter.
    fn next_for(&self, job: &Job, after_ms: i64) -> Option<i64> {
        self.next_after(&job.cron, after_ms).map(|at| at + job.jitter_ms())
    }

    /// Schedule `job`; returns its first firing. A session past [`MAX_JOBS_PER_SESSION`] is refused.
    pub fn add(&self, job: Job) -> Result<Option<i64>, String> {
        let next = self.next_for(&job, self.now_ms());
        let mut state = lock(&self.state);
        let count = state.jobs.values().filter(|e| e.job.session_id == job.session_id).count();
        if count >= MAX_JOBS_PER_SESSION && !state.jobs.contains_key(&job.id) {
            return Err(format!(
                "This session already has {MAX_JOBS_PER_SESSION} scheduled jobs; delete one with cron_delete first."
            ));
        }
        state.jobs.insert(job.id.clone(), Entry { job, next });
        drop(state);
        self.changed.notify_one();
        Ok(next)
    }

    /// Remove job `id` of `session`; returns it.
    pub fn remove(&self, session: &str, id: &str) -> Option<Job> {
        let mut state = lock(&self.state);
        if state.jobs.get(id).is_none_or(|e| e.job.session_id != session) {
            return None;
        }
        let removed = state.jobs.remove(id).map(|e| e.job);
        drop(state);
        self.changed.notify_one();
        removed
    }

    /// A session's jobs with their next firing (ms), oldest first.
    pub fn list(&self, session: &str) -> Vec<(Job, Option<i64>)> {
        let state = lock(&self.state);
        let mut jobs: Vec<(Job, Option<i64>)> = state
            .jobs
            .values()
            .filter(|e| e.job.session_id == session)
            .map(|e| (e.job.clone(), e.next))
            .collect();
        jobs.sort_by(|a, b| (a.0.created_at, &a.0.id).cmp(&(b.0.created_at, &b.0.id)));
        jobs
    }

    /// Drop a session's jobs (`durable_too`: also those kept in the store, as when the session is deleted).
    pub fn forget_session(&self, session: &str, durable_too: bool) {
        lock(&self.state).jobs.retain(|_, e| e.job.session_id != session || (e.job.durable && !durable_too));
        self.changed.notify_one();
    }

    /// Take the jobs due at `now` (ms): each is marked running and moved to its next firing.
    fn take_due(&self, now: i64) -> (Vec<(Job, i64)>, Vec<Job>) {
        let mut state = lock(&self.state);
        let State { jobs, running } = &mut *state;
        let (mut due, mut over) = (Vec::new(), Vec::new());
        for entry in jobs.values_mut() {
            let Some(at) = entry.next.filter(|at| *at <= now) else { continue };
            let expired = entry.job.recurring && now - entry.job.created_at > MAX_AGE.as_millis() as i64;
            entry.next = if entry.job.recurring && !expired { self.next_for(&entry.job, now) } else { None };
            if expired {
                over.push(entry.job.clone());
                continue;
            }
            if running.insert(entry.job.id.clone()) {
                due.push((entry.job.clone(), at));
            } else {
                tracing::info!(job = %entry.job.id, "skipping a firing: the previous run is still going");
            }
            if entry.next.is_none() {
                over.push(entry.job.clone());
            }
        }
        for job in &over {
            jobs.remove(&job.id);
        }
        (due, over)
    }

    /// How long to wait before the next firing (`None`: nothing is scheduled).
    fn wait(&self, now: i64) -> Option<Duration> {
        let next = lock(&self.state).jobs.values().filter_map(|e| e.next).min()?;
        let wait = Duration::from_millis(next.saturating_sub(now).max(0) as u64);
        Some(match self.clock {
            Clock::System => wait.min(RECHECK),
            Clock::From { .. } => wait,
            // The test moves it; nothing to wait for but that.
            Clock::Manual(_) => return None,
        })
    }

    /// Fire jobs as they come due until `stop` fires. Firings run concurrently with the loop.
    pub async fn run(&self, runner: &dyn Runner, stop: CancellationToken) {
        let mut firing = FuturesUnordered::new();
        loop {
            let now = self.now_ms();
            let (due, over) = self.take_due(now);
            for job in over.iter().filter(|j| !due.iter().any(|(d, _)| d.id == j.id)) {
                runner.retire(job).await;
            }
            for (job, at) in due {
                let retire = over.iter().any(|o| o.id == job.id);
                firing.push(async move {
                    let keep = !job.durable || runner.claim(&job, at).await;
                    let alive = !keep || runner.fire(job.clone(), at).await;
                    if retire || !alive {
                        runner.retire(&job).await;
                    }
                    (job, alive)
                });
            }
            let wait = self.wait(now);
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.changed.notified() => {}
                () = self.clock.moved() => {}
                () = async { match wait { Some(wait) => tokio::time::sleep(wait).await, None => std::future::pending().await } } => {}
                Some((job, alive)) = firing.next(), if !firing.is_empty() => {
                    let mut state = lock(&self.state);
                    state.running.remove(&job.id);
                    if !alive {
                        state.jobs.remove(&job.id);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records firings; `block` holds each firing until released.
    #[derive(Default)]
    struct Recorder {
        fired: Mutex<Vec<(String, i64)>>,
        retired: Mutex<Vec<String>>,
        fires: tokio::sync::Notify,
        claims_lost: Mutex<HashSet<String>>,
    }

    impl Runner for Recorder {
        fn fire(&self, job: Job, due: i64) -> BoxFuture<'_, bool> {
            Box::pin(async move {
                lock(&self.fired).push((job.id, due));
                self.fires.notify_one();
                true
            })
        }
        fn claim<'a>(&'a self, job: &'a Job, _due: i64) -> BoxFuture<'a, bool> {
            Box::pin(async move { !lock(&self.claims_lost).contains(&job.id) })
        }
        fn retire<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, ()> {
            Box::pin(async move { lock(&self.retired).push(job.id.clone()) })
        }
    }

    /// 2026-12-01 07:30:00 UTC.
    const START: i64 = 1_796_110_200_000;

    fn job(id: &str, expression: &str, recurring: bool) -> Job {
        Job {
            id: id.into(),
            session_id: "s".into(),
            project: "/p".into(),
            expression: expression.into(),
            cron: Cron::parse(expression).unwrap(),
            prompt: "check the build".into(),
            recurring,
            durable: false,
            created_at: START,
        }
    }

    async fn until_fired(recorder: &Recorder, count: usize) {
        while lock(&recorder.fired).len() < count {
            recorder.fires.notified().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_recurring_job_fires_on_each_match_of_its_expression_under_paused_time() {
        let scheduler = Arc::new(Scheduler::new(Clock::starting_at(START), Zone::Utc));
        let recorder = Arc::new(Recorder::default());
        let j1 = job("j1", "*/15 * * * *", true);
        let jitter = j1.jitter_ms();
        assert_eq!(scheduler.add(j1), Ok(Some(START + 15 * 60_000 + jitter)));
        let stop = CancellationToken::new();
        let loop_task = tokio::spawn({
            let (scheduler, recorder, stop) = (scheduler.clone(), recorder.clone(), stop.clone());
            async move { scheduler.run(recorder.as_ref(), stop).await }
        });
        until_fired(&recorder, 2).await;
        assert_eq!(
            *lock(&recorder.fired),
            vec![
                ("j1".to_string(), START + 15 * 60_000 + jitter),
                ("j1".to_string(), START + 30 * 60_000 + jitter)
            ]
        );
        assert_eq!(scheduler.now_ms(), START + 30 * 60_000 + jitter, "time moved only as far as the firings");
        stop.cancel();
        loop_task.await.unwrap();
    }

    #[test]
    fn recurring_jobs_fire_a_fixed_offset_under_half_a_minute_after_the_match_and_one_shots_on_it() {
        let offsets: Vec<i64> =
            (0..200).map(|n| job(&format!("cron_{n}"), "0 * * * *", true).jitter_ms()).collect();
        assert!(offsets.iter().all(|o| (0..MAX_JITTER.as_millis() as i64).contains(o)), "{offsets:?}");
        let distinct: HashSet<i64> = offsets.iter().copied().collect();
        assert!(distinct.len() > 150, "offsets spread out: {} distinct of 200", distinct.len());
        assert_eq!(job("cron_7", "0 * * * *", true).jitter_ms(), offsets[7], "the same id, the same offset");
        assert_eq!(job("cron_7", "0 * * * *", false).jitter_ms(), 0);
        // FNV-1a of "j1" (0x08c11307b5646164) modulo 30,000 ms: fixed across processes and releases.
        assert_eq!(job("j1", "* * * * *", true).jitter_ms(), (0x08c1_1307_b564_6164_u64 % 30_000) as i64);
    }

    #[tokio::test(start_paused = true)]
    async fn a_one_shot_job_fires_once_and_is_retired_and_a_lost_claim_skips_the_firing() {
        let scheduler = Arc::new(Scheduler::new(Clock::starting_at(START), Zone::Utc));
        let recorder = Arc::new(Recorder::default());
        scheduler.add(job("once", "0 8 * * *", false)).unwrap();
        let mut elsewhere = job("elsewhere", "45 7 * * *", false);
        elsewhere.durable = true;
        lock(&recorder.claims_lost).insert("elsewhere".into());
        scheduler.add(elsewhere).unwrap();
        let stop = CancellationToken::new();
        let loop_task = tokio::spawn({
            let (scheduler, recorder, stop) = (scheduler.clone(), recorder.clone(), stop.clone());
            async move { scheduler.run(recorder.as_ref(), stop).await }
        });
        until_fired(&recorder, 1).await;
        tokio::time::sleep(Duration::from_secs(24 * 3_600)).await;
        assert_eq!(*lock(&recorder.fired), vec![("once".to_string(), START + 30 * 60_000)]);
        assert_eq!(*lock(&recorder.retired), vec!["elsewhere".to_string(), "once".to_string()]);
        assert_eq!(scheduler.list("s"), vec![]);
        stop.cancel();
        loop_task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn removed_jobs_never_fire_and_recurring_jobs_expire() {
        let scheduler = Arc::new(Scheduler::new(Clock::starting_at(START), Zone::Utc));
        let recorder = Arc::new(Recorder::default());
        scheduler.add(job("gone", "* * * * *", true)).unwrap();
        assert_eq!(scheduler.remove("other-session", "gone"), None);
        assert!(scheduler.remove("s", "gone").is_some());
        let mut old = job("old", "0 * * * *", true);
        old.created_at = START - MAX_AGE.as_millis() as i64 + 10 * 60_000;
        scheduler.add(old).unwrap();
        let stop = CancellationToken::new();
        let loop_task = tokio::spawn({
            let (scheduler, recorder, stop) = (scheduler.clone(), recorder.clone(), stop.clone());
            async move { scheduler.run(recorder.as_ref(), stop).await }
        });
        tokio::time::sleep(Duration::from_secs(3 * 3_600)).await;
        assert_eq!(*lock(&recorder.fired), vec![]);
        assert_eq!(*lock(&recorder.retired), vec!["old".to_string()]);
        stop.cancel();
        loop_task.await.unwrap();
    }

    #[test]
    fn a_session_is_limited_in_jobs() {
        let scheduler = Scheduler::new(Clock::System, Zone::Utc);
        for n in 0..MAX_JOBS_PER_SESSION {
            scheduler.add(job(&format!("j{n}"), "0 * * * *", true)).unwrap();
        }
        assert_eq!(
            scheduler.add(job("one-more", "0 * * * *", true)),
            Err("This session already has 20 scheduled jobs; delete one with cron_delete first.".into())
        );
    }
}
