//! The session's model client: one client per provider (Chat Completions, Responses or Messages, by the
//! provider's kind), and each request routed by its model id (`NAME/model`, or a bare model for the default
//! provider). Also the model lists (`GET /models` in each dialect) and "model not found" answered with the
//! models the provider offers.
//!
//! Owns the dispatch. The wire formats belong to `chat`, `responses` and `messages`.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::chat::ChatClient;
use super::limits::Limits;
use super::messages::{self, MessagesClient};
use super::responses::ResponsesClient;
use super::transport::{self, Endpoint};
use super::{Delta, LlmError, ModelClient, Request, Response};
use crate::config::Config;
use crate::config::providers::{Kind, Provider, split_model};

/// How long listing models may take when a model was not found.
const LIST_ON_NOT_FOUND: Duration = Duration::from_secs(5);

/// The endpoint of `provider` under `config`'s timeouts and retries.
pub fn endpoint(provider: &Provider, config: &Config) -> Endpoint {
    Endpoint {
        provider: provider.name.clone(),
        base_url: provider.base_url.clone(),
        api_key: provider.api_key.clone(),
        needs_key: provider.needs_key,
        key_help: provider.key_help.clone(),
        dialect: provider.kind.endpoint_name(),
        retry: config.retry.clone(),
        connect_timeout: config.connect_timeout,
        limits: Limits::new(config),
        secrets: config.providers.iter().filter_map(|p| p.api_key.clone()).collect(),
    }
}

/// The client for one provider.
pub fn client(provider: &Provider, config: &Config) -> Box<dyn ModelClient> {
    let endpoint = endpoint(provider, config);
    match provider.kind {
        Kind::OpenAiCompatible => Box::new(ChatClient::new(endpoint)),
        Kind::OpenAi => Box::new(ResponsesClient::new(endpoint)),
        Kind::Anthropic => Box::new(MessagesClient::new(endpoint, provider.bearer)),
    }
}

/// Every provider of a configuration behind one [`ModelClient`].
pub struct Router {
    providers: Vec<Provider>,
    clients: Vec<Box<dyn ModelClient>>,
    endpoints: Vec<Endpoint>,
}

impl Router {
    pub fn new(config: &Config) -> Self {
        Self {
            clients: config.providers.iter().map(|p| client(p, config)).collect(),
            endpoints: config.providers.iter().map(|p| endpoint(p, config)).collect(),
            providers: config.providers.clone(),
        }
    }

    async fn run(
        &self,
        request: &Request,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Response, LlmError> {
        let Some((provider, model)) = split_model(&self.providers, &request.model) else {
            return Err(LlmError::NoProvider);
        };
        let index = self.providers.iter().position(|p| p.name == provider.name).unwrap_or(0);
        let routed = Request { model: model.to_string(), ..request.clone() };
        match self.clients[index].stream(&routed, on_delta, cancel).await {
            Err(LlmError::ModelNotFound { message, .. }) => {
                let listing = tokio::time::timeout(
                    LIST_ON_NOT_FOUND,
                    list_models(&self.endpoints[index], provider.kind),
                );
                let offered = listing.await.ok().and_then(Result::ok).unwrap_or_default();
                Err(LlmError::ModelNotFound { model: model.to_string(), message, offered })
            }
            other => other,
        }
    }
}

impl ModelClient for Router {
    fn stream<'a>(
        &'a self,
        request: &'a Request,
        on_delta: &'a (dyn Fn(Delta) + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.run(request, on_delta, cancel))
    }
}

/// The model ids `endpoint` offers (`GET …/models` in its dialect), sorted. Bounded by the connect timeout;
/// never retried. Its errors are cleared of configured keys, as every error that leaves the llm layer.
pub async fn list_models(endpoint: &Endpoint, kind: Kind) -> Result<Vec<String>, LlmError> {
    listed(endpoint, kind).await.map_err(|error| error.redacted(&|text| endpoint.redact(text)))
}

async fn listed(endpoint: &Endpoint, kind: Kind) -> Result<Vec<String>, LlmError> {
    transport::check_url(&endpoint.base_url)?;
    crate::tls::prepare_for(&endpoint.base_url);
    let client = transport::http_off_runtime().await?;
    let key = endpoint.api_key.as_deref();
    let (url, builder) = match kind {
        Kind::Anthropic => {
            let url = endpoint.url(&messages::path(&endpoint.base_url, "models?limit=1000"));
            (url.clone(), messages::authorize(client.get(&url), key, false))
        }
        Kind::OpenAi | Kind::OpenAiCompatible => {
            let url = endpoint.url("/models");
            (url.clone(), transport::bearer(client.get(&url), key))
        }
    };
    let response = match tokio::time::timeout(endpoint.connect_timeout, builder.send()).await {
        Err(_) => return Err(LlmError::Protocol(format!("timed out listing models at {url}"))),
        Ok(Err(e)) => {
            return Err(match endpoint.connect_error(&url, &e) {
                transport::Attempt::Fatal(error) => error,
                transport::Attempt::Retry { message, .. } => {
                    LlmError::Protocol(format!("cannot list models: {message}"))
                }
            });
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    if status != 200 {
        let body = transport::read_error_body(response).await;
        return Err(match endpoint.classify("GET", &url, status, &headers, &body) {
            transport::Attempt::Fatal(error) => error,
            transport::Attempt::Retry { message, .. } => {
                LlmError::Protocol(format!("cannot list models: {message}"))
            }
        });
    }
    let body: Value = response.json().await.map_err(|e| LlmError::NotModelApi {
        dialect: endpoint.dialect,
        request: format!("GET {url}"),
        answer: format!("200 with a body that is not a model list ({e})"),
    })?;
    if reqwest::Url::parse(&endpoint.base_url)
        .is_ok_and(|u| u.host_str().is_some_and(transport::is_loopback_host))
    {
        super::detect::report_vllm(&endpoint.base_url, &body);
    }
    let mut ids: Vec<String> = body
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(String::from))
        .collect();
    ids.sort();
    Ok(ids)
}
