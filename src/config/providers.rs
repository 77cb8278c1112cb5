//! Model providers as configured: the three wire kinds, the well-known providers (their URLs, key variables and
//! default models), and how the environment, the user's file and a trusted project file name providers. Several
//! can be configured at once (`[providers.NAME]`); a model is then chosen as `NAME/model`.
//!
//! Precedence: an explicit provider (`TINYCODE_PROVIDER`/`provider`, `TINYCODE_BASE_URL`/`base_url`,
//! `TINYCODE_API_KEY`/`api_key`) and the `[providers.NAME]` tables; when none is configured, every well-known
//! provider whose key variable is set, in the order Anthropic, OpenAI, OpenRouter, DeepSeek, Gemini, then the
//! others (probing local servers happens later, in `llm::detect`, and only when this finds nothing).
//!
//! The key binding: a key is only ever sent to a base URL from the same source. A well-known provider's key
//! variable goes only to that provider's own built-in URL or to a URL the user set; a project file can neither
//! point the user's key at its own server nor pick which of the user's variables is sent where.
//!
//! Owns the provider settings and their resolution. Reads no files and opens no connections.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Layer, Origin, Sources};

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// OpenAI Chat Completions (`/chat/completions`): OpenRouter, DeepSeek, Ollama, vLLM, llama.cpp, LM Studio, …
    OpenAiCompatible,
    /// OpenAI Responses (`/responses`), stateless.
    OpenAi,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::OpenAiCompatible, Kind::OpenAi, Kind::Anthropic];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::OpenAiCompatible => "openai-compatible",
            Kind::OpenAi => "openai",
            Kind::Anthropic => "anthropic",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == text.trim())
    }

    /// How messages name an endpoint of this kind.
    pub fn endpoint_name(self) -> &'static str {
        match self {
            Kind::OpenAiCompatible => "an OpenAI-compatible endpoint",
            Kind::OpenAi => "an OpenAI Responses endpoint",
            Kind::Anthropic => "an Anthropic Messages endpoint",
        }
    }
}

/// A provider tinycode knows by name.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    pub name: &'static str,
    pub label: &'static str,
    pub kind: Kind,
    pub base_url: &'static str,
    /// Variables holding its key, in the order they are read.
    pub key_vars: &'static [&'static str],
    /// The model used when nothing names one (empty: ask the server).
    pub default_model: &'static str,
    /// A server on this machine (found by probing, needs no key).
    pub local: bool,
}

const fn hosted(
    name: &'static str,
    label: &'static str,
    kind: Kind,
    base_url: &'static str,
    key_vars: &'static [&'static str],
    default_model: &'static str,
) -> Known {
    Known { name, label, kind, base_url, key_vars, default_model, local: false }
}

const fn local(
    name: &'static str,
    label: &'static str,
    base_url: &'static str,
    key_vars: &'static [&'static str],
) -> Known {
    Known { name, label, kind: Kind::OpenAiCompatible, base_url, key_vars, default_model: "", local: true }
}

/// The well-known providers, hosted ones in detection order (PROVIDERS.md §7).
pub const KNOWN: &[Known] = &[
    hosted(
        "anthropic",
        "Anthropic",
        Kind::Anthropic,
        "https://api.anthropic.com",
        &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
        "claude-sonnet-4-5",
    ),
    hosted("openai", "OpenAI", Kind::OpenAi, "https://api.openai.com/v1", &["OPENAI_API_KEY"], "gpt-4.1"),
    hosted(
        "openrouter",
        "OpenRouter",
        Kind::OpenAiCompatible,
        "https://openrouter.ai/api/v1",
        &["OPENROUTER_API_KEY"],
        "anthropic/claude-sonnet-4.5",
    ),
    hosted(
        "deepseek",
        "DeepSeek",
        Kind::OpenAiCompatible,
        "https://api.deepseek.com",
        &["DEEPSEEK_API_KEY"],
        "deepseek-chat",
    ),
    hosted(
        "gemini",
        "Google Gemini",
        Kind::OpenAiCompatible,
        "https://generativelanguage.googleapis.com/v1beta/openai",
        &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        "gemini-2.5-pro",
    ),
    hosted(
        "groq",
        "Groq",
        Kind::OpenAiCompatible,
        "https://api.groq.com/openai/v1",
        &["GROQ_API_KEY"],
        "openai/gpt-oss-120b",
    ),
    hosted("xai", "xAI", Kind::OpenAiCompatible, "https://api.x.ai/v1", &["XAI_API_KEY"], "grok-4.3"),
    hosted(
        "mistral",
        "Mistral",
        Kind::OpenAiCompatible,
        "https://api.mistral.ai/v1",
        &["MISTRAL_API_KEY"],
        "mistral-medium-latest",
    ),
    local("ollama", "Ollama", "http://127.0.0.1:11434/v1", &[]),
    local("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1", &["LM_API_TOKEN"]),
    local("llamacpp", "llama.cpp", "http://127.0.0.1:8080/v1", &[]),
    local("vllm", "vLLM", "http://127.0.0.1:8000/v1", &[]),
];

/// The OpenAI endpoint, where `openai` speaks Responses.
pub const OPENAI_URL: &str = "https://api.openai.com/v1";

pub fn known(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == name)
}

fn same_url(a: &str, b: &str) -> bool {
    a.trim().trim_end_matches('/').eq_ignore_ascii_case(b.trim().trim_end_matches('/'))
}

/// The well-known provider whose built-in URL this is.
pub fn known_by_url(url: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| same_url(k.base_url, url))
}

/// A provider as the rest of tinycode uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// The name a model is qualified with (`NAME/model`).
    pub name: String,
    pub kind: Kind,
    pub base_url: String,
    pub api_key: Option<String>,
    /// Send the key as `Authorization: Bearer` to an Anthropic endpoint (`ANTHROPIC_AUTH_TOKEN`, gateways).
    pub bearer: bool,
    /// Where the key came from (a variable's name or a file), never the key itself.
    pub key_source: Option<String>,
    /// The provider refuses requests without a key.
    pub needs_key: bool,
    /// How the user provides a key, as messages say it.
    pub key_help: String,
    /// Models offered in the picker besides the server's own list; the first is the provider's default.
    pub models: Vec<String>,
    /// Where this provider was configured, for `tinycode doctor`.
    pub source: String,
}

impl Provider {
    /// The label messages use: the well-known name, else the configured one.
    pub fn label(&self) -> String {
        known(&self.name).map(|k| k.label.to_string()).unwrap_or_else(|| self.name.clone())
    }

    /// Is the server on this machine?
    pub fn is_local(&self) -> bool {
        let rest = self.base_url.split_once("://").map(|(_, r)| r).unwrap_or(&self.base_url);
        let authority = rest.split('/').next().unwrap_or_default();
        let host = match authority.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => authority,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// Is this a model server running on this machine (Ollama, LM Studio, llama.cpp, vLLM), rather than, say, a
    /// proxy on loopback in front of hosted models? Known by name or by the servers' default ports.
    pub fn is_local_server(&self) -> bool {
        let port =
            |url: &str| url.rsplit_once(':').and_then(|(_, p)| p.split('/').next()?.parse::<u16>().ok());
        self.is_local()
            && (known(&self.name).is_some_and(|k| k.local)
                || KNOWN.iter().any(|k| {
                    k.local && port(k.base_url).is_some() && port(k.base_url) == port(&self.base_url)
                }))
    }

    /// The model used when nothing names one.
    pub fn default_model(&self) -> Option<String> {
        self.models.first().cloned()
    }
}

/// One `[providers.NAME]` table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct ProviderLayer {
    kind: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
    #[serde(default)]
    models: Vec<String>,
}

/// The providers of one configuration, the default first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    pub providers: Vec<Provider>,
    /// The model new sessions use, as chosen (possibly `NAME/model`), when something names one.
    pub model: Option<String>,
    /// What was configured but not applied, and why (shown by `tinycode doctor`, logged).
    pub notes: Vec<String>,
}

/// The first set variable among `vars`, with its name.
fn first_var<'a>(sources: &'a Sources, vars: &[&'static str]) -> Option<(&'static str, &'a str)> {
    vars.iter().find_map(|v| sources.var(v).map(|value| (*v, value)))
}

fn key_help(vars: &[&str]) -> String {
    match vars {
        [] => "set TINYCODE_API_KEY".into(),
        [one] => format!("set {one} or TINYCODE_API_KEY"),
        many => format!("set {} or TINYCODE_API_KEY", many.join(", ")),
    }
}

/// A well-known provider from its key variables (and `OPENAI_BASE_URL`/`ANTHROPIC_BASE_URL`, the user's own).
fn from_known(known: &Known, sources: &Sources, source: &str) -> Provider {
    let url_var = match known.name {
        "openai" => sources.var("OPENAI_BASE_URL").or_else(|| sources.var("OPENAI_API_BASE")),
        "anthropic" => sources.var("ANTHROPIC_BASE_URL"),
        _ => None,
    };
    let base_url = url_var.unwrap_or(known.base_url).to_string();
    let kind = if known.name == "openai" && !same_url(&base_url, OPENAI_URL) {
        Kind::OpenAiCompatible
    } else {
        known.kind
    };
    let key = first_var(sources, known.key_vars);
    let builtin_url = same_url(&base_url, known.base_url);
    Provider {
        name: known.name.to_string(),
        kind,
        needs_key: !known.local && builtin_url,
        bearer: key.is_some_and(|(var, _)| var == "ANTHROPIC_AUTH_TOKEN"),
        key_source: key.map(|(var, _)| var.to_string()),
        api_key: key.map(|(_, value)| value.to_string()),
        key_help: key_help(known.key_vars),
        base_url,
        models: (!known.default_model.is_empty())
            .then(|| known.default_model.to_string())
            .into_iter()
            .collect(),
        source: source.to_string(),
    }
}

const EXPLICIT: &str = "TINYCODE_* variables and top-level settings";

fn first<T: Clone>(env: &Option<T>, project: &Option<T>, user: &Option<T>) -> Option<T> {
    env.clone().or(project.clone()).or(user.clone())
}

/// The single explicit provider (`TINYCODE_PROVIDER`/`provider`, `TINYCODE_BASE_URL`/`base_url`,
/// `TINYCODE_API_KEY`/`api_key`), if anything sets one and `provider` does not name a `[providers.NAME]` table.
fn explicit(
    env: &Layer,
    project: &Layer,
    user: &Layer,
    sources: &Sources,
    tables: &BTreeMap<String, (ProviderLayer, Origin)>,
) -> Result<Option<Provider>, String> {
    let chosen = first(&env.provider, &project.provider, &user.provider);
    let url = first(&env.base_url, &project.base_url, &user.base_url);
    let key = first(&env.api_key, &project.api_key, &user.api_key);
    if chosen.as_ref().is_some_and(|c| tables.contains_key(c))
        || (chosen.is_none() && url.is_none() && key.is_none())
    {
        return Ok(None);
    }
    let by_name = chosen.as_deref().and_then(known);
    let by_kind = chosen.as_deref().and_then(Kind::parse);
    if let Some(c) = &chosen
        && by_name.is_none()
        && by_kind.is_none()
        && url.is_none()
    {
        let names: Vec<&str> = KNOWN.iter().map(|k| k.name).collect();
        return Err(format!(
            "the provider `{c}` is neither configured ([providers.{c}]) nor known (known: {}; or a kind: \
             openai-compatible, openai, anthropic, with a base URL)",
            names.join(", ")
        ));
    }
    let identity = by_name
        .or_else(|| url.as_deref().and_then(known_by_url))
        .or_else(|| if url.is_none() && by_kind.is_none() { known("openai") } else { None });
    let url_origin = super::origin(&env.base_url, &project.base_url, &user.base_url);
    let key_origin = super::origin(&env.api_key, &project.api_key, &user.api_key);
    let mut provider = match identity {
        Some(k) => from_known(k, sources, EXPLICIT),
        None => {
            let kind = by_kind.unwrap_or(Kind::OpenAiCompatible);
            let name = chosen.clone().filter(|c| Kind::parse(c).is_none()).unwrap_or_else(|| "custom".into());
            Provider {
                name,
                kind,
                base_url: default_url(kind).to_string(),
                api_key: None,
                bearer: false,
                key_source: None,
                needs_key: kind != Kind::OpenAiCompatible,
                key_help: "set TINYCODE_API_KEY".into(),
                models: Vec::new(),
                source: EXPLICIT.into(),
            }
        }
    };
    if let Some(kind) = by_kind.filter(|_| by_name.is_none()) {
        provider.kind = kind;
    }
    if let Some(url) = url {
        // A well-known provider's variable goes only to its own URL or to one the user set.
        let own_url = identity.is_some_and(|k| same_url(k.base_url, &url));
        if url_origin == Origin::Project && !own_url {
            provider.api_key = None;
            provider.key_source = None;
            provider.bearer = false;
        }
        if provider.name == "openai" && by_kind.is_none() && !same_url(&url, OPENAI_URL) {
            provider.kind = Kind::OpenAiCompatible;
        }
        provider.needs_key = provider.needs_key && own_url;
        provider.base_url = url;
    }
    if let Some(key) = key {
        if url_origin == Origin::BuiltIn || key_origin == url_origin {
            provider.api_key = Some(key);
            provider.bearer = false;
            provider.key_source = Some(match key_origin {
                Origin::Project => "the project's config file".into(),
                _ if env.api_key.is_some() => "TINYCODE_API_KEY".into(),
                _ => "your config file".into(),
            });
        } else {
            tracing::warn!(
                "the API key is not sent to the project's base URL: they come from different sources"
            );
            provider.api_key = None;
            provider.key_source = None;
        }
    }
    Ok(Some(provider))
}

/// The built-in URL of a kind, when it is named without a URL.
fn default_url(kind: Kind) -> &'static str {
    match kind {
        Kind::Anthropic => "https://api.anthropic.com",
        Kind::OpenAi | Kind::OpenAiCompatible => OPENAI_URL,
    }
}

/// One `[providers.NAME]` table, applying the key binding for its origin.
fn from_table(
    name: &str,
    table: &ProviderLayer,
    origin: Origin,
    sources: &Sources,
    notes: &mut Vec<String>,
) -> Result<Provider, String> {
    let by_name = known(name);
    let kind = match (&table.kind, by_name) {
        (Some(kind), _) => Kind::parse(kind).ok_or_else(|| {
            format!("[providers.{name}] kind = \"{kind}\" is not one of openai-compatible, openai, anthropic")
        })?,
        // `openai` at another URL is a compatible server, as with OPENAI_BASE_URL.
        (None, Some(k))
            if k.name == "openai" && table.base_url.as_deref().is_some_and(|u| !same_url(u, OPENAI_URL)) =>
        {
            Kind::OpenAiCompatible
        }
        (None, Some(k)) => k.kind,
        (None, None) => Kind::OpenAiCompatible,
    };
    let builtin = by_name.filter(|k| k.kind == kind).map(|k| k.base_url).unwrap_or(default_url(kind));
    let base_url = table.base_url.clone().unwrap_or_else(|| builtin.to_string());
    // The well-known provider whose own built-in URL this is (when the table names no other URL).
    let home = table.base_url.is_none().then(|| known_by_url(&base_url)).flatten();
    let where_ = if origin == Origin::Project { "the project's config file" } else { "your config file" };
    let mut key: Option<(String, String)> = None;
    if let Some(value) = &table.api_key {
        key = Some((value.clone(), where_.into()));
    } else if let Some(var) = &table.api_key_env {
        let allowed = origin != Origin::Project || home.is_some_and(|k| k.key_vars.contains(&var.as_str()));
        if allowed {
            key = sources.var(var).map(|v| (v.to_string(), var.clone()));
            if key.is_none() {
                notes.push(format!("[providers.{name}] api_key_env names {var}, which is not set"));
            }
        } else {
            notes.push(format!(
                "[providers.{name}] api_key_env = \"{var}\" in the project's config file is ignored: a project may not \
                 choose which of your environment variables is sent where"
            ));
        }
    } else if let Some(k) = home.or(by_name.filter(|_| origin == Origin::User)) {
        key = first_var(sources, k.key_vars).map(|(var, value)| (value.to_string(), var.to_string()));
    }
    let needs_key = home.is_some_and(|k| !k.local);
    let vars: Vec<&str> = home.or(by_name).map(|k| k.key_vars.to_vec()).unwrap_or_default();
    let key_help = match (&table.api_key_env, vars.is_empty()) {
        (Some(var), _) => format!("set {var}"),
        (None, false) => format!("set {} or api_key in [providers.{name}]", vars.join(" or ")),
        (None, true) => format!("set api_key or api_key_env in [providers.{name}]"),
    };
    let mut models = table.models.clone();
    if models.is_empty()
        && let Some(k) = by_name.filter(|k| !k.default_model.is_empty() && k.kind == kind)
    {
        models.push(k.default_model.to_string());
    }
    Ok(Provider {
        name: name.to_string(),
        kind,
        base_url,
        bearer: key.as_ref().is_some_and(|(_, from)| from == "ANTHROPIC_AUTH_TOKEN"),
        key_source: key.as_ref().map(|(_, from)| from.clone()),
        api_key: key.map(|(value, _)| value),
        needs_key,
        key_help,
        models,
        source: format!("[providers.{name}] in {where_}"),
    })
}

/// Work out the providers of a configuration from its three layers (before they are merged).
pub(super) fn resolve(
    env: &Layer,
    project: &Layer,
    user: &Layer,
    sources: &Sources,
) -> Result<Resolved, String> {
    let mut notes = Vec::new();
    // Tables by name: a (trusted) project's table replaces the user's table of the same name as a whole.
    let mut tables: BTreeMap<String, (ProviderLayer, Origin)> = BTreeMap::new();
    for (layer, origin) in [(user, Origin::User), (project, Origin::Project)] {
        for (name, table) in layer.providers.iter().flatten() {
            if name.is_empty() || name.contains('/') {
                return Err(format!(
                    "[providers.\"{name}\"]: a provider name must be non-empty and contain no `/`"
                ));
            }
            tables.insert(name.clone(), (table.clone(), origin));
        }
    }
    let mut providers = Vec::new();
    if let Some(provider) = explicit(env, project, user, sources, &tables)? {
        if tables.remove(&provider.name).is_some() {
            notes.push(format!(
                "[providers.{}] is ignored: TINYCODE_BASE_URL, TINYCODE_API_KEY or the top-level settings define a \
                 provider of the same name",
                provider.name
            ));
        }
        providers.push(provider);
    }
    for (name, (table, origin)) in &tables {
        providers.push(from_table(name, table, *origin, sources, &mut notes)?);
    }
    if providers.is_empty() {
        let base_url_set = |k: &Known| match k.name {
            "openai" => sources.var("OPENAI_BASE_URL").is_some() || sources.var("OPENAI_API_BASE").is_some(),
            "anthropic" => sources.var("ANTHROPIC_BASE_URL").is_some(),
            _ => false,
        };
        for k in KNOWN.iter().filter(|k| !k.local) {
            if first_var(sources, k.key_vars).is_some() || base_url_set(k) {
                providers.push(from_known(k, sources, "environment (detected)"));
            }
        }
    }
    let model = env.model.clone().or(project.model.clone()).or(user.model.clone());
    let chosen = env.provider.as_ref().or(project.provider.as_ref()).or(user.provider.as_ref());
    let default = chosen.and_then(|c| providers.iter().position(|p| &p.name == c)).or_else(|| {
        let prefix = model.as_deref().and_then(|m| m.split_once('/')).map(|(p, _)| p)?;
        providers.iter().position(|p| p.name == prefix)
    });
    if let Some(index) = default {
        let provider = providers.remove(index);
        providers.insert(0, provider);
    }
    Ok(Resolved { providers, model, notes })
}

/// Split `id` into (provider, model): `NAME/model` when `NAME` is one of `providers`, else the default provider.
pub fn split_model<'a>(providers: &'a [Provider], id: &'a str) -> Option<(&'a Provider, &'a str)> {
    if let Some((prefix, rest)) = id.split_once('/')
        && let Some(provider) = providers.iter().find(|p| p.name == prefix)
        && !rest.is_empty()
    {
        return Some((provider, rest));
    }
    providers.first().map(|p| (p, id))
}

#[cfg(test)]
mod tests;
