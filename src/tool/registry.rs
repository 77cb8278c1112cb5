//! The ordered, thread-safe [`Registry`] and the execution flow of seed 000 §8.1 (lookup → preview →
//! permission → `tool.execute.before` → execute → error or after-hook → `tool.execute.after` → truncation
//! preview with the full output saved). Tool code runs behind [`boundary`]: a panic is that call's error, and
//! arguments over the size bound are refused before the tool sees them.
//!
//! Owns running one call. Must not know any particular tool: the built-ins are registered by `builtin`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::{Context, Def, Outcome, Preview, Progress, ToolError, boundary, invalid, repair, truncate};
use crate::bus::Event;
use crate::config::EditMode;
use crate::display::Presentation;
use crate::permission::{Ask, Verdict};

/// The ordered, thread-safe set of tools.
#[derive(Default)]
pub struct Registry {
    defs: RwLock<Vec<Arc<Def>>>,
    /// Tools offered in one edit mode only (the others are offered in every mode).
    only_in: RwLock<Vec<(String, EditMode)>>,
}

impl Registry {
    fn read_defs(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Def>>> {
        match self.defs.read() {
            Ok(defs) => defs,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Add a tool; a tool with the same id is replaced in place, keeping its position.
    pub fn register(&self, def: Def) {
        let mut defs = match self.defs.write() {
            Ok(defs) => defs,
            Err(poisoned) => poisoned.into_inner(),
        };
        let def = Arc::new(def);
        match defs.iter().position(|d| d.id == def.id) {
            Some(i) => defs[i] = def,
            None => defs.push(def),
        }
    }

    /// Remove the tool `id` (a session's MCP server withdrew it). Returns whether it was there.
    pub fn unregister(&self, id: &str) -> bool {
        let mut defs = match self.defs.write() {
            Ok(defs) => defs,
            Err(poisoned) => poisoned.into_inner(),
        };
        let before = defs.len();
        defs.retain(|d| d.id != id);
        defs.len() != before
    }

    /// A registry with the same tools, which can then change on its own (a session's, with its MCP tools).
    pub fn fork(&self) -> Registry {
        let only_in = match self.only_in.read() {
            Ok(only_in) => only_in.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        Registry { defs: RwLock::new(self.read_defs().clone()), only_in: RwLock::new(only_in) }
    }

    /// A registry with only the tools `keep` accepts (and `invalid`, which answers unknown names), in the same
    /// order. Subagents get one: a tool left out is unknown to them, whatever they call.
    pub fn subset(&self, keep: impl Fn(&str) -> bool) -> Registry {
        let defs = self.read_defs().iter().filter(|d| d.id == invalid::ID || keep(&d.id)).cloned().collect();
        let only_in = match self.only_in.read() {
            Ok(only_in) => only_in.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        Registry { defs: RwLock::new(defs), only_in: RwLock::new(only_in) }
    }

    /// The ids of the tools offered to the model, in order.
    pub fn ids(&self) -> Vec<String> {
        self.model_tools().iter().map(|d| d.id.clone()).collect()
    }

    /// Exact lookup.
    pub fn get(&self, id: &str) -> Option<Arc<Def>> {
        self.read_defs().iter().find(|d| d.id == id).cloned()
    }

    /// Lookup that forgives what models get wrong in names: whitespace, case, `-`/`_`, `default_api.` and
    /// other agents' names for a tool (`repair::canonical_name`). The hidden `invalid` tool is only exact.
    pub fn resolve(&self, name: &str) -> Option<Arc<Def>> {
        self.get(name).or_else(|| {
            let defs = self.read_defs();
            let ids: Vec<&str> = defs.iter().map(|d| d.id.as_str()).filter(|id| *id != invalid::ID).collect();
            let id = repair::canonical_name(name, &ids)?;
            defs.iter().find(|d| d.id == id).cloned()
        })
    }

    /// The tools offered to the model, in registration order. `invalid` is never offered.
    pub fn model_tools(&self) -> Vec<Arc<Def>> {
        self.read_defs().iter().filter(|d| d.id != invalid::ID).cloned().collect()
    }

    /// Offer the tool `id` to the model only when the session's edit mode is `mode`.
    pub fn offer_only_in(&self, id: &str, mode: EditMode) {
        let mut only_in = match self.only_in.write() {
            Ok(only_in) => only_in,
            Err(poisoned) => poisoned.into_inner(),
        };
        only_in.retain(|(tool, _)| tool != id);
        only_in.push((id.to_string(), mode));
    }

    /// The tools offered to a model editing in `mode`, in registration order.
    pub fn offered(&self, mode: EditMode) -> Vec<Arc<Def>> {
        let only_in = match self.only_in.read() {
            Ok(only_in) => only_in.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        self.model_tools()
            .into_iter()
            .filter(|d| only_in.iter().all(|(id, only)| *id != d.id || *only == mode))
            .collect()
    }

    /// Run one call through the seed's execution flow; an unknown tool's error lists the tools offered for the
    /// context's edit mode.
    pub async fn execute(&self, name: &str, ctx: Context, args: Value) -> Outcome {
        let offered: Vec<String> = self.offered(ctx.edit_mode).iter().map(|d| d.id.clone()).collect();
        self.execute_offered(name, ctx, args, &offered).await
    }

    /// [`Registry::execute`] for a call answering a request that offered exactly `offered` (what an unknown
    /// tool's error lists).
    pub async fn execute_offered(
        &self,
        name: &str,
        mut ctx: Context,
        args: Value,
        offered: &[String],
    ) -> Outcome {
        let Some(def) = self.resolve(name) else {
            ctx.report(Progress::Presented(Presentation {
                title: format!("Unknown tool `{name}`"),
                ..Presentation::default()
            }));
            return Outcome::error(format!(
                "Unknown tool `{name}`. Available tools: {}.",
                offered.join(", ")
            ));
        };
        let presented = boundary::guard_sync(|| (def.present)(&args, &ctx.directory));
        let mut presentation = match presented {
            Ok(presentation) => presentation,
            Err(error) => {
                ctx.report(Progress::Presented(Presentation {
                    title: def.id.clone(),
                    ..Presentation::default()
                }));
                return Outcome::from_error(error);
            }
        };
        if let Err(error) = boundary::check_size(&args) {
            ctx.report(Progress::Presented(presentation));
            return Outcome::from_error(error);
        }
        let mut category = def.permission;
        let mut presented_early = false;
        if let Some(preview) = &def.preview {
            let (watched, early) = watch_presented(&ctx);
            let previewed = tokio::select! {
                biased;
                previewed = boundary::guard(async { preview(watched, args.clone()).await }) => previewed,
                () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
            };
            presented_early = early.load(Ordering::Relaxed);
            match previewed {
                Ok(Preview { presentation: shown, plan, category: chosen }) => {
                    presentation = shown;
                    ctx.plan = Some(plan);
                    category = chosen.or(category);
                }
                Err(error) => {
                    if !presented_early {
                        ctx.report(Progress::Presented(presentation));
                    }
                    return Outcome::from_error(error);
                }
            }
        }
        ctx.report(if presented_early {
            Progress::Revised(presentation.clone())
        } else {
            Progress::Presented(presentation.clone())
        });
        if let (Some(perms), Some(category)) = (&ctx.perms, category) {
            let ask = Ask {
                session_id: ctx.session_id.clone(),
                call_id: ctx.call_id.clone(),
                tool: def.id.clone(),
                category,
                presentation: presentation.clone(),
                raw_input: args.clone(),
                protected: None,
            };
            let verdict = tokio::select! {
                verdict = perms.check(&ask) => verdict,
                () = ctx.cancel.cancelled() => Verdict::Cancelled,
            };
            match verdict {
                Verdict::Allow => {}
                Verdict::Denied { rule, why } => {
                    return Outcome::error(format!(
                        "Permission denied by rule {{permission: \"{}\", pattern: \"{}\", action: deny}}. {why}",
                        rule.permission, rule.pattern
                    ));
                }
                Verdict::Rejected => {
                    return Outcome::error(
                        "The user declined this tool call. Do not retry it; ask the user how to proceed if needed."
                            .into(),
                    );
                }
                Verdict::Cancelled => return Outcome::cancelled(),
            }
        }
        if let Some(before_run) = ctx.before_run.take() {
            tokio::select! {
                () = before_run() => {}
                () = ctx.cancel.cancelled() => return Outcome::cancelled(),
            }
        }
        ctx.report(Progress::Running);
        ctx.bus.publish(Event::ToolExecuteBefore {
            session_id: ctx.session_id.clone(),
            call_id: ctx.call_id.clone(),
            tool: def.id.clone(),
            args: args.clone(),
        });
        let after = |success: bool| Event::ToolExecuteAfter {
            session_id: ctx.session_id.clone(),
            call_id: ctx.call_id.clone(),
            tool: def.id.clone(),
            success,
        };
        // Poll the tool first so a tool that handles cancellation itself (killing processes, keeping partial
        // output) gets to finish that work; the token branch only wins while the tool is still pending.
        let result = tokio::select! {
            biased;
            result = boundary::guard(async { (def.execute)(ctx.clone(), args).await }) => result,
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        };
        // The plan may hold whole files (a 10 MB edit's text before and after): they are freed on a blocking
        // thread rather than before the answer (unmapping 20 MB took 2–3 ms).
        if let (Some(plan), Ok(runtime)) = (ctx.plan.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn_blocking(move || drop(plan));
        }
        let mut output = match result {
            Err(error) => {
                ctx.bus.publish(after(false));
                return Outcome::from_error(error);
            }
            Ok(output) => output,
        };
        if let Some(hook) = &ctx.after_hook {
            hook(&def.id, &mut output);
        }
        ctx.bus.publish(after(true));
        let text = if output.bounded { output.output } else { preview_and_save(&ctx, output.output).await };
        let locations = if output.locations.is_empty() { presentation.locations } else { output.locations };
        Outcome {
            output: text,
            is_error: output.failed,
            display: output.display,
            locations,
            metadata: output.metadata,
            cancelled: false,
            end_turn: output.end_turn,
        }
    }
}

/// A context for the preview that records whether the tool presented the call itself (before slow work).
fn watch_presented(ctx: &Context) -> (Context, Arc<AtomicBool>) {
    let early = Arc::new(AtomicBool::new(false));
    let mut watched = ctx.clone();
    if let Some(report) = ctx.progress.clone() {
        let flag = early.clone();
        watched.progress = Some(Arc::new(move |progress| {
            if matches!(progress, Progress::Presented(_)) {
                flag.store(true, Ordering::Relaxed);
            }
            report(progress);
        }));
    }
    (watched, early)
}

/// Apply the head+tail preview; when it cuts, save the full text and say where. Tools that bound their own
/// output (`ToolOutput::bounded`) may call it on the part that needs it.
pub async fn preview_and_save(ctx: &Context, text: String) -> String {
    let Some(preview) = truncate::preview(&text) else {
        return text;
    };
    let safe_id: String = ctx
        .call_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    let path = ctx.output_dir.join(format!("tool_{safe_id}_{}.txt", uuid::Uuid::new_v4().simple()));
    let (dir, file) = (ctx.output_dir.clone(), path.clone());
    let saved = tokio::task::spawn_blocking(move || {
        crate::private::dir(&dir)?;
        crate::private::write(&file, text.as_bytes())
    })
    .await
    .unwrap_or_else(|e| Err(std::io::Error::other(e)));
    match saved {
        Ok(()) => format!(
            "{preview}\n\nThe output was truncated. Full output saved to: {}\nUse grep on that file, or read it with offset/limit, to see the rest.",
            path.display()
        ),
        Err(e) => {
            tracing::warn!(error = %e, path = %path.display(), "could not save full tool output");
            format!("{preview}\n\nThe output was truncated (the full output could not be saved: {e}).")
        }
    }
}
