//! Scheduled jobs in sessions: the `cron_*` tools' seam ([`SessionJobs`]), and running a job's firing as a turn
//! of its session. A job belongs to its session's project and fires only in a process serving that project (the
//! manager schedules a project's stored jobs when an editor first opens a session there). Its turn has the
//! default mode's rights at most, whatever mode the session is in (`permission::Service::cap`). The turn is
//! shown in the editor as it happens when the session is open there (the job's prompt arrives as a user message
//! marked `_meta.tinycode.scheduled`); when it is not, the session is opened without an editor (asks are
//! refused and noted by a [`Witness`]), the turn runs and is stored, what it did is kept as a report that the
//! next editor to open the session is shown, and the session is put away again.
//!
//! Owns the mapping between the tools' jobs and the scheduler's, the witness of unattended runs, and the
//! manager's [`Runner`].

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::json;

use super::manager::Manager;
use super::settings::ConfigOption;
use super::{Seams, Session, SettingsSink, lock};
use crate::agent::{AgentEvent, EventSink, ToolStatus};
use crate::control::{Job as ToolJob, Jobs, NewJob};
use crate::llm::UserPart;
use crate::permission::{Approver, Ask, Reply};
use crate::schedule::{Cron, Job, Runner, Scheduler};
use crate::store::Store;
use crate::store::jobs::{JobReport, JobRow};

/// How long a process that does not have a job's session open waits before claiming its firing.
pub const CLAIM_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// The jobs of one session, as its tools see them.
pub struct SessionJobs {
    pub session_id: String,
    /// The session's directory: the project whose processes fire its jobs.
    pub project: String,
    pub scheduler: Arc<Scheduler>,
    pub store: Option<Store>,
    /// Durable jobs are allowed (else `durable` jobs are made session-only).
    pub durable: bool,
}

fn shown(job: &Job, next: Option<i64>) -> ToolJob {
    ToolJob {
        id: job.id.clone(),
        cron: job.expression.clone(),
        prompt: job.prompt.clone(),
        recurring: job.recurring,
        durable: job.durable,
        next_run: next.map(crate::clock::iso8601),
    }
}

impl SessionJobs {
    async fn create_job(&self, new: NewJob) -> Result<ToolJob, String> {
        let cron = Cron::parse(&new.cron)?;
        if self.scheduler.next_firing(&cron).is_none() {
            return Err(format!("`{}` never matches a date in the next four years.", new.cron.trim()));
        }
        let job = Job {
            id: format!("cron_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
            session_id: self.session_id.clone(),
            project: self.project.clone(),
            expression: new.cron.split_whitespace().collect::<Vec<_>>().join(" "),
            cron,
            prompt: new.prompt,
            recurring: new.recurring,
            durable: new.durable && self.durable,
            created_at: self.scheduler.now_ms(),
        };
        if job.durable {
            let Some(store) = &self.store else {
                return Err("Durable jobs need the session database, which could not be opened; create it with durable: false.".into());
            };
            let row = JobRow {
                id: job.id.clone(),
                session_id: job.session_id.clone(),
                project: job.project.clone(),
                cron: job.expression.clone(),
                prompt: job.prompt.clone(),
                recurring: job.recurring,
                created_at: job.created_at,
                last_fired: None,
            };
            store.add_job(row).await.map_err(|e| format!("The job could not be saved: {e}"))?;
        }
        match self.scheduler.add(job.clone()) {
            Ok(next) => Ok(shown(&job, next)),
            Err(message) => {
                if let (true, Some(store)) = (job.durable, &self.store) {
                    let _ = store.delete_job(&job.id).await;
                }
                Err(message)
            }
        }
    }
}

impl Jobs for SessionJobs {
    fn create(&self, job: NewJob) -> BoxFuture<'_, Result<ToolJob, String>> {
        Box::pin(self.create_job(job))
    }

    fn list(&self) -> BoxFuture<'_, Vec<ToolJob>> {
        Box::pin(async move {
            self.scheduler.list(&self.session_id).iter().map(|(job, next)| shown(job, *next)).collect()
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let Some(job) = self.scheduler.remove(&self.session_id, id.trim()) else { return Ok(false) };
            if let (true, Some(store)) = (job.durable, &self.store) {
                store.delete_job(&job.id).await.map_err(|e| format!("The job could not be deleted: {e}"))?;
            }
            Ok(true)
        })
    }
}

/// A job from the store, scheduled again; `None` when its expression no longer parses.
pub fn from_row(row: JobRow) -> Option<Job> {
    let cron = Cron::parse(&row.cron)
        .map_err(|e| tracing::warn!(job = %row.id, error = %e, "dropping a stored job"))
        .ok()?;
    Some(Job {
        id: row.id,
        session_id: row.session_id,
        project: row.project,
        expression: row.cron,
        cron,
        prompt: row.prompt,
        recurring: row.recurring,
        durable: true,
        created_at: row.created_at,
    })
}

/// What a session the scheduler opened without an editor did: its tool calls and how each ended. Its events go
/// nowhere else (the journal keeps them); it answers every ask with a refusal, and notes which calls were refused.
#[derive(Default)]
pub struct Witness {
    /// Calls by id: their title, and whether an ask for them was refused.
    calls: Mutex<HashMap<String, (String, bool)>>,
    /// One line per finished call, in order.
    lines: Mutex<Vec<String>>,
}

impl Witness {
    /// The lines noted so far, taken (each run reports its own).
    pub fn take(&self) -> Vec<String> {
        lock(&self.calls).clear();
        std::mem::take(&mut *lock(&self.lines))
    }
}

impl EventSink for Witness {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::ToolCallStarted { call_id, presentation, .. }
            | AgentEvent::ToolCallRevised { call_id, presentation } => {
                let mut calls = lock(&self.calls);
                let refused = calls.get(&call_id).is_some_and(|(_, refused)| *refused);
                calls.insert(call_id, (presentation.title, refused));
            }
            AgentEvent::ToolCallFinished { call_id, status, .. } => {
                let (title, refused) = lock(&self.calls).remove(&call_id).unwrap_or_default();
                let outcome = match (refused, status) {
                    (true, _) => "declined (nobody was there to answer)",
                    (false, ToolStatus::Completed) => "done",
                    (false, ToolStatus::Failed) => "failed",
                };
                lock(&self.lines).push(format!("- `{title}`: {outcome}"));
            }
            _ => {}
        }
    }
}

impl SettingsSink for Witness {
    fn settings_changed(&self, _mode: Option<super::settings::Mode>, _options: &[ConfigOption]) {}
}

impl Approver for Witness {
    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Reply> {
        let mut calls = lock(&self.calls);
        let title =
            calls.get(&ask.call_id).map_or_else(|| ask.presentation.title.clone(), |(t, _)| t.clone());
        calls.insert(ask.call_id.clone(), (title, true));
        Box::pin(async { Reply::RejectOnce })
    }
}

/// Seams for a session no editor has open: events go to `witness`, asks are refused (and noted), files go to
/// disk.
pub fn unattended(witness: Arc<Witness>) -> Seams {
    Seams {
        sink: witness.clone(),
        settings: witness.clone(),
        approver: Some(witness),
        fs: None,
        terminals: None,
        asker: None,
        trust: None,
        elicitor: None,
        additional_directories: Vec::new(),
    }
}

/// The notice's title and text for a report, as the editor that opens the session is shown it.
pub fn report_notice(report: &JobReport) -> (String, String) {
    (
        format!("Scheduled job `{}` ran while this session was not open", report.job_id),
        format!(
            "At {}, with nobody to answer its questions:\n{}\nIts turn is in this session's conversation.",
            crate::clock::iso8601(report.ran_at),
            report.report
        ),
    )
}

impl Session {
    /// Run a job's firing as a turn of this session, shown as the user's message with `_meta.tinycode.scheduled`.
    pub async fn run_job(&self, job: &Job) {
        let kind = if job.recurring { "recurring" } else { "one-shot" };
        let banner = format!("⏰ Scheduled job `{}` (`{}`, {kind}): {}", job.id, job.expression, job.prompt);
        let blocks = json!([{
            "type": "text",
            "text": banner,
            "_meta": {"tinycode": {"scheduled": {"jobId": job.id, "cron": job.expression}}},
        }]);
        let text = format!(
            "<scheduled-job id=\"{}\" cron=\"{}\">\nThis prompt comes from a scheduled job, not from the user typing now; they may not be watching.\n</scheduled-job>\n\n{}",
            job.id, job.expression, job.prompt
        );
        if let Err(e) = self.queued(vec![UserPart::Text(text)], blocks, true).await {
            tracing::warn!(session = %self.id, job = %job.id, error = %e, "a scheduled turn failed");
        }
    }

    /// Opened by the scheduler and not taken over by an editor since.
    pub fn is_unattended(&self) -> bool {
        self.headless.load(Ordering::Relaxed)
    }
}

impl Manager {
    /// Keep what an unattended run of `job` did for the next editor that opens its session.
    async fn report(&self, job: &Job, due: i64, lines: Vec<String>) {
        let report = if lines.is_empty() { "- no tool calls".to_string() } else { lines.join("\n") };
        let report = JobReport { job_id: job.id.clone(), ran_at: due, report };
        match self.store().await {
            Ok(store) => {
                if let Err(e) = store.add_job_report(&job.session_id, report).await {
                    tracing::warn!(job = %job.id, error = %e, "what a scheduled job did could not be kept");
                }
            }
            Err(e) => tracing::warn!(job = %job.id, error = %e, "what a scheduled job did could not be kept"),
        }
    }
}

impl Runner for Manager {
    fn fire(&self, job: Job, due: i64) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let session = match self.get(&job.session_id) {
                Some(session) => session,
                None => match self.open_unattended(&job.session_id).await {
                    Some(session) => session,
                    None => return false,
                },
            };
            if !session.config().cron {
                tracing::info!(job = %job.id, "scheduled jobs are turned off; skipping a firing");
                return true;
            }
            tracing::info!(session = %session.id, job = %job.id, "running a scheduled job");
            session.run_job(&job).await;
            if session.is_unattended() {
                if let Some(witness) = self.witness(&session.id) {
                    self.report(&job, due, witness.take()).await;
                }
                self.put_away(&session.id);
            }
            self.bus().publish(crate::bus::Event::JobRan {
                session_id: session.id.clone(),
                job_id: job.id.clone(),
            });
            true
        })
    }

    fn claim<'a>(&'a self, job: &'a Job, due: i64) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            // A process whose editor has the session open should run it; others give it a moment to claim first.
            if self.get(&job.session_id).is_none() {
                tokio::time::sleep(CLAIM_GRACE).await;
            }
            match self.store().await {
                Ok(store) => store.claim_job(&job.id, due).await.unwrap_or(false),
                Err(_) => false,
            }
        })
    }

    fn retire<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if job.durable
                && let Ok(store) = self.store().await
                && let Err(e) = store.delete_job(&job.id).await
            {
                tracing::warn!(job = %job.id, error = %e, "a finished job could not be removed");
            }
        })
    }
}
