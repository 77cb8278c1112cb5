//! Durable scheduled jobs: the cron expression, the prompt, whether it repeats, when it last fired, and the
//! project (the session's directory) whose processes may fire it. A job goes with its session (`ON DELETE
//! CASCADE`). Firing is claimed with one conditional update, so two tinycode processes sharing the database never
//! run the same firing twice. What a run without an editor did is kept as a report until the session is opened.
//!
//! Owns the `cron_jobs` and `job_reports` tables.

use rusqlite::params;

use super::{Store, StoreError};

/// One durable job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRow {
    pub id: String,
    pub session_id: String,
    /// The directory of the session that made it: only a process serving this project fires it.
    pub project: String,
    pub cron: String,
    pub prompt: String,
    pub recurring: bool,
    pub created_at: i64,
    pub last_fired: Option<i64>,
}

/// What one run of a job without an editor did, for the next editor that opens its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobReport {
    pub job_id: String,
    pub ran_at: i64,
    pub report: String,
}

impl Store {
    pub async fn add_job(&self, job: JobRow) -> Result<(), StoreError> {
        self.call(move |c| {
            c.execute(
                "INSERT INTO cron_jobs (id, session_id, project, cron, prompt, recurring, created_at, last_fired) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![job.id, job.session_id, job.project, job.cron, job.prompt, job.recurring, job.created_at, job.last_fired],
            )
            .map(|_| ())
        })
        .await
    }

    /// The durable jobs of `project`, oldest first, as stored when this is called (the read is queued at once).
    pub fn jobs_of(
        &self,
        project: &str,
    ) -> impl Future<Output = Result<Vec<JobRow>, StoreError>> + Send + 'static {
        let project = project.to_string();
        self.queue(move |c| {
            let mut statement = c.prepare_cached(
                "SELECT id, session_id, project, cron, prompt, recurring, created_at, last_fired FROM cron_jobs WHERE project = ?1 ORDER BY created_at, id",
            )?;
            statement
                .query_map([project], |r| {
                    Ok(JobRow {
                        id: r.get(0)?,
                        session_id: r.get(1)?,
                        project: r.get(2)?,
                        cron: r.get(3)?,
                        prompt: r.get(4)?,
                        recurring: r.get(5)?,
                        created_at: r.get(6)?,
                        last_fired: r.get(7)?,
                    })
                })?
                .collect()
        })
    }

    /// Claim the firing of job `id` due at `due`: `false` when another process claimed it (or the job is gone).
    pub async fn claim_job(&self, id: &str, due: i64) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.call(move |c| {
            c.execute(
                "UPDATE cron_jobs SET last_fired = ?2 WHERE id = ?1 AND (last_fired IS NULL OR last_fired < ?2)",
                params![id, due],
            )
            .map(|n| n == 1)
        })
        .await
    }

    /// Delete a job; returns whether it existed.
    pub async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.call(move |c| c.execute("DELETE FROM cron_jobs WHERE id = ?1", [id]).map(|n| n > 0)).await
    }

    /// Keep what a run of a job without an editor did, for the next editor that opens `session_id`.
    pub async fn add_job_report(&self, session_id: &str, report: JobReport) -> Result<(), StoreError> {
        let session_id = session_id.to_string();
        self.call(move |c| {
            c.execute(
                "INSERT INTO job_reports (session_id, job_id, ran_at, report) VALUES (?1, ?2, ?3, ?4)",
                params![session_id, report.job_id, report.ran_at, report.report],
            )
            .map(|_| ())
        })
        .await
    }

    /// The reports kept for `session_id`, oldest first, removed as they are read (each is shown once).
    pub async fn take_job_reports(&self, session_id: &str) -> Result<Vec<JobReport>, StoreError> {
        let session_id = session_id.to_string();
        self.call(move |c| {
            let tx = c.transaction()?;
            let reports = {
                let mut statement = tx.prepare_cached(
                    "SELECT job_id, ran_at, report FROM job_reports WHERE session_id = ?1 ORDER BY id",
                )?;
                statement
                    .query_map([&session_id], |r| {
                        Ok(JobReport { job_id: r.get(0)?, ran_at: r.get(1)?, report: r.get(2)? })
                    })?
                    .collect::<Result<Vec<_>, _>>()?
            };
            tx.execute("DELETE FROM job_reports WHERE session_id = ?1", [&session_id])?;
            tx.commit()?;
            Ok(reports)
        })
        .await
    }
}
