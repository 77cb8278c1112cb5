//! `tinycode doctor`: prints the effective configuration (every provider with its kind, URL, key (redacted) and
//! where each came from; the default model and what the catalogue knows of it; settings that were ignored), then
//! checks every provider with a real request (its model list) and explains each failure as a turn would, and
//! says how the session database is (whole, damaged, read-only, locked; damaged ones moved aside).
//!
//! Owns the report. Loading belongs to `config`, the checks to `llm`, the database inspection to `store`.

use std::io::Write;
use std::path::Path;

use crate::config::providers::Provider;
use crate::config::trust::Trust;
use crate::config::{Config, Sources};
use crate::llm::{catalogue, detect, router};

/// A key as the report shows it: its last four characters at most.
pub fn redact(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 8 {
        return "(set)".into();
    }
    format!("…{}", chars[chars.len() - 4..].iter().collect::<String>())
}

fn provider_line(provider: &Provider) -> String {
    let kind = match provider.kind {
        crate::config::providers::Kind::OpenAiCompatible => "OpenAI-compatible (Chat Completions)",
        crate::config::providers::Kind::OpenAi => "OpenAI Responses",
        crate::config::providers::Kind::Anthropic => "Anthropic Messages",
    };
    let key = match (&provider.api_key, &provider.key_source) {
        (Some(key), Some(source)) => format!("key {} from {source}", redact(key)),
        (Some(key), None) => format!("key {}", redact(key)),
        (None, _) if provider.needs_key => format!("NO KEY ({})", provider.key_help),
        (None, _) => "no key".into(),
    };
    format!("  {}: {kind} at {}, {key} [{}]\n", provider.name, provider.base_url, provider.source)
}

/// The report for a session rooted at `cwd`, and whether every check passed.
pub async fn report(sources: &Sources, cwd: &Path, targets: &[detect::Target]) -> (String, bool) {
    let trust = Trust::new(sources);
    let loaded = match Config::load(sources, cwd, &trust) {
        Ok(loaded) => loaded,
        Err(e) => return (format!("The configuration cannot be used: {e}\n"), false),
    };
    let mut config = loaded.config;
    let mut text =
        String::from("Configuration (environment, your config file, and the project's file when trusted):\n");
    if config.providers.is_empty() {
        text.push_str("  no provider is configured; looking for model servers on this machine…\n");
        config.adopt_detected(detect::probe_all(targets).await.into_iter().map(|f| f.provider).collect());
    }
    if config.providers.is_empty() {
        text.push_str(&format!("  none found: {}\n", crate::llm::NO_PROVIDER));
        return (text, false);
    }
    for provider in &config.providers {
        text.push_str(&provider_line(provider));
    }
    let info = catalogue::for_model(&config, &config.model);
    let abilities: Vec<&str> =
        [(info.tools, "tools"), (info.images, "images"), (info.reasoning, "reasoning")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
    text.push_str(&format!(
        "  model: {} (context {}, output {}{}{}; from the {})\n",
        config.model,
        info.context,
        info.output,
        if abilities.is_empty() { "" } else { ", " },
        abilities.join(", "),
        info.source
    ));
    if let Some(request) = &loaded.untrusted {
        text.push_str(&format!(
            "  ignored until you trust the project: {}\n",
            request.wants.iter().map(|w| w.key.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    for note in &config.notes {
        text.push_str(&format!("  note: {note}\n"));
    }
    let (database, mut healthy) = database_lines(sources).await;
    text.push_str(&database);
    text.push_str("\nChecks (each provider's model list):\n");
    for provider in &config.providers {
        let endpoint = router::endpoint(provider, &config);
        let result = match endpoint.check() {
            Ok(_) => router::list_models(&endpoint, provider.kind).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(models) => {
                let shown: Vec<&str> = models.iter().take(8).map(String::as_str).collect();
                let more = if models.len() > shown.len() { ", …" } else { "" };
                text.push_str(&format!(
                    "  {}: OK, {} models ({}{more})\n",
                    provider.name,
                    models.len(),
                    shown.join(", ")
                ));
            }
            Err(e) => {
                healthy = false;
                text.push_str(&format!("  {}: FAILED: {e}\n", provider.name));
            }
        }
    }
    text.push_str(&format!("\n{}\n", catalogue::CREDIT));
    (text, healthy)
}

/// The session database's state, and whether it is usable.
async fn database_lines(sources: &Sources) -> (String, bool) {
    use crate::store::inspect::{State, inspect};
    let path = crate::store::database_path(&sources.data_dir());
    let busy = crate::store::Tuning::from_var(sources.var(crate::store::BUSY_TIMEOUT_VAR)).busy_timeout;
    let found = match tokio::task::spawn_blocking(move || inspect(&path, busy)).await {
        Ok(found) => found,
        Err(e) => return (format!("\nSession database: could not be inspected ({e})\n"), false),
    };
    let (state, usable) = match &found.state {
        State::Missing => ("not created yet (no session stored)".to_string(), true),
        State::Ok => ("OK".to_string(), true),
        State::Damaged(why) => {
            (format!("DAMAGED ({why}): the agent moves it aside, unchanged, and starts a fresh one"), false)
        }
        State::ReadOnly(why) => {
            (format!("READ-ONLY ({why}): sessions are kept in memory until it takes writes"), false)
        }
        State::Locked => ("LOCKED by another process: writes wait for it".to_string(), true),
        State::Unreadable(why) => (format!("CANNOT BE OPENED ({why})"), false),
    };
    let mut text = format!("\nSession database:\n  {}: {state}\n", found.path.display());
    for aside in &found.sidelined {
        text.push_str(&format!("  damaged, moved aside: {}\n", aside.display()));
    }
    (text, usable)
}

/// `tinycode doctor [--cwd DIR]`. Returns the exit code.
pub async fn command(sources: Sources, cwd: &Path) -> u8 {
    let targets = detect::default_targets(sources.var("OLLAMA_HOST"));
    let (text, healthy) = report(&sources, cwd, &targets).await;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    if healthy { 0 } else { 1 }
}
