//! Finding model servers on this machine when nothing is configured: parallel probes of loopback ports only
//! (Ollama 11434, LM Studio 1234, llama.cpp 8080, vLLM 8000, and `OLLAMA_HOST` when it is loopback), each confirmed
//! by its fingerprint (PROVIDERS.md §7.2), with the models it serves; the results are cached for a minute. Also
//! what a local server reports about one model (context, tools, images), for the catalogue.
//!
//! Owns the probes. Never connects beyond loopback: every target is built here from 127.0.0.1 and a port.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::catalogue::{self, Reported};
use super::transport;
use crate::config::providers::{Kind, Provider, known};

/// How long one probe may take in all (connect, answer, body).
const PROBE_TIMEOUT: Duration = Duration::from_millis(700);
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(300);
/// How long probe results are reused.
const CACHE_FOR: Duration = Duration::from_secs(60);

/// The servers tinycode knows how to recognise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Ollama,
    LmStudio,
    LlamaCpp,
    Vllm,
}

impl Server {
    /// The well-known provider name.
    pub fn name(self) -> &'static str {
        match self {
            Server::Ollama => "ollama",
            Server::LmStudio => "lmstudio",
            Server::LlamaCpp => "llamacpp",
            Server::Vllm => "vllm",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Server::Ollama => 11434,
            Server::LmStudio => 1234,
            Server::LlamaCpp => 8080,
            Server::Vllm => 8000,
        }
    }
}

/// One loopback port to probe for one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub server: Server,
    pub port: u16,
}

impl Target {
    /// `http://127.0.0.1:PORT`: the only host a probe ever reaches.
    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// The port of `OLLAMA_HOST` when it names this machine (`0.0.0.0` counts: it is a bind address).
pub fn ollama_host_port(value: &str) -> Option<u16> {
    let rest = value.trim().split_once("://").map(|(_, r)| r).unwrap_or(value.trim());
    let authority = rest.split('/').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().ok()?),
        None => (authority, 11434),
    };
    let loopback = host.is_empty() || host == "0.0.0.0" || transport::is_loopback_host(host);
    loopback.then_some(port)
}

/// The default targets, plus `OLLAMA_HOST`'s port when it is loopback and another.
pub fn default_targets(ollama_host: Option<&str>) -> Vec<Target> {
    let mut targets: Vec<Target> = [Server::Ollama, Server::LmStudio, Server::LlamaCpp, Server::Vllm]
        .into_iter()
        .map(|server| Target { server, port: server.default_port() })
        .collect();
    if let Some(port) = ollama_host.and_then(ollama_host_port)
        && port != Server::Ollama.default_port()
    {
        targets.insert(0, Target { server: Server::Ollama, port });
    }
    targets
}

/// A server that answered with its fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub server: Server,
    pub provider: Provider,
}

/// The probes' HTTP client, one for the process. Building a client loads the platform's TLS roots (milliseconds of
/// CPU): it used to be built for every probe, on the async runtime, after every `session/new` with a local model
/// server that had not described its model yet. The first use builds it at a low priority, off the runtime.
async fn client() -> Option<&'static reqwest::Client> {
    static CLIENT: OnceLock<Option<reqwest::Client>> = OnceLock::new();
    fn build() -> Option<reqwest::Client> {
        crate::tls::client_builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(PROBE_TIMEOUT)
            .no_proxy()
            .build()
            .ok()
    }
    if let Some(client) = CLIENT.get() {
        return client.as_ref();
    }
    let (built, wait) = tokio::sync::oneshot::channel();
    crate::warm::spawn(
        "tinycode-probe",
        || {},
        move || {
            let _ = built.send(CLIENT.get_or_init(build).is_some());
        },
    );
    if wait.await.is_err() {
        // No thread could be started: build it on the runtime's blocking pool instead.
        let _ = tokio::task::spawn_blocking(|| CLIENT.get_or_init(build).is_some()).await;
    }
    CLIENT.get().and_then(Option::as_ref)
}

async fn get(client: &reqwest::Client, url: &str) -> Option<(reqwest::header::HeaderMap, String)> {
    let response = client.get(url).send().await.ok()?;
    let headers = response.headers().clone();
    if !response.status().is_success() {
        return None;
    }
    Some((headers, response.text().await.ok()?))
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

fn ids(list: &Value, array: &str, key: &str) -> Vec<String> {
    list.get(array)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get(key).and_then(Value::as_str).map(String::from))
        .collect()
}

/// Probe one target: its fingerprint, then its models. `None` when it is not there or is something else.
async fn probe(client: &reqwest::Client, target: &Target) -> Option<Found> {
    let origin = target.origin();
    let base_url = format!("{origin}/v1");
    let models = match target.server {
        Server::Ollama => {
            let (_, body) = get(client, &format!("{origin}/")).await?;
            if !body.contains("Ollama is running") {
                return None;
            }
            let tags = get(client, &format!("{origin}/api/tags")).await.map(|(_, b)| json_of(&b));
            tags.map(|t| ids(&t, "models", "name")).unwrap_or_default()
        }
        Server::LmStudio => {
            let (_, body) = get(client, &format!("{origin}/lmstudio-greeting")).await?;
            if json_of(&body).get("lmstudio") != Some(&json!(true)) {
                return None;
            }
            let list = get(client, &format!("{origin}/api/v0/models")).await.map(|(_, b)| json_of(&b));
            let list = list.unwrap_or(Value::Null);
            report_lmstudio(&base_url, &list);
            ids(&list, "data", "id")
        }
        Server::LlamaCpp => {
            let (headers, body) = get(client, &format!("{origin}/v1/models")).await?;
            let server = headers.get("server").and_then(|v| v.to_str().ok()).unwrap_or_default();
            if !server.to_ascii_lowercase().contains("llama.cpp") {
                return None;
            }
            ids(&json_of(&body), "data", "id")
        }
        Server::Vllm => {
            let (headers, body) = get(client, &format!("{origin}/v1/models")).await?;
            let server = headers.get("server").and_then(|v| v.to_str().ok()).unwrap_or_default();
            let list = json_of(&body);
            let owner = list.pointer("/data/0/owned_by").and_then(Value::as_str);
            if !server.eq_ignore_ascii_case("uvicorn") || owner != Some("vllm") {
                return None;
            }
            report_vllm(&base_url, &list);
            ids(&list, "data", "id")
        }
    };
    let known = known(target.server.name())?;
    if let Some(model) = models.first() {
        describe_with(client, &base_url, model).await;
    }
    Some(Found {
        server: target.server,
        provider: Provider {
            name: known.name.to_string(),
            kind: Kind::OpenAiCompatible,
            base_url,
            api_key: None,
            bearer: false,
            key_source: None,
            needs_key: false,
            key_help: format!("set api_key in [providers.{}]", known.name),
            models,
            source: format!("detected on port {}", target.port),
        },
    })
}

/// Remember the `max_model_len` a model list carries (vLLM).
pub fn report_vllm(base_url: &str, list: &Value) {
    for model in list.get("data").and_then(Value::as_array).into_iter().flatten() {
        if let (Some(id), Some(context)) =
            (model.get("id").and_then(Value::as_str), model.get("max_model_len").and_then(Value::as_u64))
        {
            catalogue::report(base_url, id, Reported { context: Some(context), ..Reported::default() });
        }
    }
}

fn report_lmstudio(base_url: &str, list: &Value) {
    for model in list.get("data").and_then(Value::as_array).into_iter().flatten() {
        let Some(id) = model.get("id").and_then(Value::as_str) else { continue };
        let number = |key: &str| model.get(key).and_then(Value::as_u64);
        let capabilities: Vec<&str> = model
            .get("capabilities")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        catalogue::report(
            base_url,
            id,
            Reported {
                context: number("loaded_context_length").or_else(|| number("max_context_length")),
                tools: (!capabilities.is_empty()).then(|| capabilities.contains(&"tool_use")),
                images: model.get("type").and_then(Value::as_str).map(|t| t == "vlm"),
                reasoning: None,
            },
        );
    }
}

/// Ask the loopback server at `base_url` what it knows of `model` and remember it in the catalogue: Ollama's
/// loaded context (`/api/ps`, else `/api/show`) and capabilities, llama.cpp's `/props` (vLLM's `max_model_len`
/// comes with its model list).
/// Does nothing for a server beyond loopback.
pub async fn describe(base_url: &str, model: &str) {
    let Ok(url) = reqwest::Url::parse(base_url) else { return };
    if !url.host_str().is_some_and(transport::is_loopback_host)
        || catalogue::reported(base_url, model).is_some()
    {
        return;
    }
    if let Some(client) = client().await {
        describe_with(client, base_url, model).await;
    }
}

async fn describe_with(client: &reqwest::Client, base_url: &str, model: &str) {
    let origin = base_url.trim_end_matches('/').trim_end_matches("/v1").to_string();
    let mut reported = Reported::default();
    let show = async {
        let response =
            client.post(format!("{origin}/api/show")).json(&json!({"model": model})).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        Some(json_of(&response.text().await.ok()?))
    };
    if let Some(show) = show.await {
        let capabilities: Vec<&str> = show
            .get("capabilities")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !capabilities.is_empty() {
            reported.tools = Some(capabilities.contains(&"tools"));
            reported.images = Some(capabilities.contains(&"vision"));
            reported.reasoning = Some(capabilities.contains(&"thinking"));
        }
        let trained = show.get("model_info").and_then(Value::as_object).and_then(|info| {
            info.iter().find(|(k, _)| k.ends_with(".context_length")).and_then(|(_, v)| v.as_u64())
        });
        let loaded = get(client, &format!("{origin}/api/ps")).await.and_then(|(_, body)| {
            json_of(&body).get("models").and_then(Value::as_array).and_then(|models| {
                models
                    .iter()
                    .find(|m| m.get("name").and_then(Value::as_str) == Some(model))
                    .and_then(|m| m.get("context_length").and_then(Value::as_u64))
            })
        });
        reported.context = loaded.or(trained);
    } else if let Some((_, body)) = get(client, &format!("{origin}/props")).await {
        let props = json_of(&body);
        reported.context = props.pointer("/default_generation_settings/n_ctx").and_then(Value::as_u64);
        reported.images = props.pointer("/modalities/vision").and_then(Value::as_bool);
        reported.tools = props.pointer("/chat_template_caps/supports_tool_calls").and_then(Value::as_bool);
    }
    if reported != Reported::default() {
        catalogue::report(base_url, model, reported);
    }
}

/// Probe `targets` in parallel; the servers found, in target order.
pub async fn probe_all(targets: &[Target]) -> Vec<Found> {
    let Some(client) = client().await else { return Vec::new() };
    let probes = targets.iter().map(|target| probe(client, target));
    let found: Vec<Found> = futures::future::join_all(probes).await.into_iter().flatten().collect();
    // Two targets can reach the same server (OLLAMA_HOST on a default port): keep the first.
    let mut seen = std::collections::HashSet::new();
    found.into_iter().filter(|f| seen.insert(f.provider.base_url.clone())).collect()
}

/// Probes with a cache, one per process.
pub struct Detector {
    targets: Vec<Target>,
    cache: Mutex<Option<(Instant, Vec<Found>)>>,
}

impl Detector {
    pub fn new(targets: Vec<Target>) -> Self {
        Self { targets, cache: Mutex::new(None) }
    }

    /// The local servers, probed at most once a minute.
    pub async fn detect(&self) -> Vec<Found> {
        if let Ok(cache) = self.cache.lock()
            && let Some((at, found)) = cache.as_ref()
            && at.elapsed() < CACHE_FOR
        {
            return found.clone();
        }
        let found = probe_all(&self.targets).await;
        tracing::info!(found = found.len(), "probed loopback for model servers");
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some((Instant::now(), found.clone()));
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_probe_client_is_built_once_for_the_process_not_per_probe() {
        let (first, second) = (client().await.unwrap(), client().await.unwrap());
        assert!(std::ptr::eq(first, second));
    }

    #[test]
    fn ollama_host_counts_only_when_it_names_this_machine() {
        assert_eq!(ollama_host_port("0.0.0.0:11434"), Some(11434));
        assert_eq!(ollama_host_port("127.0.0.1:12345"), Some(12345));
        assert_eq!(ollama_host_port("http://localhost:9000/"), Some(9000));
        assert_eq!(ollama_host_port("localhost"), Some(11434));
        assert_eq!(ollama_host_port("192.168.1.5:12345"), None);
        assert_eq!(ollama_host_port("http://gpu-box:11434"), None);
        let targets = default_targets(Some("127.0.0.1:12345"));
        assert_eq!(targets[0], Target { server: Server::Ollama, port: 12345 });
        assert_eq!(targets.len(), 5);
        assert_eq!(default_targets(Some("10.0.0.2:1")).len(), 4);
    }
}
