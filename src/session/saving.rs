//! Telling the user how saving goes. At the end of every prompt the store tries once more what the database
//! refused; whatever it still holds is told in a notice and in the prompt's answer (`_meta.tinycode.unsaved`),
//! and once it is all written the session says so. Writes given up on for good are told too.
//!
//! Owns these notices and what the session remembers of them. Holding and retrying belong to `store`; the
//! notices at start (a damaged database moved aside, one that could not be opened) to `manager`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::Session;

/// What the database had not taken when a prompt was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsaved {
    /// Writes held in memory (messages, the session's row and settings, usage), for every session.
    pub items: usize,
    pub database: PathBuf,
}

/// What this session already told the user about saving.
#[derive(Debug, Default)]
pub(super) struct Told {
    unsaved: AtomicBool,
    lost: AtomicU64,
}

impl Session {
    /// Have the store try what it holds, and tell the user what it still could not write (or that all of it
    /// is written now, after they were told it was not).
    pub(super) async fn report_saving(&self) -> Option<Unsaved> {
        let store = self.store.as_ref()?;
        let health = store.save_now().await;
        let database = store.path.display().to_string();
        let lost_before = self.told.lost.swap(health.lost, Ordering::SeqCst);
        if health.lost > lost_before {
            self.notice(
                "Part of the conversation could not be saved".into(),
                format!(
                    "The session database {database} rejected {} item(s) for good (the log says why); the rest is kept.",
                    health.lost - lost_before
                ),
            );
        }
        let told_before = self.told.unsaved.swap(health.held > 0, Ordering::SeqCst);
        if health.held == 0 {
            if told_before {
                self.notice(
                    "The conversation is saved".into(),
                    format!("Everything kept in memory is now in {database}."),
                );
            }
            return None;
        }
        let why = health.failure.as_deref().unwrap_or("it refuses them");
        self.notice(
            "This conversation is not saved yet".into(),
            format!(
                "The session database {database} does not accept writes ({why}). {} item(s) are kept in memory, in order, and written as soon as it does; they are lost if tinycode exits before that.",
                health.held
            ),
        );
        Some(Unsaved { items: health.held, database: store.path.clone() })
    }
}
