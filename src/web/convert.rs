//! What a fetched body becomes for the model: the kind of body from its type (HTML, text, image, binary), the
//! charset decoding, and HTML as readable Markdown (main content extracted, tables, code and links kept) or
//! as plain text.
//!
//! Owns the conversion pipeline (research/reach.md §2.8, made single-parse for speed): `dom_query` parses the
//! page once; the main content is the page's own `<article>`/`<main>` or `dom_smoothie`'s (a Readability port)
//! pick; `dom_query` writes it as Markdown (tables, fenced code with its language, links) or text. Must not do
//! any I/O.

use std::borrow::Cow;

use dom_query::{Document, NodeData, NodeRef, Selection};
use dom_smoothie::{Readability, TextMode};
use url::Url;

/// The `format` argument of webfetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Markdown,
    Text,
    Html,
}

impl Format {
    pub fn parse(name: &str) -> Option<Format> {
        match name.trim().to_ascii_lowercase().as_str() {
            "markdown" | "md" => Some(Format::Markdown),
            "text" | "txt" => Some(Format::Text),
            "html" => Some(Format::Html),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Text => "text",
            Format::Html => "html",
        }
    }
}

/// What kind of body a response has, which decides what the model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    Html,
    /// Text of any other type (plain, JSON, XML, CSS, source code): given as is.
    Text,
    /// An image a model can look at, with its MIME type.
    Image(&'static str),
    /// Anything else: described by type and size, not shown.
    Binary,
}

/// The MIME type without parameters, lower case.
fn essence(content_type: Option<&str>) -> String {
    content_type.and_then(|t| t.split(';').next()).unwrap_or_default().trim().to_ascii_lowercase()
}

fn textual(essence: &str) -> bool {
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/toml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
        )
}

fn image(essence: &str) -> Option<&'static str> {
    Some(match essence {
        "image/png" => "image/png",
        "image/jpeg" | "image/jpg" => "image/jpeg",
        "image/gif" => "image/gif",
        "image/webp" => "image/webp",
        _ => return None,
    })
}

impl Body {
    /// The kind of body, from the declared type; an absent or generic type is sniffed from the first bytes.
    pub fn of(content_type: Option<&str>, bytes: &[u8]) -> Body {
        let essence = essence(content_type);
        match essence.as_str() {
            "text/html" | "application/xhtml+xml" => Body::Html,
            "" | "application/octet-stream" | "binary/octet-stream" | "unknown/unknown" => sniff(bytes),
            e if textual(e) => Body::Text,
            e => image(e).map_or(Body::Binary, Body::Image),
        }
    }

    /// Is the body worth downloading, judging by the declared type alone? Binary files are described from
    /// their headers; everything else (and anything that must be sniffed) is read.
    pub fn worth_reading(content_type: Option<&str>) -> bool {
        let essence = essence(content_type);
        matches!(
            essence.as_str(),
            "" | "application/octet-stream" | "binary/octet-stream" | "unknown/unknown"
        ) || essence == "text/html"
            || essence == "application/xhtml+xml"
            || textual(&essence)
            || image(&essence).is_some()
    }
}

fn sniff(bytes: &[u8]) -> Body {
    let head = &bytes[..bytes.len().min(1024)];
    let start =
        String::from_utf8_lossy(head).trim_start_matches('\u{feff}').trim_start().to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        return Body::Html;
    }
    let sample = &bytes[..bytes.len().min(8192)];
    let text = match std::str::from_utf8(sample) {
        Ok(_) => true,
        // A multi-byte character cut by the sample's end is still text.
        Err(e) => e.error_len().is_none(),
    };
    if text && !sample.contains(&0) { Body::Text } else { Body::Binary }
}

/// The body as UTF-8: a byte-order mark wins, then the `charset` of the Content-Type, then (for HTML) a
/// `<meta charset>` in the first kilobyte, then UTF-8. Bytes that do not decode become U+FFFD.
pub fn decode(bytes: &[u8], content_type: Option<&str>, html: bool) -> String {
    let declared = content_type
        .and_then(|t| t.split(';').skip(1).find_map(|p| p.trim().strip_prefix("charset=")))
        .map(|c| c.trim_matches(['"', '\'']).to_string())
        .or_else(|| html.then(|| meta_charset(bytes)).flatten());
    let encoding = declared
        .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    let (text, _, _) = encoding.decode(bytes);
    match text {
        Cow::Borrowed(s) => s.to_string(),
        Cow::Owned(s) => s,
    }
}

/// The charset named by `<meta charset=x>` or `<meta http-equiv=content-type content="...; charset=x">`.
fn meta_charset(bytes: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let value: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!value.is_empty()).then_some(value)
}

/// An HTML page converted for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    pub title: Option<String>,
    pub text: String,
}

/// Left out of the whole page when no main content is found: site chrome, forms, embedded media.
const SHELL: [&str; 14] = [
    "script", "style", "meta", "head", "nav", "header", "footer", "aside", "form", "noscript", "template",
    "iframe", "svg", "button",
];
/// Removed before Readability looks at a page.
const CHROME: &str =
    "nav, [role=navigation], body > header, body > footer, script, style, noscript, template";
/// Left out of a page's own main element: what sites put inside it that is not content.
const INSIDE_MAIN: [&str; 12] = [
    "script", "style", "meta", "head", "nav", "aside", "form", "noscript", "template", "iframe", "svg",
    "button",
];

/// Convert an HTML page fetched from `url` to `format`. The page is parsed once. Its main content is the one
/// `<article>` or `<main>` element when the page marks it so; otherwise Readability (`dom_smoothie`) finds it;
/// a page with neither (an index, a form) is converted whole without its navigation. Links become absolute.
pub fn html(source: &str, url: &Url, format: Format) -> Converted {
    if format == Format::Html {
        return Converted { title: None, text: source.to_string() };
    }
    let document = Document::from(source);
    let marks = Landmarks::of(&document);
    let title = marks.title.and_then(|t| clean_title(&t.text()));
    if let Some(main) = marks.main() {
        absolute(marks.links.iter().filter(|link| link.ancestors_it(None).any(|a| a.id == main.id)), url);
        return Converted { title, text: render(&main, format, &INSIDE_MAIN) };
    }
    // Site chrome is never the main content; without it Readability cannot pick a navigation-heavy block.
    document.select(CHROME).remove();
    if let Some(article) = readable(document, url, format) {
        let text = tidy(&article.text_content, format == Format::Markdown);
        return Converted { title: clean_title(&article.title).or(title), text };
    }
    let document = Document::from(source);
    let root = document.body().unwrap_or_else(|| document.root());
    absolute_links(&root, url);
    Converted { title, text: render(&root, format, &SHELL) }
}

fn clean_title(text: &str) -> Option<String> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

/// What one walk over a parsed page finds (instead of one selector query each, which walk it all again).
struct Landmarks<'a> {
    /// The first `<title>` inside `<head>` (`head title`).
    title: Option<NodeRef<'a>>,
    articles: Vec<NodeRef<'a>>,
    /// `<main>` and `role=main` elements (`main, [role=main]`).
    mains: Vec<NodeRef<'a>>,
    /// `a[href], img[src]`: what may link elsewhere, in document order.
    links: Vec<NodeRef<'a>>,
}

impl<'a> Landmarks<'a> {
    fn of(document: &'a Document) -> Self {
        let mut marks = Landmarks { title: None, articles: Vec::new(), mains: Vec::new(), links: Vec::new() };
        for node in document.root().descendants_it() {
            // (title, article, main, link)
            let (title, article, main, link) = node.query_or((false, false, false, false), |tree_node| {
                let Some(element) = tree_node.as_element() else { return (false, false, false, false) };
                let name: &str = &element.name.local;
                let main = name == "main" || element.attr("role").is_some_and(|role| &*role == "main");
                let link =
                    (name == "a" && element.has_attr("href")) || (name == "img" && element.has_attr("src"));
                (name == "title", name == "article", main, link)
            });
            if title && marks.title.is_none() && node.ancestors_it(None).any(|a| a.has_name("head")) {
                marks.title = Some(node);
            }
            if article {
                marks.articles.push(node);
            }
            if main {
                marks.mains.push(node);
            }
            if link {
                marks.links.push(node);
            }
        }
        marks
    }

    /// The page's own main content element: its only `<article>`, else its only `<main>` (or `role=main`).
    fn main(&self) -> Option<NodeRef<'a>> {
        [&self.articles, &self.mains].into_iter().find_map(|found| match found.as_slice() {
            [only] if has_text(only) => Some(*only),
            _ => None,
        })
    }
}

/// Does `node` hold at least two characters that are not whitespace? Stops at the first text that has them,
/// instead of counting a megabyte article's text.
fn has_text(node: &NodeRef<'_>) -> bool {
    let mut seen = 0;
    node.descendants_it().any(|n| {
        n.query_or(false, |tree_node| match &tree_node.data {
            NodeData::Text { contents } => {
                seen += contents.chars().filter(|c| !c.is_whitespace()).take(2).count();
                seen > 1
            }
            _ => false,
        })
    })
}

/// Readability's pick, already as Markdown or text (it renders from the same tree).
fn readable(document: Document, url: &Url, format: Format) -> Option<dom_smoothie::Article> {
    let text_mode = if format == Format::Text { TextMode::Formatted } else { TextMode::Markdown };
    // Classes stay so a code block keeps its language (`language-rust`).
    let config = dom_smoothie::Config { text_mode, keep_classes: true, ..dom_smoothie::Config::default() };
    let mut readability = Readability::with_document(document, Some(url.as_str()), Some(config))
        .map_err(|e| tracing::debug!(error = %e, "readability refused the page"))
        .ok()?;
    let article =
        readability.parse().map_err(|e| tracing::debug!(error = %e, "no main content found")).ok()?;
    (!article.text_content.trim().is_empty()).then_some(article)
}

/// Links and images relative to the page become absolute, so the model can fetch them.
fn absolute_links(node: &NodeRef<'_>, url: &Url) {
    absolute(Selection::from(*node).select("a[href], img[src]").nodes().iter(), url);
}

/// Make these `a[href]` and `img[src]` elements' targets absolute; one that already is stays as it is.
fn absolute<'a, 'b: 'a>(elements: impl Iterator<Item = &'a NodeRef<'b>>, url: &Url) {
    for element in elements {
        let attribute = if element.has_name("a") { "href" } else { "src" };
        if let Some(target) = element.attr(attribute)
            && let Ok(absolute) = url.join(target.trim())
            && absolute.as_str() != &*target
        {
            element.set_attr(attribute, absolute.as_str());
        }
    }
}

fn render(node: &NodeRef<'_>, format: Format, skip: &[&str]) -> String {
    match format {
        Format::Text => {
            for element in Selection::from(*node).select(&skip.join(", ")).nodes() {
                element.remove_from_parent();
            }
            tidy(&node.formatted_text(), false)
        }
        _ => tidy(&node.md(Some(skip)), true),
    }
}

/// No runs of blank lines outside code blocks, and no blank start or end. Trailing spaces stay outside code
/// (two of them are a Markdown line break); for text they go.
fn tidy(text: &str, markdown: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut blank, mut in_code) = (0, false);
    for line in text.trim().lines() {
        if markdown && line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        let line = if markdown { line } else { line.trim_end() };
        if !in_code && line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
            out.push('\n');
            continue;
        }
        blank = 0;
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests;
