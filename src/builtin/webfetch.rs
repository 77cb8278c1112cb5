//! The `webfetch` tool (seed 000 §8.3, with seed 003's hardening): fetch a URL through the SSRF-guarded
//! client and give the model readable Markdown (or text, or the HTML), images as images, binary files
//! described. The URL is checked before the permission ask, so a refused one is never asked about; the ask
//! shows the URL and an "always" answer is remembered for the host. Plain GETs are cached for 15 minutes.
//!
//! Owns the tool's arguments, the permission pattern (the host) and what the model reads. The fetching,
//! guarding and converting belong to `web`.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use base64::Engine;
use reqwest::Method;
use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use url::Url;

use crate::display::{Content, Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, ToolError, ToolOutput, arg_opt_str, arg_str};
use crate::web::cache::{CACHE_BYTES, CACHE_TTL, Cache};
use crate::web::convert::{self, Body, Format};
use crate::web::{FetchError, Fetched, Fetcher, Page, Policy, Request};

pub const ID: &str = "webfetch";
/// Characters of an error page shown with its status.
const ERROR_PAGE_CHARS: usize = 2_000;

/// The tool's state, shared by every session of the process: the fetcher (built on first use: building an
/// HTTP client loads the root certificates) and the cache.
pub struct WebFetch {
    policy: Policy,
    fetcher: OnceLock<Result<Arc<Fetcher>, FetchError>>,
    cache: Mutex<Cache<ToolOutput>>,
}

impl WebFetch {
    /// The production tool: the fetcher is built with `policy` when first needed.
    pub fn new(policy: Policy) -> Self {
        Self { policy, fetcher: OnceLock::new(), cache: Mutex::new(Cache::new(CACHE_BYTES, CACHE_TTL)) }
    }

    /// A tool around a ready fetcher (tests give it a name table and shorter limits).
    pub fn with_fetcher(fetcher: Fetcher) -> Self {
        let tool = Self::new(fetcher.policy().clone());
        let _ = tool.fetcher.set(Ok(Arc::new(fetcher)));
        tool
    }

    async fn fetcher(&self) -> Result<Arc<Fetcher>, ToolError> {
        if let Some(ready) = self.fetcher.get() {
            return ready.clone().map_err(|e| ToolError::execution(e.to_string()));
        }
        let policy = self.policy.clone();
        let built = tokio::task::spawn_blocking(move || Fetcher::new(policy).map(Arc::new))
            .await
            .unwrap_or_else(|e| Err(FetchError::Network(format!("cannot create the HTTP client: {e}"))));
        self.fetcher.get_or_init(|| built).clone().map_err(|e| ToolError::execution(e.to_string()))
    }

    fn cached(&self, key: &str) -> Option<ToolOutput> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.get(key, Instant::now()).map(|output| (*output).clone())
    }

    fn store(&self, key: String, output: &ToolOutput) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.put(key, output.clone(), output.output.len(), Instant::now());
    }
}

pub fn def(tool: Arc<WebFetch>) -> Def {
    let checker = tool.clone();
    Def {
        id: ID.into(),
        description: include_str!("descriptions/webfetch.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http or https URL to fetch"},
                "method": {"type": "string", "description": "HTTP method (default GET)", "enum": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Additional request headers"},
                "body": {"type": "string", "description": "Request body"},
                "format": {"type": "string", "enum": ["markdown", "text", "html"], "description": "How to return an HTML page (default markdown)"}
            },
            "required": ["url"]
        }),
        permission: Some(Category::Webfetch),
        present,
        preview: Some(Arc::new(move |_ctx, args| {
            let tool = checker.clone();
            Box::pin(async move { preview(&tool.policy, &args) })
        })),
        execute: Arc::new(move |ctx, _args| {
            let tool = tool.clone();
            Box::pin(async move { execute(&tool, ctx).await })
        }),
    }
}

/// The host as permission rules see it (IPv6 without brackets, so it is a plain glob).
fn host_pattern(url: &Url) -> String {
    match url.host() {
        Some(url::Host::Ipv6(v6)) => v6.to_string(),
        Some(host) => host.to_string(),
        None => String::new(),
    }
}

fn present(args: &Value, _cwd: &Path) -> Presentation {
    let raw = args.get("url").and_then(Value::as_str).unwrap_or("").trim();
    let method = args.get("method").and_then(Value::as_str).map(str::to_ascii_uppercase);
    let title = match method.as_deref() {
        None | Some("GET") => format!("Fetch {raw}"),
        Some(method) => format!("Fetch {raw} ({method})"),
    };
    let patterns = Url::parse(raw).ok().map(|u| host_pattern(&u)).filter(|h| !h.is_empty());
    Presentation {
        title,
        kind: Kind::Fetch,
        patterns: patterns.into_iter().collect(),
        content: vec![Content::Text(raw.to_string())],
        ..Presentation::default()
    }
}

/// A call's arguments, checked.
struct Plan {
    request: Request,
    format: Format,
}

impl Plan {
    /// Plain GETs without a body are cached by URL, format and headers.
    fn cache_key(&self) -> Option<String> {
        (self.request.method == Method::GET && self.request.body.is_none()).then(|| {
            let mut headers: Vec<String> = self
                .request
                .headers
                .iter()
                .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
                .collect();
            headers.sort();
            format!("{} {}\n{}", self.format.as_str(), self.request.url, headers.join("\n"))
        })
    }
}

fn parse(args: &Value) -> Result<Plan, ToolError> {
    let raw = arg_str(args, "url")?.trim();
    let url = Url::parse(raw).map_err(|e| {
        ToolError::retry(format!("`url` must be an absolute http or https URL (`{raw}`: {e})"))
    })?;
    let method = match arg_opt_str(args, "method")?.map(|m| m.trim().to_ascii_uppercase()) {
        None => Method::GET,
        Some(m) if matches!(m.as_str(), "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS") => {
            Method::from_bytes(m.as_bytes()).map_err(|e| ToolError::retry(e.to_string()))?
        }
        Some(m) => {
            return Err(ToolError::retry(format!(
                "`method` must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, got `{m}`"
            )));
        }
    };
    let format = match arg_opt_str(args, "format")? {
        None => Format::Markdown,
        Some(name) => Format::parse(name).ok_or_else(|| {
            ToolError::retry(format!("`format` must be markdown, text or html, got `{name}`"))
        })?,
    };
    let mut headers = headers(args)?;
    if !headers.contains_key(ACCEPT) {
        headers.insert(ACCEPT, HeaderValue::from_static(accept(format)));
    }
    let body = arg_opt_str(args, "body")?.map(str::to_string);
    Ok(Plan { request: Request { url, method, headers, body }, format })
}

fn headers(args: &Value) -> Result<HeaderMap, ToolError> {
    let mut map = HeaderMap::new();
    let object = match args.get("headers") {
        None | Some(Value::Null) => return Ok(map),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(ToolError::retry(format!("`headers` must be an object of strings, got {other}")));
        }
    };
    for (name, value) in object {
        let Some(text) = value.as_str() else {
            return Err(ToolError::retry(format!("header `{name}` must be a string, got {value}")));
        };
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| ToolError::retry(format!("`{name}` is not a valid header name")))?;
        let value = HeaderValue::from_str(text)
            .map_err(|_| ToolError::retry(format!("the value of header `{name}` is not valid")))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// What to ask the server for: Markdown when the model wants Markdown, and so on; anything goes last.
fn accept(format: Format) -> &'static str {
    match format {
        Format::Markdown => "text/markdown;q=1.0, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1",
        Format::Text => "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
        Format::Html => "text/html;q=1.0, application/xhtml+xml;q=0.9, */*;q=0.1",
    }
}

/// Check the arguments and the URL before the ask: a bad or refused URL is told to the model without
/// bothering the user, and nothing is sent.
fn preview(policy: &Policy, args: &Value) -> Result<Preview, ToolError> {
    let plan = parse(args)?;
    policy
        .check(&plan.request.url)
        .map_err(|refusal| ToolError::retry(format!("Refused: {refusal}. Nothing was fetched.")))?;
    let mut presentation = present(args, Path::new(""));
    presentation.patterns = vec![host_pattern(&plan.request.url)];
    Ok(Preview { presentation, plan: Arc::new(plan), category: None })
}

async fn execute(tool: &WebFetch, ctx: Context) -> Result<ToolOutput, ToolError> {
    let plan = ctx.plan::<Plan>()?;
    let key = plan.cache_key();
    if let Some(hit) = key.as_deref().and_then(|k| tool.cached(k)) {
        let mut hit = hit;
        hit.metadata["cached"] = json!(true);
        return Ok(hit);
    }
    let fetcher = tool.fetcher().await?;
    let fetched = fetcher.fetch(plan.request.clone()).await.map_err(fetch_error)?;
    let output = match fetched {
        Fetched::Redirect { from, to, refused: Some(refusal) } => {
            return Err(ToolError::retry(format!(
                "{from} redirected to {to}, which is refused: {refusal}. The redirect was not followed."
            )));
        }
        Fetched::Redirect { from, to, refused: None } => ToolOutput {
            output: format!(
                "{from} redirects to another host: {to}\nThe redirect was not followed. To read that page, call webfetch with this URL."
            ),
            metadata: json!({"url": from.as_str(), "redirect": to}),
            ..ToolOutput::default()
        },
        Fetched::Page(page) => {
            let (format, head_only) = (plan.format, plan.request.method == Method::HEAD);
            let limit = fetcher.limits().max_bytes;
            tokio::task::spawn_blocking(move || render(page, format, limit, head_only))
                .await
                .map_err(|e| ToolError::execution(format!("converting the page failed: {e}")))??
        }
    };
    if let Some(key) = key {
        tool.store(key, &output);
    }
    Ok(output)
}

fn fetch_error(error: FetchError) -> ToolError {
    match error {
        FetchError::Refused(refusal) => ToolError::retry(format!("Refused: {refusal}. Nothing was fetched.")),
        FetchError::RedirectRefused { .. } | FetchError::TooManyRedirects(_) => {
            ToolError::retry(format!("{error}. The page was not fetched."))
        }
        FetchError::Timeout(_) | FetchError::Network(_) => ToolError::execution(error.to_string()),
    }
}

fn megabytes(bytes: usize) -> String {
    format!("{} MB", bytes / (1024 * 1024))
}

/// What the model reads for a page: a few header lines, then the content.
fn render(page: Page, format: Format, limit: usize, head_only: bool) -> Result<ToolOutput, ToolError> {
    let kind = Body::of(page.content_type.as_deref(), &page.body);
    let content_type = page.content_type.clone().unwrap_or_else(|| "unknown".into());
    let metadata = json!({
        "url": page.url.as_str(),
        "status": page.status.as_u16(),
        "contentType": content_type,
        "bytes": page.body.len(),
        "truncated": page.truncated,
    });
    let size = page.declared_length.map_or(page.body.len() as u64, |n| n.max(page.body.len() as u64));
    if head_only {
        let output = format!(
            "HTTP {}\nURL: {}\nContent-Type: {content_type}\nContent-Length: {}",
            page.status,
            page.url,
            page.declared_length.map_or("unknown".into(), |n| n.to_string())
        );
        return Ok(ToolOutput {
            output,
            metadata,
            failed: !page.status.is_success(),
            ..ToolOutput::default()
        });
    }
    if let Body::Image(mime) = kind {
        return image(&page, mime, limit, metadata);
    }
    let (title, text) = match kind {
        Body::Binary => (
            None,
            format!(
                "Binary content ({content_type}, {size} bytes) is not shown: webfetch returns text, HTML and images."
            ),
        ),
        Body::Html => {
            let converted = convert::html(
                &convert::decode(&page.body, page.content_type.as_deref(), true),
                &page.url,
                format,
            );
            (converted.title, converted.text)
        }
        _ => (None, convert::decode(&page.body, page.content_type.as_deref(), false)),
    };
    if !page.status.is_success() {
        let excerpt: String = text.chars().take(ERROR_PAGE_CHARS).collect();
        return Err(ToolError::execution(format!("HTTP {} from {}\n\n{excerpt}", page.status, page.url)));
    }
    let mut head = format!("URL: {}\n", page.url);
    if let Some(title) = title {
        head.push_str(&format!("Title: {title}\n"));
    }
    if page.truncated {
        head.push_str(&format!(
            "Note: the body was cut at {}; what follows is its beginning.\n",
            megabytes(limit)
        ));
    }
    Ok(ToolOutput { output: format!("{head}\n{text}"), metadata, ..ToolOutput::default() })
}

/// An image for models that see images (the same data URI `read` returns).
fn image(page: &Page, mime: &str, limit: usize, metadata: Value) -> Result<ToolOutput, ToolError> {
    if page.truncated {
        return Err(ToolError::retry(format!(
            "The image at {} is larger than {}; images that size are not inlined.",
            page.url,
            megabytes(limit)
        )));
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&page.body);
    Ok(ToolOutput {
        output: format!("data:{mime};base64,{data}"),
        metadata,
        bounded: true,
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests;
