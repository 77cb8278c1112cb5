//! Checkpoints and undo: every turn that changed files is saved as a checkpoint (the files' earlier content and
//! their fingerprints after the turn); `/checkpoints` lists them, `/undo` reverts the newest one not yet undone,
//! and `/restore N` puts the files back as they were before checkpoint N (undoing it and every later one).
//!
//! A revert goes through the session's file access, so an editor that writes files gets `fs/write_text_file`
//! and shows the change as a reviewable diff; the thread shows one card with every file's diff. A file that
//! changed since the checkpoint (its fingerprint differs) makes the revert ask first. Every path a revert writes
//! or deletes is resolved first (`workspace::boundary`, through the session's file access): the write or the
//! deletion lands at that real path, and one outside the session's roots (a folder the turn made, replaced by a
//! link since) asks first, naming the real path, with no "always". The model is told what was reverted.
//!
//! Owns the commands' logic and texts. The record of a turn is `workspace::changes`, the SQL `store::checkpoints`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Session, new_id};
use crate::agent::{AgentEvent, Conversation, StopReason, ToolStatus};
use crate::display::{Content, Kind, Location, Presentation};
use crate::llm::UserPart;
use crate::permission::{Ask, Category, Reply};
use crate::store::checkpoints::{CheckpointRow, SavedFile};
use crate::workspace::changes::{Before, fingerprint_of};

/// Files named per checkpoint in the listing before "+N more".
const LISTED_FILES: usize = 4;

/// One file to put back.
struct Revert {
    path: PathBuf,
    /// What it gets: `None` deletes it (it did not exist before).
    target: Option<Vec<u8>>,
    /// The fingerprint it should have now (after the newest reverted checkpoint).
    expected: Option<String>,
    /// Its content now, for the diff.
    current: Option<Vec<u8>>,
    /// Where the write or deletion lands: the folder resolved, the name kept (a link there is replaced).
    real: PathBuf,
    /// `real` is outside the session's roots.
    outside: bool,
}

fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

fn text_of(bytes: &Option<Vec<u8>>) -> Option<String> {
    bytes.as_ref().map(|b| String::from_utf8_lossy(b).into_owned())
}

impl Revert {
    /// The card's content for this file: a diff from now to the earlier content, or a note for a deletion.
    fn display(&self, cwd: &Path) -> Content {
        if self.outside {
            return Content::Text(format!(
                "`{}` leads outside the workspace, to {}.",
                shown(&self.path, cwd),
                self.real.display()
            ));
        }
        match &self.target {
            Some(target) => Content::Diff {
                path: self.path.clone(),
                old_text: text_of(&self.current),
                new_text: String::from_utf8_lossy(target).into_owned(),
            },
            None => {
                Content::Text(format!("`{}` is deleted: it did not exist before.", shown(&self.path, cwd)))
            }
        }
    }
}

impl Session {
    /// End the turn's record and save it as a checkpoint when it changed files.
    pub(super) async fn save_checkpoint(&self, prompt: &str) {
        let changes = self.changes.finish().await;
        let Some(store) = &self.store else { return };
        if changes.files.is_empty() {
            return;
        }
        let files = changes
            .files
            .into_iter()
            .map(|f| SavedFile {
                path: f.path.display().to_string(),
                before: match f.before {
                    Before::Absent => None,
                    Before::Content(bytes) => Some(bytes),
                },
                after: f.after,
            })
            .collect();
        let at = crate::clock::now_millis();
        if let Err(e) = store.add_checkpoint(&self.id, prompt, &changes.uncovered, files, at).await {
            tracing::error!(error = %e, "the turn's checkpoint could not be saved");
        }
    }

    async fn stored_checkpoints(&self) -> Result<Vec<CheckpointRow>, String> {
        let Some(store) = &self.store else {
            return Err("Checkpoints need the session database, which could not be opened.".into());
        };
        store.checkpoints(&self.id).await.map_err(|e| format!("The checkpoints could not be read: {e}"))
    }

    /// The answer to `/checkpoints`.
    pub(super) async fn checkpoints_command(&self) -> String {
        let rows = match self.stored_checkpoints().await {
            Ok(rows) => rows,
            Err(message) => return message,
        };
        if rows.is_empty() {
            return "No checkpoints yet. Every turn that changes files saves one (edits, writes, patches, and shell commands in a git work tree).".into();
        }
        let mut text = String::from("Checkpoints, oldest first:\n");
        for row in &rows {
            let mut names: Vec<String> = row
                .files
                .iter()
                .take(LISTED_FILES)
                .map(|(p, _)| format!("`{}`", shown(Path::new(p), &self.cwd)))
                .collect();
            if row.files.len() > LISTED_FILES {
                names.push(format!("+{} more", row.files.len() - LISTED_FILES));
            }
            let undone = if row.undone_at.is_some() { " (undone)" } else { "" };
            text.push_str(&format!(
                "{}. {} “{}”: {}{undone}\n",
                row.number,
                crate::clock::iso8601(row.created_at),
                row.prompt,
                names.join(", ")
            ));
            if !row.uncovered.is_empty() {
                text.push_str(&format!("   not covered: {}\n", row.uncovered.join("; ")));
            }
        }
        text.push_str("\n`/undo` reverts the newest checkpoint not yet undone; `/restore N` puts the files back as they were before checkpoint N.");
        text
    }

    /// `/undo` (`arg: None`) or `/restore N`.
    pub(super) async fn restore_command(
        &self,
        arg: Option<String>,
        conversation: &mut Conversation,
        cancel: &CancellationToken,
    ) -> StopReason {
        let rows = match self.stored_checkpoints().await {
            Ok(rows) => rows,
            Err(message) => {
                self.reply(&message);
                return StopReason::EndTurn;
            }
        };
        let chosen = match choose(&rows, arg.as_deref()) {
            Ok(chosen) => chosen,
            Err(message) => {
                self.reply(&message);
                return StopReason::EndTurn;
            }
        };
        let reverts = match self.plan_reverts(&chosen).await {
            Ok(reverts) => reverts,
            Err(message) => {
                self.reply(&message);
                return StopReason::EndTurn;
            }
        };
        self.revert(&chosen, reverts, conversation, cancel).await
    }

    /// Per file: the content before the oldest chosen checkpoint, and the fingerprint after the newest.
    async fn plan_reverts(&self, chosen: &[(i64, CheckpointRow)]) -> Result<Vec<Revert>, String> {
        let Some(store) = &self.store else { return Err("The session database is not open.".into()) };
        let mut plan: BTreeMap<PathBuf, Revert> = BTreeMap::new();
        for (_, row) in chosen.iter().rev() {
            let files = store
                .checkpoint_files(row.id)
                .await
                .map_err(|e| format!("The checkpoint could not be read: {e}"))?;
            for file in files {
                let path = PathBuf::from(&file.path);
                let entry = plan.entry(path.clone()).or_insert_with(|| Revert {
                    path,
                    target: None,
                    expected: file.after.clone(),
                    current: None,
                    real: PathBuf::new(),
                    outside: false,
                });
                entry.target = file.before;
            }
        }
        let mut reverts: Vec<Revert> = plan.into_values().collect();
        for revert in &mut reverts {
            (revert.real, revert.outside) = self.landing(&revert.path);
            if !revert.outside {
                revert.current = tokio::fs::read(&revert.real).await.ok();
            }
        }
        Ok(reverts)
    }

    /// Where a revert of `path` lands: its folder resolved through the boundary (every link followed), the name
    /// kept; and whether that is outside the session's roots (so is a path that cannot be resolved).
    fn landing(&self, path: &Path) -> (PathBuf, bool) {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return (path.to_path_buf(), true);
        };
        match self.files.locate(parent) {
            Ok(located) => (located.path.join(name), !located.inside),
            Err(_) => (path.to_path_buf(), true),
        }
    }

    async fn revert(
        &self,
        chosen: &[(i64, CheckpointRow)],
        reverts: Vec<Revert>,
        conversation: &mut Conversation,
        cancel: &CancellationToken,
    ) -> StopReason {
        let numbers: Vec<String> = chosen.iter().map(|(n, _)| n.to_string()).collect();
        let call_id = new_id("undo");
        let files = match reverts.len() {
            1 => "1 file".to_string(),
            n => format!("{n} files"),
        };
        let title = match numbers.as_slice() {
            [one] => format!("Revert checkpoint {one} ({files})"),
            _ => format!("Revert checkpoints {} ({files})", numbers.join(", ")),
        };
        let display: Vec<Content> = reverts.iter().map(|r| r.display(&self.cwd)).collect();
        let presentation = Presentation {
            title,
            kind: Kind::Edit,
            locations: reverts.iter().map(|r| Location::new(&r.real)).collect(),
            patterns: reverts.iter().map(|r| r.real.display().to_string()).collect(),
            content: display.clone(),
        };
        let raw_input = json!({"checkpoints": numbers});
        let sink = self.sink();
        sink.emit(AgentEvent::ToolCallStarted {
            call_id: call_id.clone(),
            tool: "undo".into(),
            presentation: presentation.clone(),
            raw_input: raw_input.clone(),
        });
        let asked = self.ask_first(&reverts, &presentation, &call_id, raw_input);
        if let Some((ask, refused)) = asked {
            let reply = tokio::select! {
                reply = self.perms.insist(&ask) => reply,
                () = cancel.cancelled() => Reply::Cancelled,
            };
            if !matches!(reply, Reply::AllowOnce | Reply::AllowAlways) {
                let output = "Nothing was reverted.".to_string();
                self.finish_card(&call_id, ToolStatus::Failed, &output, Vec::new(), Vec::new());
                self.reply(&format!("{output} {refused}"));
                return if reply == Reply::Cancelled { StopReason::Cancelled } else { StopReason::EndTurn };
            }
        }
        sink.emit(AgentEvent::ToolCallRunning { call_id: call_id.clone() });
        let (done, failed) = self.apply(&reverts).await;
        if let Some(store) = &self.store {
            let ids = chosen.iter().map(|(_, row)| row.id).collect();
            if let Err(e) = store.undo_checkpoints(ids, crate::clock::now_millis()).await {
                tracing::error!(error = %e, "the undo could not be recorded");
            }
        }
        let summary = self.summary(&numbers, &done, &failed);
        let status = if failed.is_empty() { ToolStatus::Completed } else { ToolStatus::Failed };
        let locations = reverts.iter().map(|r| Location::new(&r.path)).collect();
        self.finish_card(&call_id, status, &summary, display, locations);
        self.tell_model(&summary, conversation);
        self.reply(&summary);
        StopReason::EndTurn
    }

    /// The question a revert must put first, and what to say when it is refused: when a file changed after the
    /// checkpoint (reverting discards that), or a path leads outside the workspace (named by its real path).
    /// Neither offers "always".
    fn ask_first(
        &self,
        reverts: &[Revert],
        presentation: &Presentation,
        call_id: &str,
        raw_input: serde_json::Value,
    ) -> Option<(Ask, String)> {
        let outside: Vec<&Revert> = reverts.iter().filter(|r| r.outside).collect();
        let changed: Vec<&Revert> =
            reverts.iter().filter(|r| !r.outside && fingerprint_of(&r.real) != r.expected).collect();
        let mut notes = Vec::new();
        for r in &outside {
            let does = if r.target.is_some() { "writes" } else { "deletes" };
            notes.push(Content::Text(format!(
                "`{}` leads outside the workspace, to {}: reverting {does} it.",
                shown(&r.path, &self.cwd),
                r.real.display()
            )));
        }
        if !changed.is_empty() {
            let names: Vec<String> =
                changed.iter().map(|r| format!("`{}`", shown(&r.path, &self.cwd))).collect();
            notes.push(Content::Text(format!(
                "{} changed after the checkpoint; reverting discards those later changes.",
                names.join(", ")
            )));
        }
        let (why, refused) = match (outside.len(), changed.is_empty()) {
            (0, true) => return None,
            (0, false) => (
                "it discards changes made after the checkpoint",
                "The files changed after the checkpoint, and the revert was not allowed.".to_string(),
            ),
            (1, _) => (
                "it writes or deletes outside the workspace",
                "A file leads outside the workspace, and the revert was not allowed.".to_string(),
            ),
            (n, _) => (
                "it writes or deletes outside the workspace",
                format!("{n} files lead outside the workspace, and the revert was not allowed."),
            ),
        };
        let mut asked = presentation.clone();
        asked.content.splice(0..0, notes);
        let ask = Ask {
            session_id: self.id.clone(),
            call_id: call_id.to_string(),
            tool: "undo".into(),
            category: Category::Edit,
            presentation: asked,
            raw_input,
            protected: Some(why.into()),
        };
        Some((ask, refused))
    }

    /// Write every file back; returns what was done and what failed, as lines.
    async fn apply(&self, reverts: &[Revert]) -> (Vec<String>, Vec<String>) {
        let (mut done, mut failed) = (Vec::new(), Vec::new());
        for revert in reverts {
            let name = shown(&revert.path, &self.cwd);
            // At the real path: the user was asked about every one outside the workspace.
            let restored = match (&revert.target, revert.outside) {
                (Some(bytes), false) => Some(self.files.restore(&revert.real, bytes).await),
                (Some(bytes), true) => Some(self.files.restore_outside(&revert.real, bytes).await),
                (None, _) => None,
            };
            let result = match restored {
                Some(done) => done.map(|_| format!("`{name}` restored")),
                None => match tokio::fs::remove_file(&revert.real).await {
                    Ok(()) => Ok(format!("`{name}` deleted (it did not exist before)")),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        Ok(format!("`{name}` already gone"))
                    }
                    Err(e) => Err(e.to_string()),
                },
            };
            match result {
                Ok(line) => done.push(line),
                Err(e) => failed.push(format!("`{name}`: {e}")),
            }
        }
        (done, failed)
    }

    fn summary(&self, numbers: &[String], done: &[String], failed: &[String]) -> String {
        let which = match numbers {
            [one] => format!("checkpoint {one}"),
            _ => format!("checkpoints {}", numbers.join(", ")),
        };
        let mut text = format!("Reverted {which}: {}.", done.join(", "));
        if !failed.is_empty() {
            text.push_str(&format!(" Could not revert: {}.", failed.join(", ")));
        }
        text
    }

    fn finish_card(
        &self,
        call_id: &str,
        status: ToolStatus,
        output: &str,
        display: Vec<Content>,
        locations: Vec<Location>,
    ) {
        self.sink().emit(AgentEvent::ToolCallFinished {
            call_id: call_id.to_string(),
            status,
            output: output.to_string(),
            display,
            locations,
            raw_output: json!({"output": output}),
        });
    }

    /// The model learns what was reverted (and must read the files again), now and after a reload.
    fn tell_model(&self, summary: &str, conversation: &mut Conversation) {
        let note = format!(
            "<checkpoint-restore>\nThe user reverted file changes. {summary}\nThose files are back to their earlier content: read them again before changing them.\n</checkpoint-restore>"
        );
        if let Some(journal) = self.journal() {
            journal.note(&note);
        }
        conversation.history.push_user(vec![UserPart::Text(note)]);
    }
}

/// The checkpoints a command reverts, newest last, with their numbers.
fn choose(rows: &[CheckpointRow], arg: Option<&str>) -> Result<Vec<(i64, CheckpointRow)>, String> {
    let mut numbered = rows.iter().cloned().map(|row| (row.number, row));
    let (first, last) = (rows.first().map_or(0, |r| r.number), rows.last().map_or(0, |r| r.number));
    match arg {
        None => numbered.rfind(|(_, row)| row.undone_at.is_none()).map(|last| vec![last]).ok_or_else(|| {
            "There is nothing to undo: no turn of this session changed files since the last undo.".into()
        }),
        Some(arg) => {
            let n: i64 = arg.trim().parse().ok().filter(|n| rows.iter().any(|r| r.number == *n)).ok_or_else(
                || match rows.len() {
                    0 => "There are no checkpoints yet.".to_string(),
                    _ => format!(
                        "`/restore` needs a checkpoint number from {first} to {last} (see `/checkpoints`)."
                    ),
                },
            )?;
            let chosen: Vec<_> = numbered.filter(|(m, row)| *m >= n && row.undone_at.is_none()).collect();
            if chosen.is_empty() {
                return Err(format!("Checkpoint {n} and every later one are already undone."));
            }
            Ok(chosen)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, undone: bool) -> CheckpointRow {
        CheckpointRow {
            id,
            number: id - 9,
            prompt: format!("p{id}"),
            uncovered: vec![],
            created_at: 0,
            undone_at: undone.then_some(1),
            files: vec![],
        }
    }

    #[test]
    fn undo_takes_the_newest_checkpoint_not_undone_and_restore_takes_every_later_one() {
        let rows = vec![row(10, false), row(11, false), row(12, true), row(13, false)];
        let ids = |chosen: Result<Vec<(i64, CheckpointRow)>, String>| {
            chosen.unwrap().into_iter().map(|(n, r)| (n, r.id)).collect::<Vec<_>>()
        };
        assert_eq!(ids(choose(&rows, None)), vec![(4, 13)]);
        assert_eq!(ids(choose(&rows, Some("2"))), vec![(2, 11), (4, 13)]);
        assert_eq!(
            choose(&rows, Some("9")).unwrap_err(),
            "`/restore` needs a checkpoint number from 1 to 4 (see `/checkpoints`)."
        );
        assert_eq!(
            choose(&rows[2..3], Some("3")).unwrap_err(),
            "Checkpoint 3 and every later one are already undone."
        );
        assert_eq!(
            choose(&rows[1..], Some("1")).unwrap_err(),
            "`/restore` needs a checkpoint number from 2 to 4 (see `/checkpoints`).",
            "pruned checkpoints keep the numbers of the rest"
        );
        assert_eq!(
            choose(&rows[2..3], None).unwrap_err(),
            "There is nothing to undo: no turn of this session changed files since the last undo."
        );
    }
}
