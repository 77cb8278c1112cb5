//! `tinycode setup` and `tinycode doctor`: the terminal commands that set up a model provider and check it.
//! Setup finds local servers (loopback probes) and key variables, asks for a provider and its key (echo off),
//! checks them with a real request (the model list), asks for a model and writes the user's config file (mode
//! 0600). Editors run it as the terminal sign-in method (`tinycode acp --setup`). `doctor` is in [`doctor`].
//!
//! Owns these interactive flows. Provider settings belong to `config`, the requests to `llm`.

pub mod doctor;
pub mod terminal;

use std::path::PathBuf;

use crate::config::providers::{KNOWN, Kind, Known, Provider};
use crate::config::user::{ProviderEntry, save_provider};
use crate::config::{Config, Sources};
use crate::llm::{detect, router, transport};
use terminal::Terminal;

/// One choice of the menu.
enum Choice {
    /// A server found on this machine.
    Local(Provider),
    Hosted(&'static Known),
    /// A server the user names by URL.
    Other,
}

impl Choice {
    fn line(&self, sources: &Sources) -> String {
        match self {
            Choice::Local(p) => format!("{} at {} ({} models)", p.label(), p.base_url, p.models.len()),
            Choice::Hosted(k) => match k.key_vars.iter().find(|v| sources.var(v).is_some()) {
                Some(var) => format!("{} ({var} is set)", k.label),
                None => k.label.to_string(),
            },
            Choice::Other => "Another server that speaks the OpenAI API (you give its URL)".into(),
        }
    }

    fn name(&self) -> &str {
        match self {
            Choice::Local(p) => &p.name,
            Choice::Hosted(k) => k.name,
            Choice::Other => "custom",
        }
    }
}

/// What the flow decided, before it is checked and saved.
struct Picked {
    entry: ProviderEntry,
    /// The key to check with (from the answer or the named variable).
    key: Option<String>,
    default_model: Option<String>,
}

/// The menu: servers found here, then the hosted providers (those with a key variable set first), then "other".
async fn choices(sources: &Sources, targets: &[detect::Target]) -> Vec<Choice> {
    let mut choices: Vec<Choice> =
        detect::probe_all(targets).await.into_iter().map(|found| Choice::Local(found.provider)).collect();
    let hosted: Vec<&'static Known> = KNOWN.iter().filter(|k| !k.local).collect();
    let has_key = |k: &&Known| k.key_vars.iter().any(|v| sources.var(v).is_some());
    choices.extend(hosted.iter().filter(|k| has_key(k)).map(|k| Choice::Hosted(k)));
    choices.extend(hosted.iter().filter(|k| !has_key(k)).map(|k| Choice::Hosted(k)));
    choices.push(Choice::Other);
    choices
}

/// Pick by number or by name; an empty answer takes the first.
fn pick<'a>(choices: &'a [Choice], answer: &str) -> Option<&'a Choice> {
    if answer.is_empty() {
        return choices.first();
    }
    if let Ok(n) = answer.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| choices.get(i));
    }
    let answer = answer.to_ascii_lowercase();
    choices.iter().find(|c| c.name() == answer)
}

fn ask_key(
    term: &mut Terminal,
    sources: &Sources,
    known: &Known,
) -> Option<(Option<String>, Option<String>)> {
    if let Some(var) = known.key_vars.iter().find(|v| sources.var(v).is_some())
        && term.confirm(&format!("Use {var} from your environment?"), true)?
    {
        return Some((sources.var(var).map(String::from), Some(var.to_string())));
    }
    loop {
        let key = term.ask_secret(&format!("API key for {} (typing is hidden): ", known.label))?;
        if !key.is_empty() {
            return Some((Some(key), None));
        }
        term.say("A key is needed for this provider.\n");
    }
}

fn ask_choice(term: &mut Terminal, sources: &Sources, choice: &Choice) -> Option<Picked> {
    let entry = |name: &str, kind: Kind, base_url: Option<String>| ProviderEntry {
        name: name.to_string(),
        kind,
        base_url,
        api_key: None,
        api_key_env: None,
        models: Vec::new(),
    };
    match choice {
        Choice::Local(provider) => Some(Picked {
            entry: entry(&provider.name, Kind::OpenAiCompatible, Some(provider.base_url.clone())),
            key: None,
            default_model: provider.models.first().cloned(),
        }),
        Choice::Hosted(known) => {
            let (key, var) = ask_key(term, sources, known)?;
            let mut entry = entry(known.name, known.kind, None);
            match var {
                Some(var) => entry.api_key_env = Some(var),
                None => entry.api_key = key.clone(),
            }
            Some(Picked { entry, key, default_model: Some(known.default_model.to_string()) })
        }
        Choice::Other => {
            let url = loop {
                let url = term.ask("Base URL (for example http://127.0.0.1:8000/v1): ")?;
                match transport::check_url(&url) {
                    Ok(_) => break url,
                    Err(e) => term.say(&format!("{e}\n")),
                }
            };
            let key =
                term.ask_secret("API key (leave empty if the server needs none; typing is hidden): ")?;
            let key = (!key.is_empty()).then_some(key);
            let mut entry = entry("custom", Kind::OpenAiCompatible, Some(url));
            entry.api_key = key.clone();
            Some(Picked { entry, key, default_model: None })
        }
    }
}

/// Check the pick with a real request: the provider's model list.
async fn check(picked: &Picked, config: &Config) -> Result<Vec<String>, String> {
    let known = crate::config::providers::known(&picked.entry.name);
    let provider = Provider {
        name: picked.entry.name.clone(),
        kind: picked.entry.kind,
        base_url: picked
            .entry
            .base_url
            .clone()
            .or_else(|| known.map(|k| k.base_url.to_string()))
            .unwrap_or_default(),
        api_key: picked.key.clone(),
        bearer: picked.entry.api_key_env.as_deref() == Some("ANTHROPIC_AUTH_TOKEN"),
        key_source: None,
        needs_key: false,
        key_help: String::new(),
        models: Vec::new(),
        source: String::new(),
    };
    router::list_models(&router::endpoint(&provider, config), provider.kind).await.map_err(|e| e.to_string())
}

/// Run the flow; the file written, or why not.
pub async fn run(
    sources: &Sources,
    targets: &[detect::Target],
    term: &mut Terminal<'_>,
) -> Result<PathBuf, String> {
    let ended = || "setup ended before it was finished; nothing was saved".to_string();
    term.say("tinycode setup: choose the model provider tinycode uses.\nLooking for model servers on this machine…\n\n");
    let choices = choices(sources, targets).await;
    for (n, choice) in choices.iter().enumerate() {
        term.say(&format!("  {:>2}. {}\n", n + 1, choice.line(sources)));
    }
    let choice = loop {
        let answer = term.ask("\nProvider (number or name) [1]: ").ok_or_else(ended)?;
        match pick(&choices, &answer) {
            Some(choice) => break choice,
            None => term.say(&format!("`{answer}` is not one of the choices.\n")),
        }
    };
    let mut picked = ask_choice(term, sources, choice).ok_or_else(ended)?;
    let config = Config::load_user(sources).map_err(|e| e.to_string())?;
    term.say("Checking… ");
    let models = match check(&picked, &config).await {
        Ok(models) => {
            term.say(&format!("it answers: {} models.\n", models.len()));
            models
        }
        Err(e) => {
            term.say(&format!("it failed: {e}\n"));
            if !term.confirm("Save it anyway?", false).ok_or_else(ended)? {
                return Err("nothing was saved".into());
            }
            Vec::new()
        }
    };
    let default = picked
        .default_model
        .clone()
        .filter(|m| !m.is_empty() && (models.is_empty() || models.contains(m)))
        .or_else(|| models.first().cloned())
        .unwrap_or_default();
    let model = term.ask(&format!("Model [{default}]: ")).ok_or_else(ended)?;
    let model = if model.is_empty() { default } else { model };
    if !model.is_empty() {
        picked.entry.models = vec![model];
    }
    let path = save_provider(sources, &picked.entry).map_err(|e| e.to_string())?;
    term.say(&format!(
        "Saved to {} (readable only by you). tinycode now uses {}{}. Run `tinycode doctor` to check it at any time.\n",
        path.display(),
        picked.entry.name,
        picked.entry.models.first().map(|m| format!(" with {m}")).unwrap_or_default()
    ));
    Ok(path)
}

/// `tinycode setup` on this process's terminal. Returns the exit code.
pub async fn command(sources: Sources) -> u8 {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut output = std::io::stdout();
    let tty = terminal::is_tty(0).then_some(0);
    let mut term = Terminal { input: &mut input, output: &mut output, tty };
    let targets = detect::default_targets(sources.var("OLLAMA_HOST"));
    match run(&sources, &targets, &mut term).await {
        Ok(_) => 0,
        Err(e) => {
            term.say(&format!("{e}\n"));
            1
        }
    }
}
