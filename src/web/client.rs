//! The webfetch HTTP client: its own reqwest client (never the model's, which must reach loopback model
//! servers) with the SSRF guard's other layers wired in: the guarded resolver, a redirect policy that
//! re-checks every hop, allows at most ten and stops at another host, no proxy from the environment, TLS 1.2 or
//! newer, a total deadline, and a body cap enforced while streaming.
//!
//! Owns sending one request and reading its body. Must not interpret the body (that is `convert`) nor decide
//! about addresses itself (that is `guard` and `resolver`).

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, LOCATION};
use reqwest::{Method, StatusCode};
use url::Url;

use super::convert::Body;
use super::guard::{Policy, Refusal};
use super::resolver::{Guarded, Lookup, System};

/// Seed 000 §8.3 `maxFetchSize`: bodies are cut here, while streaming.
pub const MAX_FETCH_SIZE: usize = 5 * 1024 * 1024;
/// Seed 000 §8.3 `fetchTimeout`: connect, headers and the whole body.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Seed 000 §8.3: redirects followed at most.
pub const MAX_REDIRECTS: usize = 10;

/// The limits of one fetcher. Production uses [`Limits::default`] (the seed's constants); tests shorten them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub max_bytes: usize,
    pub timeout: Duration,
    pub max_redirects: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_bytes: MAX_FETCH_SIZE, timeout: FETCH_TIMEOUT, max_redirects: MAX_REDIRECTS }
    }
}

/// Why a fetch failed. Handled by the webfetch tool, which tells the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The guard refused the URL or the address it resolves to; nothing was sent there.
    #[error("refused: {0}")]
    Refused(Refusal),
    /// A redirect pointed somewhere the guard refuses; it was not followed.
    #[error("the server redirected to {to}, which is refused: {refusal}")]
    RedirectRefused { to: String, refusal: Refusal },
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
    #[error("no complete response within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    #[error("{0}")]
    Network(String),
}

/// A redirect hop the policy refused; carried through reqwest's error chain.
#[derive(Debug, Clone, thiserror::Error)]
enum HopError {
    #[error("more than {0} redirects")]
    TooMany(usize),
    #[error("redirect to {to} refused: {refusal}")]
    Refused { to: String, refusal: Refusal },
}

/// One request, already validated by the caller.
#[derive(Debug, Clone)]
pub struct Request {
    pub url: Url,
    pub method: Method,
    pub headers: HeaderMap,
    pub body: Option<String>,
}

/// A response whose body was read (up to the cap).
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The URL the body came from, after same-host redirects.
    pub url: Url,
    pub status: StatusCode,
    pub content_type: Option<String>,
    /// The length the server declared, if it did.
    pub declared_length: Option<u64>,
    /// The body, at most `max_bytes` (empty when the type is not worth reading: binary files).
    pub body: Vec<u8>,
    /// The body was cut at `max_bytes`.
    pub truncated: bool,
}

/// What a fetch produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetched {
    Page(Page),
    /// A redirect that was not followed: to another host (the model is told and may fetch it, which asks the
    /// user about that host), or to a URL the guard refuses (`refused` says why; e.g. `file://`).
    Redirect {
        from: Url,
        to: String,
        refused: Option<Refusal>,
    },
}

/// The guarded client. Cheap to share: one per process.
pub struct Fetcher {
    http: reqwest::Client,
    policy: Policy,
    limits: Limits,
}

impl Fetcher {
    /// The production fetcher: system resolver, the seed's limits.
    pub fn new(policy: Policy) -> Result<Self, FetchError> {
        Self::with(policy, Arc::new(System), Limits::default())
    }

    /// A fetcher with its own name lookup and limits (tests answer names from a table).
    pub fn with(policy: Policy, lookup: Arc<dyn Lookup>, limits: Limits) -> Result<Self, FetchError> {
        // TLS 1.2 at least: the process's TLS settings (`crate::tls`) offer nothing older.
        let http = crate::tls::client_builder()
            .dns_resolver(Arc::new(Guarded::new(lookup, policy.clone())))
            .no_proxy()
            .redirect(redirect_policy(policy.clone(), limits.max_redirects))
            .timeout(limits.timeout)
            .connect_timeout(limits.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("tinycode/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Network(format!("cannot create the HTTP client: {}", chain(&e))))?;
        Ok(Self { http, policy, limits })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Send `request` and read the body up to the cap. The URL is checked first, so a refused one sends nothing.
    pub async fn fetch(&self, request: Request) -> Result<Fetched, FetchError> {
        self.policy.check(&request.url).map_err(FetchError::Refused)?;
        // Pages are HTTPS, or redirect there: the roots load beside the request, not in its handshake.
        crate::tls::preload();
        let mut builder = self.http.request(request.method, request.url.clone()).headers(request.headers);
        if let Some(body) = request.body {
            builder = builder.body(body);
        }
        let mut response = builder.send().await.map_err(|e| self.classify(&e))?;
        tracing::debug!(url = %response.url(), remote = ?response.remote_addr(), status = %response.status(), "webfetch response");
        let url = response.url().clone();
        if response.status().is_redirection()
            && let Some(to) = location(&response, &url)
        {
            let refused = self.policy.check(&to).err();
            return Ok(Fetched::Redirect { from: url, to: to.to_string(), refused });
        }
        let content_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
        let declared_length = response.content_length();
        let (body, truncated) = if Body::worth_reading(content_type.as_deref()) {
            self.read_capped(&mut response, declared_length).await?
        } else {
            (Vec::new(), false)
        };
        Ok(Fetched::Page(Page {
            url,
            status: response.status(),
            content_type,
            declared_length,
            body,
            truncated,
        }))
    }

    /// Read at most `max_bytes` of the body; past that the response is dropped, which closes the connection.
    async fn read_capped(
        &self,
        response: &mut reqwest::Response,
        declared: Option<u64>,
    ) -> Result<(Vec<u8>, bool), FetchError> {
        let cap = self.limits.max_bytes;
        let start = declared.map_or(64 * 1024, |n| usize::try_from(n).unwrap_or(cap).min(cap));
        let mut body = Vec::with_capacity(start);
        while let Some(chunk) = response.chunk().await.map_err(|e| self.classify(&e))? {
            let room = cap - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, false))
    }

    /// Turn reqwest's error into ours, finding the guard's refusal in the source chain.
    fn classify(&self, error: &reqwest::Error) -> FetchError {
        let mut source: Option<&(dyn StdError + 'static)> = Some(error);
        while let Some(current) = source {
            if let Some(hop) = current.downcast_ref::<HopError>() {
                return match hop.clone() {
                    HopError::TooMany(n) => FetchError::TooManyRedirects(n),
                    HopError::Refused { to, refusal } => FetchError::RedirectRefused { to, refusal },
                };
            }
            if let Some(refusal) = current.downcast_ref::<Refusal>() {
                return FetchError::Refused(refusal.clone());
            }
            source = current.source();
        }
        if error.is_timeout() {
            return FetchError::Timeout(self.limits.timeout);
        }
        FetchError::Network(chain(error))
    }
}

/// Every hop is checked like the first URL; more than `max` hops fail; a hop to another host stops, so the
/// model is told and the user is asked about that host.
fn redirect_policy(policy: Policy, max: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        // `previous` holds the first URL and every hop followed so far.
        if attempt.previous().len() > max {
            return attempt.error(HopError::TooMany(max));
        }
        if let Err(refusal) = policy.check(attempt.url()) {
            let to = attempt.url().to_string();
            return attempt.error(HopError::Refused { to, refusal });
        }
        let same_host =
            attempt.previous().first().is_some_and(|first| first.host_str() == attempt.url().host_str());
        if same_host { attempt.follow() } else { attempt.stop() }
    })
}

/// The redirect target of a 3xx, resolved against the URL that answered.
fn location(response: &reqwest::Response, base: &Url) -> Option<Url> {
    let raw = response.headers().get(LOCATION)?.to_str().ok()?;
    base.join(raw).ok()
}

/// An error and its causes on one line.
fn chain(error: &dyn StdError) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(current) = source {
        let text = current.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = current.source();
    }
    parts.join(": ")
}
