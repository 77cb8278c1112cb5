//! MCP tools as `tool::Def`s, so they run through the same pipeline as the built-ins: the ask (category `mcp`,
//! remembered per server and tool as `server/tool`; a read-only hint only picks the card's icon and lets the call
//! be asked about in plan mode), the card (titled `server: tool`, showing the arguments and then the server's text
//! and images), truncation with the full output saved, cancellation and the call timeout (in `server`). Also the
//! `mcp_resource` tool that reads the servers' resources.
//!
//! Owns the mapping to the framework. Must not change the framework.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::{ResourceContents, Tool};
use serde_json::{Value, json};

use super::content;
use super::handler::ProgressSink;
use super::schema;
use super::server::Server;
use crate::display::{Content, Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, Preview, Progress, ToolError, ToolOutput};

/// The id of the resource tool.
pub const RESOURCE_TOOL: &str = "mcp_resource";
const RESOURCE_DESCRIPTION: &str = include_str!("descriptions/mcp_resource.md");

/// Before a preview gives the real title (replays, unknown tools).
fn present(_args: &Value, _cwd: &Path) -> Presentation {
    Presentation { title: "MCP tool".into(), ..Presentation::default() }
}

/// The arguments as the ask and the card show them.
fn arguments_block(args: &Value) -> Content {
    let json = serde_json::to_string_pretty(args).unwrap_or_default();
    Content::Text(format!("```json\n{json}\n```"))
}

fn progress_sink(ctx: &Context) -> Option<ProgressSink> {
    let report = ctx.progress.clone()?;
    Some(Arc::new(move |text: String| report(Progress::Output(text))))
}

/// The `Def` of `tool` of `server`, offered as `id`.
pub fn tool_def(server: Arc<Server>, id: String, tool: &Tool) -> Def {
    let raw = tool.name.to_string();
    let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
    let description = tool
        .description
        .as_deref()
        .filter(|d| !d.trim().is_empty())
        .map(String::from)
        .or_else(|| tool.title.clone())
        .unwrap_or_else(|| format!("The tool `{raw}` of the MCP server `{}`.", server.name()));
    let title = format!("{}: {raw}", server.name());
    let pattern = format!("{}/{raw}", server.name());
    let kind = if read_only { Kind::Read } else { Kind::Other };
    Def {
        id,
        description,
        parameters: schema::sanitize(&tool.input_schema),
        permission: Some(Category::Mcp),
        present,
        preview: Some(Arc::new(move |_ctx, args| {
            let presentation = Presentation {
                title: title.clone(),
                kind,
                locations: Vec::new(),
                patterns: vec![pattern.clone()],
                content: vec![arguments_block(&args)],
            };
            Box::pin(async move { Ok(Preview { presentation, plan: Arc::new(()), category: None }) })
        })),
        execute: Arc::new(move |ctx, args| {
            let (server, raw) = (server.clone(), raw.clone());
            Box::pin(async move { call(&server, &raw, ctx, args).await })
        }),
    }
}

async fn call(server: &Server, tool: &str, ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let arguments = match args {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        other => return Err(ToolError::Retry(format!("The arguments must be a JSON object, got: {other}"))),
    };
    let result = server.call(tool, arguments, &ctx.cancel, progress_sink(&ctx)).await?;
    let content::Rendered { text, images, display, failed } = content::render(&result);
    if failed {
        return Err(ToolError::Retry(format!("The MCP tool reported an error:\n{text}")));
    }
    // The model and the editor get the same bounded text; the full text is saved once.
    let long = crate::tool::truncate::preview(&text).is_some();
    let text = if text.is_empty() { text } else { crate::tool::preview_and_save(&ctx, text).await };
    let display = if long { bounded_display(display, &text) } else { display };
    // The images follow the text, each in its own paragraph.
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(text);
    }
    parts.extend(images);
    Ok(ToolOutput { output: parts.join("\n\n"), display, bounded: true, ..ToolOutput::default() })
}

/// The card of a result whose text was cut: the model's preview in place of the texts, then the images.
fn bounded_display(display: Vec<Content>, preview: &str) -> Vec<Content> {
    let mut bounded = vec![Content::Text(preview.to_string())];
    bounded.extend(display.into_iter().filter(|c| matches!(c, Content::Image { .. })));
    bounded
}

/// The `mcp_resource` tool over the servers that offer resources.
pub fn resource_def(servers: Vec<Arc<Server>>) -> Def {
    let offering: Vec<Arc<Server>> =
        servers.into_iter().filter(|s| !s.catalog().resources.is_empty()).collect();
    let names: Vec<String> = offering.iter().map(|s| format!("`{}`", s.name())).collect();
    Def {
        id: RESOURCE_TOOL.into(),
        description: RESOURCE_DESCRIPTION.replace("{{servers}}", &names.join(", ")),
        parameters: json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server's name"},
                "uri": {"type": "string", "description": "The resource's URI; leave it out to list the server's resources"}
            },
            "required": ["server"]
        }),
        permission: Some(Category::Read),
        present: present_resource,
        preview: None,
        execute: Arc::new(move |ctx, args| {
            let offering = offering.clone();
            Box::pin(async move { read_resource(&offering, ctx, args).await })
        }),
    }
}

fn present_resource(args: &Value, _cwd: &Path) -> Presentation {
    let server = args.get("server").and_then(Value::as_str).unwrap_or_default();
    let (title, pattern) = match args.get("uri").and_then(Value::as_str) {
        Some(uri) => (format!("{server}: read {uri}"), format!("{server}:{uri}")),
        None => (format!("{server}: list resources"), format!("{server}:")),
    };
    Presentation { title, kind: Kind::Read, patterns: vec![pattern], ..Presentation::default() }
}

async fn read_resource(servers: &[Arc<Server>], ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let name = args.get("server").and_then(Value::as_str).unwrap_or_default();
    let Some(server) = servers.iter().find(|s| s.name() == name) else {
        let names: Vec<&str> = servers.iter().map(|s| s.name()).collect();
        return Err(ToolError::Retry(format!(
            "No MCP server named `{name}` offers resources. Servers with resources: {}.",
            names.join(", ")
        )));
    };
    let Some(uri) = args.get("uri").and_then(Value::as_str) else {
        let mut text = format!("Resources of `{name}`:\n");
        for resource in server.catalog().resources {
            let kind = resource.mime_type.as_deref().unwrap_or("unknown type");
            let about = resource.description.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
            text.push_str(&format!("- {} ({}, {kind}){about}\n", resource.uri, resource.name));
        }
        return Ok(ToolOutput::text(text));
    };
    let result = server.read_resource(uri, &ctx.cancel).await?;
    let mut texts = Vec::new();
    let mut display = Vec::new();
    for contents in &result.contents {
        if let ResourceContents::BlobResourceContents { mime_type: Some(mime), blob, .. } = contents
            && mime.starts_with("image/")
        {
            display.push(Content::Image { data: blob.clone(), mime_type: mime.clone() });
        }
        texts.push(content::resource_text(contents));
    }
    let text = if texts.is_empty() { format!("`{uri}` is empty.") } else { texts.join("\n\n") };
    Ok(ToolOutput { output: text, display, ..ToolOutput::default() })
}
