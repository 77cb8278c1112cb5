//! The web search client for `websearch`: one POST to Exa's search endpoint (seed 000 §8.3), results as
//! title, URL and snippet, domain filters applied again on our side (seed 003).
//!
//! Owns the Exa wire format. Must not read the environment: the key and the endpoint come from the user's
//! configuration through `config::web`, so tests point it at a loopback fake.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

/// Seed 000 §8.3: the Exa endpoint.
pub const DEFAULT_SEARCH_URL: &str = "https://api.exa.ai/search";
/// Seed 000 §8.3: the search timeout.
pub const SEARCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Characters of highlight text asked for per result.
const SNIPPET_CHARS: usize = 400;

/// Why a search failed. Handled by the websearch tool, which tells the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The service answered with an error status.
    #[error("the search service answered HTTP {status}: {message}")]
    Service { status: u16, message: String },
    #[error("the search service did not answer within {} s", .0.as_secs())]
    Timeout(Duration),
    #[error("cannot reach the search service: {0}")]
    Network(String),
    #[error("the search service sent an answer that is not a result list: {0}")]
    Malformed(String),
}

/// One search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub query: String,
    pub num_results: u32,
    pub include_domains: Vec<String>,
    pub exclude_domains: Vec<String>,
}

/// One result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
    pub published: Option<String>,
}

#[derive(Deserialize)]
struct Answer {
    results: Vec<RawHit>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawHit {
    #[serde(default)]
    title: Option<String>,
    url: String,
    #[serde(default)]
    published_date: Option<String>,
    #[serde(default)]
    highlights: Vec<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    summary: Option<String>,
}

/// The search client: the endpoint and its key.
pub struct Searcher {
    http: reqwest::Client,
    url: String,
    key: String,
    timeout: Duration,
}

impl Searcher {
    pub fn new(url: &str, key: &str, timeout: Duration) -> Result<Self, SearchError> {
        // TLS 1.2 at least: the process's TLS settings (`crate::tls`) offer nothing older.
        crate::tls::prepare_for(url);
        let http = crate::tls::client_builder()
            .timeout(timeout)
            .user_agent(concat!("tinycode/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| SearchError::Network(e.to_string()))?;
        Ok(Self { http, url: url.to_string(), key: key.to_string(), timeout })
    }

    pub async fn search(&self, query: &Query) -> Result<Vec<Hit>, SearchError> {
        let mut body = json!({
            "query": query.query,
            "numResults": query.num_results,
            "type": "auto",
            "contents": {"highlights": {"maxCharacters": SNIPPET_CHARS}},
        });
        if !query.include_domains.is_empty() {
            body["includeDomains"] = json!(query.include_domains);
        }
        if !query.exclude_domains.is_empty() {
            body["excludeDomains"] = json!(query.exclude_domains);
        }
        let response =
            self.http.post(&self.url).header("x-api-key", &self.key).json(&body).send().await.map_err(
                |e| {
                    if e.is_timeout() {
                        SearchError::Timeout(self.timeout)
                    } else {
                        SearchError::Network(e.to_string())
                    }
                },
            )?;
        let status = response.status();
        let text = response.text().await.map_err(|e| SearchError::Network(e.to_string()))?;
        if !status.is_success() {
            return Err(SearchError::Service { status: status.as_u16(), message: service_message(&text) });
        }
        let answer: Answer =
            serde_json::from_str(&text).map_err(|e| SearchError::Malformed(e.to_string()))?;
        Ok(answer
            .results
            .into_iter()
            .map(hit)
            .filter(|h| wanted(&h.url, query))
            .take(query.num_results as usize)
            .collect())
    }
}

fn hit(raw: RawHit) -> Hit {
    let snippet = if raw.highlights.is_empty() {
        raw.summary.or(raw.text).unwrap_or_default()
    } else {
        raw.highlights.join(" … ")
    };
    let snippet: String = snippet.split_whitespace().collect::<Vec<_>>().join(" ");
    let snippet = match snippet.char_indices().nth(SNIPPET_CHARS) {
        Some((at, _)) => format!("{}…", &snippet[..at]),
        None => snippet,
    };
    Hit {
        title: raw.title.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| raw.url.clone()),
        url: raw.url,
        snippet,
        published: raw.published_date,
    }
}

/// The service's own words: its `error` or `message` field, else the start of the body.
fn service_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let field =
        parsed.as_ref().and_then(|v| v.get("error").or_else(|| v.get("message"))).and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => o.get("message").and_then(Value::as_str).map(str::to_string),
            _ => None,
        });
    let message = field.unwrap_or_else(|| body.trim().chars().take(500).collect());
    if message.is_empty() { "(no message)".into() } else { message }
}

/// A domain filter in its plain form: `https://www.Docs.rs/x` and `*.docs.rs` both mean `docs.rs`.
pub fn normalize_domain(domain: &str) -> String {
    let domain = domain.trim().to_ascii_lowercase();
    let host = match Url::parse(&domain) {
        Ok(url) if url.host_str().is_some() => url.host_str().unwrap_or_default().to_string(),
        _ => domain.split('/').next().unwrap_or_default().to_string(),
    };
    let host = host.trim_start_matches("*.").trim_end_matches('.');
    host.strip_prefix("www.").unwrap_or(host).to_string()
}

fn on_domain(host: &str, domain: &str) -> bool {
    let host = host.trim_end_matches('.');
    host == domain || host.strip_suffix(domain).is_some_and(|rest| rest.ends_with('.'))
}

/// The filters again, on our side: the service may not apply them exactly.
fn wanted(url: &str, query: &Query) -> bool {
    let Some(host) = Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase)) else {
        return false;
    };
    let included =
        query.include_domains.is_empty() || query.include_domains.iter().any(|d| on_domain(&host, d));
    included && !query.exclude_domains.iter().any(|d| on_domain(&host, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(include: &[&str], exclude: &[&str]) -> Query {
        Query {
            query: "q".into(),
            num_results: 8,
            include_domains: include.iter().map(|d| normalize_domain(d)).collect(),
            exclude_domains: exclude.iter().map(|d| normalize_domain(d)).collect(),
        }
    }

    #[test]
    fn domain_filters_match_the_domain_and_its_subdomains_only() {
        let q = query(&["https://www.Docs.rs/", "*.rust-lang.org"], &["blog.rust-lang.org"]);
        assert_eq!(q.include_domains, vec!["docs.rs", "rust-lang.org"]);
        assert!(wanted("https://docs.rs/tokio", &q));
        assert!(wanted("https://www.docs.rs/tokio", &q));
        assert!(wanted("https://doc.rust-lang.org/std", &q));
        assert!(!wanted("https://blog.rust-lang.org/2025", &q), "excluded");
        assert!(!wanted("https://notdocs.rs/", &q), "a suffix that is not a subdomain");
        assert!(!wanted("https://example.com/", &q));
        assert!(!wanted("not a url", &q));
        assert!(wanted("https://anything.example/", &query(&[], &[])));
    }

    #[test]
    fn snippets_come_from_highlights_then_summary_then_text_and_are_bounded() {
        let raw = |highlights: Vec<&str>, text: Option<&str>| RawHit {
            title: Some(" ".into()),
            url: "https://a.example/".into(),
            published_date: None,
            highlights: highlights.into_iter().map(String::from).collect(),
            text: text.map(String::from),
            summary: None,
        };
        let h = hit(raw(vec!["one\n two", "three"], Some("ignored")));
        assert_eq!((h.title.as_str(), h.snippet.as_str()), ("https://a.example/", "one two … three"));
        assert_eq!(hit(raw(vec![], Some("from text"))).snippet, "from text");
        let long = "x".repeat(SNIPPET_CHARS + 10);
        assert_eq!(hit(raw(vec![&long], None)).snippet, format!("{}…", "x".repeat(SNIPPET_CHARS)));
    }

    #[test]
    fn the_service_error_message_is_found_in_its_usual_places() {
        assert_eq!(service_message(r#"{"error":"Invalid API key"}"#), "Invalid API key");
        assert_eq!(service_message(r#"{"error":{"message":"quota"}}"#), "quota");
        assert_eq!(service_message("upstream timeout\n"), "upstream timeout");
        assert_eq!(service_message(""), "(no message)");
    }
}
