//! What `tinycode run` prints. Text mode: the answer on stdout (the text before and after a tool call, or of
//! separate model responses, as separate paragraphs) and one line per tool call, permission and stop on stderr.
//! `--json` mode: one JSON event per line on stdout (the event vocabulary is documented in the README and pinned
//! by the tests below), nothing on stderr but errors.
//!
//! Owns the headless output format. Works on `session/update`s as wire JSON, so it needs no SDK types.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;

use serde_json::{Value, json};

/// Where output goes: stdout and stderr in the binary, buffers in tests.
pub type Writer = Box<dyn Write + Send>;

#[derive(Default)]
struct State {
    /// Tool call titles by id, so result lines can name the call.
    titles: HashMap<String, String>,
    /// The message the last printed text belonged to.
    last_message: Option<String>,
    /// Some answer text was printed.
    wrote: bool,
    /// The last printed text did not end its line.
    open_line: bool,
    /// A tool call came after the last printed text.
    tool_since_text: bool,
}

pub struct Output {
    json: bool,
    out: Mutex<Writer>,
    err: Mutex<Writer>,
    state: Mutex<State>,
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

impl Output {
    pub fn new(json: bool, out: Writer, err: Writer) -> Self {
        Self { json, out: Mutex::new(out), err: Mutex::new(err), state: Mutex::new(State::default()) }
    }

    /// Output to the process's stdout and stderr.
    pub fn standard(json: bool) -> Self {
        Self::new(json, Box::new(std::io::stdout()), Box::new(std::io::stderr()))
    }

    fn write_out(&self, text: &str) {
        if let Ok(mut out) = self.out.lock() {
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }

    /// One line on stderr (people) — in JSON mode only errors get here.
    fn note(&self, line: &str) {
        if let Ok(mut err) = self.err.lock() {
            let _ = writeln!(err, "{line}");
        }
    }

    fn event(&self, event: Value) {
        self.write_out(&format!("{event}\n"));
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The session the prompt runs in (JSON mode only: scripts continue it with `--session`).
    pub fn session(&self, id: &str, cwd: &std::path::Path, resumed: bool) {
        if self.json {
            self.event(json!({"type": "session", "sessionId": id, "cwd": cwd, "resumed": resumed}));
        }
    }

    /// One `session/update` (the `update` object, as on the wire).
    pub fn update(&self, update: &Value) {
        match text(&update["sessionUpdate"]) {
            "agent_message_chunk" => self.chunk(update, "text"),
            "agent_thought_chunk" => self.chunk(update, "thought"),
            "tool_call" => self.tool_call(update),
            "tool_call_update" => self.tool_result(update),
            // A notice (an MCP server that failed) is for the person, not the answer: stderr in both modes.
            "notice" => {
                let description = text(&update["description"]);
                let title = text(&update["title"]);
                self.note(&if description.is_empty() {
                    format!("! {title}")
                } else {
                    format!("! {title}: {description}")
                })
            }
            "plan" if self.json => self.event(json!({"type": "plan", "entries": update["entries"]})),
            "usage_update" if self.json => {
                self.event(json!({"type": "usage", "used": update["used"], "size": update["size"]}))
            }
            _ => {}
        }
    }

    fn chunk(&self, update: &Value, kind: &str) {
        let content = &update["content"];
        if content["type"] != "text" {
            return;
        }
        let message = update["messageId"].as_str();
        if self.json {
            let mut event = json!({"type": kind, "text": content["text"]});
            if let Some(id) = message {
                event["messageId"] = json!(id);
            }
            return self.event(event);
        }
        if kind != "text" {
            return;
        }
        let chunk = text(&content["text"]);
        let separator = {
            let mut state = self.state();
            let new_block = state.wrote
                && (state.tool_since_text || message.is_some() && state.last_message.as_deref() != message);
            let separator = match (new_block, state.open_line) {
                (false, _) => "",
                (true, true) => "\n\n",
                (true, false) => "\n",
            };
            state.last_message = message.map(str::to_string);
            state.tool_since_text = false;
            if !chunk.is_empty() {
                state.wrote = true;
                state.open_line = !chunk.ends_with('\n');
            }
            separator
        };
        self.write_out(&format!("{separator}{chunk}"));
    }

    fn tool_call(&self, update: &Value) {
        let id = text(&update["toolCallId"]).to_string();
        let title = text(&update["title"]).to_string();
        let end_line = {
            let mut state = self.state();
            state.titles.insert(id.clone(), title.clone());
            state.tool_since_text = true;
            std::mem::take(&mut state.open_line)
        };
        if self.json {
            let mut event = json!({"type": "tool_call", "id": id, "title": title, "kind": update["kind"]});
            if let Some(name) = update.get("name") {
                event["name"] = name.clone();
            }
            event["input"] = update.get("rawInput").cloned().unwrap_or(Value::Null);
            return self.event(event);
        }
        // End the answer's line on stdout so a terminal showing both streams stays readable.
        if end_line {
            self.write_out("\n");
        }
        self.note(&format!("• {title}"));
    }

    fn tool_result(&self, update: &Value) {
        let status = text(&update["status"]);
        if status != "completed" && status != "failed" {
            return;
        }
        let id = text(&update["toolCallId"]);
        let title = self.state().titles.get(id).cloned().unwrap_or_default();
        if !self.json {
            let mark = if status == "completed" { "✓" } else { "✗" };
            return self.note(&format!("{mark} {title}"));
        }
        let content = update["content"].as_array().cloned().unwrap_or_default();
        let raw = update.get("rawOutput").cloned().unwrap_or(Value::Null);
        let output = match raw.get("output").and_then(Value::as_str) {
            Some(output) => output.to_string(),
            None => content
                .iter()
                .filter(|c| c["type"] == "content" && c["content"]["type"] == "text")
                .map(|c| text(&c["content"]["text"]))
                .collect::<Vec<_>>()
                .join("\n"),
        };
        let diffs: Vec<Value> = content
            .iter()
            .filter(|c| c["type"] == "diff")
            .map(|c| json!({"path": c["path"], "oldText": c.get("oldText").cloned().unwrap_or(Value::Null), "newText": c["newText"]}))
            .collect();
        let mut event =
            json!({"type": "tool_result", "id": id, "title": title, "status": status, "output": output});
        if !diffs.is_empty() {
            event["diffs"] = Value::Array(diffs);
        }
        event["rawOutput"] = raw;
        self.event(event);
    }

    /// A permission ask and how `--yes` (or its absence) answered it.
    pub fn permission(&self, id: &str, title: &str, allowed: bool) {
        if self.json {
            return self.event(json!({"type": "permission", "id": id, "title": title, "allowed": allowed}));
        }
        let how = if allowed { "allowed (--yes)" } else { "rejected (pass --yes to allow)" };
        self.note(&format!("? {title}: {how}"));
    }

    /// Close the answer's line (text mode).
    fn end_text(&self) {
        if std::mem::take(&mut self.state().open_line) {
            self.write_out("\n");
        }
    }

    /// How the turn ended (`end_turn`, `cancelled`, `max_tokens`, ...).
    pub fn stop(&self, reason: &str, exit_code: u8) {
        self.end_text();
        if self.json {
            return self.event(json!({"type": "stop", "stopReason": reason, "exitCode": exit_code}));
        }
        if reason != "end_turn" {
            self.note(&format!("stopped: {reason}"));
        }
    }

    /// A notice for the person running the command (always on stderr, also in JSON mode: scripts ignore it).
    pub fn notice(&self, line: &str) {
        self.note(line);
    }

    /// The run failed. Always said on stderr; in JSON mode also as the last event.
    pub fn error(&self, message: &str, exit_code: u8) {
        self.end_text();
        if self.json {
            self.event(json!({"type": "error", "message": message, "exitCode": exit_code}));
        }
        self.note(&format!("error: {message}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn output(json: bool) -> (Output, Buffer, Buffer) {
        let (out, err) = (Buffer::default(), Buffer::default());
        (Output::new(json, Box::new(out.clone()), Box::new(err.clone())), out, err)
    }

    fn chunk(message: &str, text: &str) -> Value {
        json!({"sessionUpdate": "agent_message_chunk", "messageId": message, "content": {"type": "text", "text": text}})
    }

    fn turn() -> Vec<Value> {
        vec![
            json!({"sessionUpdate": "agent_thought_chunk", "messageId": "t1", "content": {"type": "text", "text": "hmm"}}),
            chunk("m1", "Let me "),
            chunk("m1", "look."),
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit a.txt", "kind": "edit", "name": "edit", "status": "pending", "rawInput": {"file_path": "/p/a.txt"}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "content": [{"type": "diff", "path": "/p/a.txt", "oldText": "a", "newText": "b"}], "rawOutput": {"output": "Edited a.txt"}}),
            chunk("m2", "Done.\n"),
            chunk("m3", "Also this."),
            json!({"sessionUpdate": "usage_update", "used": 120, "size": 1000}),
        ]
    }

    #[test]
    fn text_mode_separates_the_answers_around_tool_calls_and_names_each_call_on_stderr() {
        let (output, out, err) = output(false);
        for update in turn() {
            output.update(&update);
        }
        output.permission("c2", "rm -rf build", false);
        output.stop("end_turn", 0);
        assert_eq!(out.text(), "Let me look.\n\nDone.\n\nAlso this.\n");
        assert_eq!(
            err.text(),
            "• Edit a.txt\n✓ Edit a.txt\n? rm -rf build: rejected (pass --yes to allow)\n"
        );
    }

    #[test]
    fn text_mode_names_an_early_stop_and_errors_on_stderr() {
        let (output, out, err) = output(false);
        output.update(&chunk("m1", "partial"));
        output.stop("max_tokens", 3);
        output.error("the provider failed", 1);
        assert_eq!(out.text(), "partial\n");
        assert_eq!(err.text(), "stopped: max_tokens\nerror: the provider failed\n");
    }

    #[test]
    fn json_mode_writes_one_event_per_line_and_nothing_else() {
        let (output, out, err) = output(true);
        output.session("sess_1", std::path::Path::new("/p"), false);
        for update in turn() {
            output.update(&update);
        }
        output.permission("c1", "Edit a.txt", true);
        output.stop("end_turn", 0);
        let events: Vec<Value> = out.text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(
            events,
            vec![
                json!({"type": "session", "sessionId": "sess_1", "cwd": "/p", "resumed": false}),
                json!({"type": "thought", "text": "hmm", "messageId": "t1"}),
                json!({"type": "text", "text": "Let me ", "messageId": "m1"}),
                json!({"type": "text", "text": "look.", "messageId": "m1"}),
                json!({"type": "tool_call", "id": "c1", "title": "Edit a.txt", "kind": "edit", "name": "edit", "input": {"file_path": "/p/a.txt"}}),
                json!({"type": "tool_result", "id": "c1", "title": "Edit a.txt", "status": "completed", "output": "Edited a.txt", "diffs": [{"path": "/p/a.txt", "oldText": "a", "newText": "b"}], "rawOutput": {"output": "Edited a.txt"}}),
                json!({"type": "text", "text": "Done.\n", "messageId": "m2"}),
                json!({"type": "text", "text": "Also this.", "messageId": "m3"}),
                json!({"type": "usage", "used": 120, "size": 1000}),
                json!({"type": "permission", "id": "c1", "title": "Edit a.txt", "allowed": true}),
                json!({"type": "stop", "stopReason": "end_turn", "exitCode": 0}),
            ]
        );
        assert_eq!(err.text(), "");
    }

    #[test]
    fn json_mode_ends_with_the_error_event_and_says_it_on_stderr_too() {
        let (output, out, err) = output(true);
        output.error("bad key", 1);
        assert_eq!(out.text(), "{\"type\":\"error\",\"message\":\"bad key\",\"exitCode\":1}\n");
        assert_eq!(err.text(), "error: bad key\n");
    }

    #[test]
    fn a_failed_call_without_raw_output_reports_its_text_content() {
        let (output, out, _) = output(true);
        output.update(&json!({"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "failed", "content": [{"type": "content", "content": {"type": "text", "text": "boom"}}]}));
        let event: Value = serde_json::from_str(out.text().trim()).unwrap();
        assert_eq!(
            event,
            json!({"type": "tool_result", "id": "x", "title": "", "status": "failed", "output": "boom", "rawOutput": null})
        );
    }
}
