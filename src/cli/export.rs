//! `tinycode export ID`: a stored session as a document to share, in Markdown or as one self-contained HTML page
//! (inline CSS, no scripts, every piece of content escaped) with the diffs rendered.
//!
//! Walks the same events `session/load` replays (`agent::journal::replay`), so an export shows what the editor
//! showed: very long tool output is trimmed the same way. Owns the two formats; reads nothing itself.

use serde_json::Value;

use crate::agent::event::{AgentEvent, ToolStatus};
use crate::display::Content;
use crate::store::messages::StoredMessage;
use crate::store::sessions::SessionRow;

/// One thing the conversation shows, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    User(String),
    Answer(String),
    Thought(String),
    Tool(Tool),
    Summary(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub title: String,
    pub name: String,
    pub failed: bool,
    pub input: Value,
    pub output: String,
    pub diffs: Vec<Diff>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub path: String,
    /// Unified diff lines (`---`, `+++`, `@@`, then ` `/`-`/`+` lines), without line ends.
    pub lines: Vec<String>,
}

/// The text of a prompt as the user sent it: text blocks, attached files named by their links.
fn prompt_text(blocks: &Value) -> String {
    let parts: Vec<String> = blocks
        .as_array()
        .into_iter()
        .flatten()
        .map(|block| match block["type"].as_str() {
            Some("text") => block["text"].as_str().unwrap_or_default().to_string(),
            Some("resource_link") => format!("[attached: {}]", block["uri"].as_str().unwrap_or_default()),
            Some("resource") => {
                format!("[attached: {}]", block["resource"]["uri"].as_str().unwrap_or_default())
            }
            Some("image") => "[image]".to_string(),
            other => format!("[{}]", other.unwrap_or("content")),
        })
        .collect();
    parts.join("\n\n")
}

fn unified(path: &str, old: Option<&str>, new: &str) -> Diff {
    let diff = similar::TextDiff::from_lines(old.unwrap_or(""), new);
    let old_name = if old.is_some() { path } else { "/dev/null" };
    let text = diff.unified_diff().context_radius(3).header(old_name, path).to_string();
    Diff { path: path.to_string(), lines: text.lines().map(str::to_string).collect() }
}

/// Append `text` to the last entry when it continues the same message, else start a new entry.
fn push_text(entries: &mut Vec<Entry>, last_id: &mut Option<String>, id: &str, text: String, thought: bool) {
    let same = last_id.as_deref() == Some(id);
    match entries.last_mut() {
        Some(Entry::Answer(t)) if same && !thought => t.push_str(&text),
        Some(Entry::Thought(t)) if same && thought => t.push_str(&text),
        _ => entries.push(if thought { Entry::Thought(text) } else { Entry::Answer(text) }),
    }
    *last_id = Some(id.to_string());
}

/// The entries of a stored conversation.
pub fn entries(messages: &[StoredMessage]) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut started: std::collections::HashMap<String, (String, String, Value)> = Default::default();
    let mut last_id = None;
    for event in crate::agent::journal::replay(messages) {
        // A subagent's edits and commands are part of the conversation as the user saw it.
        let event = match event {
            AgentEvent::Lifted { event, .. } => *event,
            other => other,
        };
        match event {
            AgentEvent::UserMessage { blocks, .. } => {
                last_id = None;
                entries.push(Entry::User(prompt_text(&blocks)));
            }
            AgentEvent::MessageChunk { message_id, text } => {
                push_text(&mut entries, &mut last_id, &message_id, text, false)
            }
            AgentEvent::ThoughtChunk { message_id, text } => {
                push_text(&mut entries, &mut last_id, &message_id, text, true)
            }
            AgentEvent::ToolCallStarted { call_id, tool, presentation, raw_input } => {
                started.insert(call_id, (presentation.title, tool, raw_input));
            }
            AgentEvent::ToolCallRevised { call_id, presentation } => {
                if let Some(entry) = started.get_mut(&call_id) {
                    entry.0 = presentation.title;
                }
            }
            AgentEvent::ToolCallFinished { call_id, status, output, display, .. } => {
                last_id = None;
                let (title, name, input) =
                    started.remove(&call_id).unwrap_or((call_id, String::new(), Value::Null));
                let diffs = display
                    .iter()
                    .filter_map(|c| match c {
                        Content::Diff { path, old_text, new_text } => {
                            Some(unified(&path.display().to_string(), old_text.as_deref(), new_text))
                        }
                        _ => None,
                    })
                    .collect();
                let failed = status == ToolStatus::Failed;
                entries.push(Entry::Tool(Tool { title, name, failed, input, output, diffs }));
            }
            AgentEvent::Compaction { summary: Some(summary), .. } => {
                last_id = None;
                entries.push(Entry::Summary(summary));
            }
            _ => {}
        }
    }
    entries
}

fn heading(session: &SessionRow) -> String {
    session.title.clone().filter(|t| !t.trim().is_empty()).unwrap_or_else(|| "Untitled session".into())
}

fn details(session: &SessionRow) -> Vec<(&'static str, String)> {
    vec![
        ("Session", session.id.clone()),
        ("Directory", session.cwd.clone()),
        ("Model", session.model.clone().unwrap_or_default()),
        ("Mode", session.mode.clone()),
        ("Started", crate::clock::iso8601(session.created_at)),
        ("Last update", crate::clock::iso8601(session.updated_at)),
    ]
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------- Markdown

/// A code fence longer than any backtick run inside `text`.
fn fence(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

fn fenced(info: &str, text: &str) -> String {
    let fence = fence(text);
    let end = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{info}\n{text}{end}{fence}\n")
}

fn markdown_tool(tool: &Tool) -> String {
    let mark = if tool.failed { "✗" } else { "✓" };
    let mut out = format!("**{mark} {}**", tool.title.replace('\n', " "));
    if !tool.name.is_empty() {
        out.push_str(&format!(" (`{}`)", tool.name));
    }
    out.push_str("\n\n");
    if !tool.input.is_null() {
        out.push_str(&format!(
            "<details><summary>Input</summary>\n\n{}\n</details>\n\n",
            fenced("json", &pretty(&tool.input))
        ));
    }
    for diff in &tool.diffs {
        out.push_str(&fenced("diff", &diff.lines.join("\n")));
        out.push('\n');
    }
    if tool.diffs.is_empty() && !tool.output.is_empty() {
        out.push_str(&format!(
            "<details><summary>Output</summary>\n\n{}\n</details>\n\n",
            fenced("text", &tool.output)
        ));
    }
    out
}

/// The session as Markdown.
pub fn markdown(session: &SessionRow, entries: &[Entry]) -> String {
    let mut out = format!("# {}\n\n", heading(session).replace('\n', " "));
    for (name, value) in details(session) {
        out.push_str(&format!("- **{name}:** {value}\n"));
    }
    let mut speaker = "";
    for entry in entries {
        let who = if matches!(entry, Entry::User(_)) { "You" } else { "tinycode" };
        if who != speaker && !matches!(entry, Entry::Summary(_)) {
            out = format!("{}\n\n## {who}\n\n", out.trim_end());
            speaker = who;
        }
        match entry {
            Entry::User(text) | Entry::Answer(text) => out.push_str(&format!("{}\n\n", text.trim_end())),
            Entry::Thought(text) => out.push_str(&format!(
                "<details><summary>Thinking</summary>\n\n{}\n\n</details>\n\n",
                text.trim_end()
            )),
            Entry::Tool(tool) => out.push_str(&markdown_tool(tool)),
            Entry::Summary(text) => {
                out.push_str(&format!(
                    "\n---\n\n*Earlier messages were summarised:*\n\n{}\n\n",
                    text.trim_end()
                ));
                speaker = "";
            }
        }
    }
    format!("{}\n", out.trim_end())
}

// ---------------------------------------------------------------------------------------------- HTML

/// Escape text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = include_str!("export.css");

fn html_diff(diff: &Diff) -> String {
    let lines: Vec<String> = diff
        .lines
        .iter()
        .map(|line| {
            let class = match line.as_bytes().first() {
                _ if line.starts_with("---") || line.starts_with("+++") => "file",
                Some(b'@') => "hunk",
                Some(b'+') => "add",
                Some(b'-') => "del",
                _ => "ctx",
            };
            format!("<span class=\"{class}\">{}</span>", escape(line))
        })
        .collect();
    format!("<pre class=\"diff\">{}</pre>\n", lines.join("\n"))
}

fn html_tool(tool: &Tool) -> String {
    let (mark, class) = if tool.failed { ("✗", "failed") } else { ("✓", "completed") };
    let mut out =
        format!("<div class=\"tool {class}\"><div class=\"tool-title\">{mark} {}", escape(&tool.title));
    if !tool.name.is_empty() {
        out.push_str(&format!(" <code>{}</code>", escape(&tool.name)));
    }
    out.push_str("</div>\n");
    if !tool.input.is_null() {
        out.push_str(&format!(
            "<details><summary>Input</summary><pre>{}</pre></details>\n",
            escape(&pretty(&tool.input))
        ));
    }
    for diff in &tool.diffs {
        out.push_str(&html_diff(diff));
    }
    if tool.diffs.is_empty() && !tool.output.is_empty() {
        out.push_str(&format!(
            "<details><summary>Output</summary><pre>{}</pre></details>\n",
            escape(&tool.output)
        ));
    }
    out.push_str("</div>\n");
    out
}

/// The session as one self-contained HTML page.
pub fn html(session: &SessionRow, entries: &[Entry]) -> String {
    let title = escape(&heading(session));
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n<h1>{title}</h1>\n<dl class=\"meta\">\n"
    );
    for (name, value) in details(session) {
        out.push_str(&format!("<dt>{name}</dt><dd>{}</dd>\n", escape(&value)));
    }
    out.push_str("</dl>\n");
    let mut open = false;
    let mut speaker = "";
    for entry in entries {
        let who = match entry {
            Entry::User(_) => "user",
            Entry::Summary(_) => "summary",
            _ => "agent",
        };
        if who != speaker || who == "summary" {
            if open {
                out.push_str("</section>\n");
            }
            let name = match who {
                "user" => "You",
                "summary" => "Earlier messages, summarised",
                _ => "tinycode",
            };
            out.push_str(&format!("<section class=\"{who}\">\n<h2>{name}</h2>\n"));
            open = true;
            speaker = who;
        }
        match entry {
            Entry::User(text) | Entry::Answer(text) | Entry::Summary(text) => {
                out.push_str(&format!("<div class=\"text\">{}</div>\n", escape(text.trim_end())))
            }
            Entry::Thought(text) => out.push_str(&format!(
                "<details class=\"thought\"><summary>Thinking</summary><div class=\"text\">{}</div></details>\n",
                escape(text.trim_end())
            )),
            Entry::Tool(tool) => out.push_str(&html_tool(tool)),
        }
    }
    if open {
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(role: &str, kind: &str, data: Value) -> StoredMessage {
        StoredMessage { role: role.into(), parts: vec![(kind.into(), data)], created_at: 1 }
    }

    fn session() -> SessionRow {
        SessionRow {
            id: "sess_1".into(),
            cwd: "/p".into(),
            title: Some("Fix <b>".into()),
            mode: "build".into(),
            model: Some("m".into()),
            thought_level: None,
            created_at: 0,
            updated_at: 60_000,
        }
    }

    fn conversation() -> Vec<StoredMessage> {
        let presentation =
            json!({"title": "Edit a.txt", "kind": "Edit", "locations": [], "patterns": [], "content": []});
        vec![
            stored(
                "user",
                "input",
                json!({"messageId": "u1", "blocks": [{"type": "text", "text": "fix <b> in"}, {"type": "resource_link", "name": "a.txt", "uri": "file:///p/a.txt"}]}),
            ),
            stored(
                "assistant",
                "reasoning",
                json!({"messageId": "t1", "field": "reasoning_content", "text": "look first"}),
            ),
            stored("assistant", "text", json!({"messageId": "m1", "text": "Fixing ```it```."})),
            stored(
                "tool_start",
                "tool_start",
                json!({"callId": "c1", "uiId": "c1", "tool": "edit", "presentation": presentation, "rawInput": {"file_path": "/p/a.txt"}}),
            ),
            stored(
                "tool",
                "tool_result",
                json!({"callId": "c1", "uiId": "c1", "content": "ok", "failed": false, "display": [{"Diff": {"path": "/p/a.txt", "old_text": "a\n<b>\n", "new_text": "a\n<i>\n"}}], "locations": [], "rawOutput": null}),
            ),
            stored("assistant", "text", json!({"messageId": "m2", "text": "Done."})),
        ]
    }

    #[test]
    fn entries_follow_the_replayed_conversation_with_diffs_in_unified_form() {
        let entries = entries(&conversation());
        assert_eq!(
            entries,
            vec![
                Entry::User("fix <b> in\n\n[attached: file:///p/a.txt]".into()),
                Entry::Thought("look first".into()),
                Entry::Answer("Fixing ```it```.".into()),
                Entry::Tool(Tool {
                    title: "Edit a.txt".into(),
                    name: "edit".into(),
                    failed: false,
                    input: json!({"file_path": "/p/a.txt"}),
                    output: "ok".into(),
                    diffs: vec![Diff {
                        path: "/p/a.txt".into(),
                        lines: ["--- /p/a.txt", "+++ /p/a.txt", "@@ -1,2 +1,2 @@", " a", "-<b>", "+<i>"]
                            .map(String::from)
                            .to_vec(),
                    }],
                }),
                Entry::Answer("Done.".into()),
            ]
        );
    }

    #[test]
    fn markdown_fences_outlast_the_backticks_inside_and_groups_turns_by_speaker() {
        let text = markdown(&session(), &entries(&conversation()));
        assert_eq!(
            text,
            "# Fix <b>\n\n- **Session:** sess_1\n- **Directory:** /p\n- **Model:** m\n- **Mode:** build\n- **Started:** 1970-01-01T00:00:00.000Z\n- **Last update:** 1970-01-01T00:01:00.000Z\n\n## You\n\nfix <b> in\n\n[attached: file:///p/a.txt]\n\n## tinycode\n\n<details><summary>Thinking</summary>\n\nlook first\n\n</details>\n\nFixing ```it```.\n\n**✓ Edit a.txt** (`edit`)\n\n<details><summary>Input</summary>\n\n```json\n{\n  \"file_path\": \"/p/a.txt\"\n}\n```\n\n</details>\n\n```diff\n--- /p/a.txt\n+++ /p/a.txt\n@@ -1,2 +1,2 @@\n a\n-<b>\n+<i>\n```\n\nDone.\n"
        );
        assert_eq!(fence("a ```` b"), "`````");
    }

    #[test]
    fn html_escapes_every_piece_of_content_and_marks_diff_lines() {
        let page = html(&session(), &entries(&conversation()));
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(!page.contains("<b>"), "unescaped markup: {page}");
        assert!(!page.contains("<script"), "{page}");
        assert!(page.contains("<title>Fix &lt;b&gt;</title>"));
        assert!(page.contains("<div class=\"text\">fix &lt;b&gt; in\n\n[attached: file:///p/a.txt]</div>"));
        assert!(page.contains(
            "<pre class=\"diff\"><span class=\"file\">--- /p/a.txt</span>\n<span class=\"file\">+++ /p/a.txt</span>\n<span class=\"hunk\">@@ -1,2 +1,2 @@</span>\n<span class=\"ctx\"> a</span>\n<span class=\"del\">-&lt;b&gt;</span>\n<span class=\"add\">+&lt;i&gt;</span></pre>"
        ));
        assert_eq!(page.matches("<section").count(), page.matches("</section>").count());
        assert_eq!(page.matches("<section class=\"agent\">").count(), 1);
    }

    #[test]
    fn a_new_file_diffs_against_dev_null() {
        let diff = unified("/p/new.txt", None, "x\n");
        assert_eq!(diff.lines, ["--- /dev/null", "+++ /p/new.txt", "@@ -0,0 +1 @@", "+x"]);
    }
}
