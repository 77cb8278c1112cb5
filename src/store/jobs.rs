//! Durable scheduled jobs: the cron expression, the prompt, whether it repeats, and when it last fired. A job
//! goes with its session (`ON DELETE CASCADE`). Firing is claimed with one conditional update, so two tinycode
//! processes sharing the database never run the same firing twice.
//!
//! Owns the `cron_jobs` table.

use rusqlite::params;

use super::{Store, StoreError};

/// One durable job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRow {
    pub id: String,
    pub session_id: String,
    pub cron: String,
    pub prompt: String,
    pub recurring: bool,
    pub created_at: i64,
    pub last_fired: Option<i64>,
}

impl Store {
    pub async fn add_job(&self, job: JobRow) -> Result<(), StoreError> {
        self.call(move |c| {
            c.execute(
                "INSERT INTO cron_jobs (id, session_id, cron, prompt, recurring, created_at, last_fired) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![job.id, job.session_id, job.cron, job.prompt, job.recurring, job.created_at, job.last_fired],
            )
            .map(|_| ())
        })
        .await
    }

    /// Every durable job, oldest first, as stored when this is called (the read is queued at once).
    pub fn jobs(&self) -> impl Future<Output = Result<Vec<JobRow>, StoreError>> + Send + 'static {
        self.queue(|c| {
            let mut statement = c.prepare_cached(
                "SELECT id, session_id, cron, prompt, recurring, created_at, last_fired FROM cron_jobs ORDER BY created_at, id",
            )?;
            statement
                .query_map([], |r| {
                    Ok(JobRow {
                        id: r.get(0)?,
                        session_id: r.get(1)?,
                        cron: r.get(2)?,
                        prompt: r.get(3)?,
                        recurring: r.get(4)?,
                        created_at: r.get(5)?,
                        last_fired: r.get(6)?,
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
}
