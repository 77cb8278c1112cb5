//! Sign-in over ACP: the `authMethods` `initialize` advertises (one per provider that needs a key, described with
//! the variable that provides it, and `tinycode setup` as a terminal method for clients that run one, in the
//! RFD's shape and Zed's `_meta["terminal-auth"]` shape), the image capability of the default model, and
//! `authenticate` (an optional key in `_meta["api-key"]` is saved to the user's config file; then the
//! configuration is reloaded and live sessions follow it).
//!
//! Owns the protocol side of signing in. What a provider needs and where keys live belong to `config`.

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Error, ErrorCode};
use serde_json::{Value, json};

use super::State;
use crate::config::providers::{KNOWN, Kind, Provider, known, known_by_url};
use crate::config::user::{ProviderEntry, save_provider};
use crate::config::{Config, Sources};

/// The terminal method: the client runs the agent's command with `--setup` appended (`tinycode acp --setup`).
pub const SETUP_METHOD: &str = "tinycode-setup";
/// The argument a terminal sign-in adds to the agent's command.
pub const SETUP_ARG: &str = "--setup";
/// Suffix of a provider's method id (`anthropic-api-key`).
const KEY_METHOD: &str = "-api-key";

/// The providers a user could sign in to: those configured that need a key, else the hosted well-known ones.
fn key_providers(config: &Config) -> Vec<(String, String, Vec<&'static str>)> {
    let configured: Vec<&Provider> = config.providers.iter().filter(|p| p.needs_key).collect();
    if !configured.is_empty() {
        return configured
            .iter()
            .map(|p| {
                (p.name.clone(), p.label(), known(&p.name).map(|k| k.key_vars.to_vec()).unwrap_or_default())
            })
            .collect();
    }
    if !config.providers.is_empty() {
        return Vec::new();
    }
    KNOWN
        .iter()
        .filter(|k| !k.local)
        .take(5)
        .map(|k| (k.name.to_string(), k.label.to_string(), k.key_vars.to_vec()))
        .collect()
}

/// Does the client run terminal sign-ins: the RFD's capability, and Zed's `_meta` extension?
fn terminal_support(client: &acp::ClientCapabilities) -> (bool, bool) {
    let meta =
        client.meta.as_ref().and_then(|m| m.get("terminal-auth")).and_then(Value::as_bool).unwrap_or(false);
    (client.auth.terminal, meta)
}

/// Zed's launch description of the terminal sign-in.
fn terminal_meta() -> acp::Meta {
    let command =
        std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "tinycode".into());
    let mut meta = acp::Meta::new();
    meta.insert(
        "terminal-auth".into(),
        json!({"command": command, "args": ["setup"], "label": "tinycode setup"}),
    );
    meta
}

/// The methods to advertise to `client` under the user's configuration.
pub fn methods(config: &Config, client: &acp::ClientCapabilities) -> Vec<acp::AuthMethod> {
    let mut methods = Vec::new();
    let (rfd, zed) = terminal_support(client);
    let description = "Pick a provider (or a local server) and enter its key in a terminal; tinycode checks it and saves it";
    if rfd {
        let mut method = acp::AuthMethodTerminal::new(SETUP_METHOD, "Set up tinycode")
            .description(description.to_string())
            .args(vec![SETUP_ARG.to_string()]);
        if zed {
            method = method.meta(terminal_meta());
        }
        methods.push(acp::AuthMethod::Terminal(method));
    } else if zed {
        methods.push(acp::AuthMethod::Agent(
            acp::AuthMethodAgent::new(SETUP_METHOD, "Set up tinycode")
                .description(description.to_string())
                .meta(terminal_meta()),
        ));
    }
    for (name, label, vars) in key_providers(config) {
        let how = if vars.is_empty() {
            format!("Set api_key in [providers.{name}] of tinycode's config file")
        } else {
            format!("Set {} in the environment tinycode starts with", vars.join(" or "))
        };
        methods.push(acp::AuthMethod::Agent(
            acp::AuthMethodAgent::new(format!("{name}{KEY_METHOD}"), format!("{label} API key"))
                .description(format!("{how}, or run `tinycode setup`")),
        ));
    }
    methods
}

/// Does the default model take images?
pub fn takes_images(config: &Config) -> bool {
    config.provider().is_some() && crate::llm::catalogue::for_model(config, &config.model).images
}

/// The configuration `initialize` and `authenticate` look at: the environment and the user's file.
pub fn user_config(sources: &Sources) -> Option<Config> {
    match Config::load_user(sources) {
        Ok(config) => Some(config),
        Err(e) => {
            tracing::warn!(error = %e, "the configuration could not be read");
            None
        }
    }
}

fn auth_required(message: String) -> Error {
    Error::new(ErrorCode::AUTH_REQUIRED, message)
}

/// Is `provider` (or, for the setup method, any provider) ready to use under `config`?
fn ready(config: &Config, provider: Option<&str>) -> bool {
    let usable = |p: &Provider| !p.needs_key || p.api_key.is_some();
    match provider {
        Some(name) => config.providers.iter().any(|p| p.name == name && usable(p)),
        None => config.providers.iter().any(usable),
    }
}

/// `authenticate`: save a key given in `_meta["api-key"]`, reload, and answer whether the provider is ready.
pub async fn authenticate(
    state: &State,
    request: acp::AuthenticateRequest,
    responder: Responder<acp::AuthenticateResponse>,
) -> Result<(), Error> {
    let id = request.method_id.0.to_string();
    let sources = state.manager.sources().clone();
    let provider = id.strip_suffix(KEY_METHOD).map(String::from);
    let mut known_ids = vec![SETUP_METHOD.to_string()];
    known_ids.extend(KNOWN.iter().map(|k| format!("{}{KEY_METHOD}", k.name)));
    if let Some(config) = user_config(&sources) {
        known_ids.extend(config.providers.iter().map(|p| format!("{}{KEY_METHOD}", p.name)));
    }
    if !known_ids.contains(&id) {
        return responder.respond_with_error(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("unknown auth method \"{id}\""),
        ));
    }
    let key = request
        .meta
        .as_ref()
        .and_then(|m| m.get("api-key"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|k| !k.is_empty());
    if let (Some(name), Some(key)) = (&provider, key) {
        // Keep what the user configured for this provider (its URL, its models); only the key changes.
        let existing = user_config(&sources).and_then(|c| c.providers.into_iter().find(|p| &p.name == name));
        let own_url = |p: &Provider| known_by_url(&p.base_url).is_some_and(|k| k.name == name.as_str());
        let entry = ProviderEntry {
            name: name.clone(),
            kind: existing
                .as_ref()
                .map(|p| p.kind)
                .or_else(|| known(name).map(|k| k.kind))
                .unwrap_or(Kind::OpenAiCompatible),
            base_url: existing.as_ref().filter(|p| !own_url(p)).map(|p| p.base_url.clone()),
            api_key: Some(key.to_string()),
            api_key_env: None,
            models: existing.map(|p| p.models).unwrap_or_default(),
        };
        if let Err(e) = save_provider(&sources, &entry) {
            return responder.respond_with_error(Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the key could not be saved: {e}"),
            ));
        }
    }
    let Some(config) = user_config(&sources) else {
        return responder.respond_with_error(auth_required(
            "the configuration cannot be read; run `tinycode doctor`".into(),
        ));
    };
    if !ready(&config, provider.as_deref()) {
        let message =
            match provider.as_ref().and_then(|name| config.providers.iter().find(|p| &p.name == name)) {
                Some(p) => format!(
                    "no API key is set for {}: {}, then restart the agent, or run `tinycode setup`",
                    p.label(),
                    p.key_help
                ),
                None => crate::llm::NO_PROVIDER.to_string(),
            };
        return responder.respond_with_error(auth_required(message));
    }
    state.manager.reload_all().await;
    responder.respond(acp::AuthenticateResponse::new())
}
