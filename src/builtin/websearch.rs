//! The `websearch` tool (seed 000 §8.3): a web search through Exa, registered only when the user has a key
//! (`EXA_API_KEY`, §8.1's conditional registration). Results come back as title, URL and snippet; an error
//! from the service is told to the model.
//!
//! Owns the tool's arguments and what the model reads. The search client belongs to `web::search`.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::config::web::Search;
use crate::display::{Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, ToolError, ToolOutput, arg_opt_u64, arg_str};
use crate::web::search::{Hit, Query, SEARCH_TIMEOUT, SearchError, Searcher, normalize_domain};

pub const ID: &str = "websearch";
/// Seed 000 §8.3: results when `num_results` is not given.
pub const DEFAULT_NUM_RESULTS: u64 = 8;
/// Results asked for at most.
pub const MAX_NUM_RESULTS: u64 = 25;

/// The tool's state: where to search and the client, built on first use.
pub struct WebSearch {
    settings: Search,
    searcher: OnceLock<Result<Arc<Searcher>, SearchError>>,
}

impl WebSearch {
    pub fn new(settings: Search) -> Self {
        Self { settings, searcher: OnceLock::new() }
    }

    async fn searcher(&self) -> Result<Arc<Searcher>, ToolError> {
        if let Some(ready) = self.searcher.get() {
            return ready.clone().map_err(|e| ToolError::execution(e.to_string()));
        }
        let Search { api_key, url } = self.settings.clone();
        let built =
            tokio::task::spawn_blocking(move || Searcher::new(&url, &api_key, SEARCH_TIMEOUT).map(Arc::new))
                .await
                .unwrap_or_else(|e| Err(SearchError::Network(e.to_string())));
        self.searcher.get_or_init(|| built).clone().map_err(|e| ToolError::execution(e.to_string()))
    }
}

pub fn def(tool: Arc<WebSearch>) -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/websearch.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for"},
                "num_results": {"type": "integer", "description": "Number of results (default 8)", "minimum": 1, "maximum": MAX_NUM_RESULTS},
                "include_domains": {"type": "array", "items": {"type": "string"}, "description": "Only results from these domains"},
                "exclude_domains": {"type": "array", "items": {"type": "string"}, "description": "No results from these domains"}
            },
            "required": ["query"]
        }),
        permission: Some(Category::Read),
        present,
        preview: None,
        execute: Arc::new(move |ctx, args| {
            let tool = tool.clone();
            Box::pin(async move { execute(&tool, ctx, args).await })
        }),
    }
}

fn present(args: &Value, _cwd: &Path) -> Presentation {
    let query = args.get("query").and_then(Value::as_str).unwrap_or("").trim();
    let short: String = query.chars().take(80).collect();
    let ellipsis = if short.len() < query.len() { "…" } else { "" };
    Presentation {
        title: format!("Search the web: {short}{ellipsis}"),
        kind: Kind::Fetch,
        ..Presentation::default()
    }
}

/// A list of domains: an array of strings (a single string with commas is forgiven).
fn domains(args: &Value, name: &str) -> Result<Vec<String>, ToolError> {
    let items: Vec<String> = match args.get(name) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => s.split(',').map(str::to_string).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    ToolError::retry(format!("`{name}` must be an array of domain names, got {v} in it"))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(ToolError::retry(format!("`{name}` must be an array of domain names, got {other}")));
        }
    };
    Ok(items.iter().map(|d| normalize_domain(d)).filter(|d| !d.is_empty()).collect())
}

fn parse(args: &Value) -> Result<Query, ToolError> {
    let query = arg_str(args, "query")?.trim();
    if query.is_empty() {
        return Err(ToolError::retry("`query` must not be empty"));
    }
    let num_results = match arg_opt_u64(args, "num_results")? {
        None => DEFAULT_NUM_RESULTS,
        Some(n) if (1..=MAX_NUM_RESULTS).contains(&n) => n,
        Some(n) => {
            return Err(ToolError::retry(format!(
                "`num_results` must be from 1 to {MAX_NUM_RESULTS}, got {n}"
            )));
        }
    };
    Ok(Query {
        query: query.to_string(),
        num_results: num_results as u32,
        include_domains: domains(args, "include_domains")?,
        exclude_domains: domains(args, "exclude_domains")?,
    })
}

async fn execute(tool: &WebSearch, _ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let query = parse(&args)?;
    let searcher = tool.searcher().await?;
    let hits = searcher.search(&query).await.map_err(|e| match e {
        SearchError::Service { status, .. } if status < 500 && status != 429 => {
            ToolError::execution(format!("{e}. Do not retry the same search."))
        }
        other => ToolError::execution(other.to_string()),
    })?;
    let metadata = json!({
        "query": query.query,
        "results": hits.iter().map(|h| json!({"title": h.title, "url": h.url})).collect::<Vec<_>>(),
    });
    Ok(ToolOutput { output: render(&query, &hits), metadata, ..ToolOutput::default() })
}

fn render(query: &Query, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("No results for \"{}\".", query.query);
    }
    let mut out = format!("{} results for \"{}\":\n", hits.len(), query.query);
    for (n, hit) in hits.iter().enumerate() {
        out.push_str(&format!("\n{}. {}\n   {}\n", n + 1, hit.title, hit.url));
        if let Some(date) = hit.published.as_deref().filter(|d| !d.is_empty()) {
            out.push_str(&format!("   Published: {}\n", date.get(..10).unwrap_or(date)));
        }
        if !hit.snippet.is_empty() {
            out.push_str(&format!("   {}\n", hit.snippet));
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_and_domains_normalised() {
        let q = parse(&json!({"query": " rust async ", "include_domains": ["https://Docs.rs/x"], "exclude_domains": "a.com, b.org"}))
            .unwrap();
        assert_eq!(
            q,
            Query {
                query: "rust async".into(),
                num_results: 8,
                include_domains: vec!["docs.rs".into()],
                exclude_domains: vec!["a.com".into(), "b.org".into()],
            }
        );
        assert_eq!(parse(&json!({"query": "x", "num_results": "3"})).unwrap().num_results, 3);
        assert_eq!(
            parse(&json!({"query": "x", "num_results": 0})).unwrap_err(),
            ToolError::retry("`num_results` must be from 1 to 25, got 0")
        );
        assert_eq!(
            parse(&json!({"query": "  "})).unwrap_err(),
            ToolError::retry("`query` must not be empty")
        );
        assert_eq!(
            parse(&json!({"query": "x", "include_domains": [1]})).unwrap_err(),
            ToolError::retry("`include_domains` must be an array of domain names, got 1 in it")
        );
    }

    #[test]
    fn results_read_as_numbered_title_url_and_snippet() {
        let q = parse(&json!({"query": "tokio"})).unwrap();
        let hits = vec![
            Hit {
                title: "Tokio".into(),
                url: "https://tokio.rs/".into(),
                snippet: "An async runtime.".into(),
                published: Some("2025-03-01T00:00:00.000Z".into()),
            },
            Hit {
                title: "docs".into(),
                url: "https://docs.rs/tokio".into(),
                snippet: String::new(),
                published: None,
            },
        ];
        assert_eq!(
            render(&q, &hits),
            "2 results for \"tokio\":\n\n1. Tokio\n   https://tokio.rs/\n   Published: 2025-03-01\n   An async runtime.\n\n2. docs\n   https://docs.rs/tokio"
        );
        assert_eq!(render(&q, &[]), "No results for \"tokio\".");
    }
}
