//! Every configuration snippet under `editors/` parses and starts tinycode the right way: JSON and TOML through
//! real parsers, Lua and Emacs Lisp through the syntax checkers, and the command line in each is `tinycode acp`
//! (by name or absolute path) or `npx --yes @tinycode/acp acp`. Each snippet file appears verbatim on its page,
//! every fenced block on the pages is checked too, and shell lines that call tinycode must parse.

use std::path::{Path, PathBuf};

use clap::Parser;
use serde_json::Value;

use crate::support::syntax;

/// The npx form of the command line.
const NPX: [&str; 4] = ["npx", "--yes", "@tinycode/acp", "acp"];

fn editors() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("editors")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn all_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    files(&editors(), &mut found);
    found.sort();
    found
}

/// A command line (program and arguments) is tinycode's: the binary by name or path with `acp`, or npx.
fn check_command_line(words: &[String]) -> Result<(), String> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let binary = words.first().is_some_and(|w| *w == "tinycode" || w.ends_with("/tinycode"));
    if (binary && words[1..] == ["acp"]) || words == NPX {
        Ok(())
    } else {
        Err(format!("the command line is {words:?}, not `tinycode acp` or `{}`", NPX.join(" ")))
    }
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect()
}

/// Every `command` (with its `args`) in a JSON configuration; at least one must be there.
fn json_commands(value: &Value, found: &mut Vec<Vec<String>>) {
    match value {
        Value::Object(object) => {
            if let Some(command) = object.get("command").and_then(Value::as_str) {
                let mut words: Vec<String> = if object.contains_key("args") {
                    vec![command.to_string()]
                } else {
                    command.split_whitespace().map(String::from).collect()
                };
                words.extend(strings(object.get("args").unwrap_or(&Value::Null)));
                found.push(words);
            }
            object.values().for_each(|v| json_commands(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| json_commands(v, found)),
        _ => {}
    }
}

fn check_json(text: &str) -> Result<(), String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(bindings) = value.as_array() {
        // A Zed keymap: a binding must open a tinycode thread.
        let opens = bindings.iter().flat_map(|b| b["bindings"].as_object().into_iter().flatten()).any(
            |(_, action)| action[0] == "agent::NewExternalAgentThread" && action[1]["agent"] == "tinycode",
        );
        return if opens { Ok(()) } else { Err("no key opens a tinycode thread".into()) };
    }
    let mut commands = Vec::new();
    json_commands(&value, &mut commands);
    if commands.is_empty() {
        return Err("no command in it".into());
    }
    commands.iter().try_for_each(|c| check_command_line(c))
}

/// The quoted strings of a Lua or Lisp list body (`"a", "b"` or `"a" "b"`).
fn quoted_words(body: &str) -> Vec<String> {
    regex::Regex::new(r#""([^"]*)""#).unwrap().captures_iter(body).map(|c| c[1].to_string()).collect()
}

fn check_lua(text: &str) -> Result<(), String> {
    syntax::lua(text)?;
    let command = regex::Regex::new(r#"command\s*=\s*"([^"]+)"\s*,\s*args\s*=\s*\{([^}]*)\}"#).unwrap();
    let list = regex::Regex::new(r#"default\s*=\s*\{([^}]*)\}"#).unwrap();
    let mut lines: Vec<Vec<String>> = command
        .captures_iter(text)
        .map(|c| std::iter::once(c[1].to_string()).chain(quoted_words(&c[2])).collect())
        .collect();
    lines.extend(list.captures_iter(text).map(|c| quoted_words(&c[1])));
    if lines.is_empty() {
        return Err("no command in it".into());
    }
    lines.iter().try_for_each(|l| check_command_line(l))
}

fn check_elisp(text: &str) -> Result<(), String> {
    syntax::elisp(text)?;
    let command = regex::Regex::new(r#":command\s+"([^"]+)"\s+:command-params\s+'\(([^)]*)\)"#).unwrap();
    let lines: Vec<Vec<String>> = command
        .captures_iter(text)
        .map(|c| std::iter::once(c[1].to_string()).chain(quoted_words(&c[2])).collect())
        .collect();
    if lines.is_empty() {
        return Err("no :command in it".into());
    }
    lines.iter().try_for_each(|l| check_command_line(l))
}

fn check_toml(text: &str) -> Result<(), String> {
    toml::from_str::<toml::Value>(text).map(|_| ()).map_err(|e| format!("not TOML: {e}"))
}

/// Split a shell line into words (single and double quotes, no expansions).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        words.push(word);
    }
    words
}

/// Shell lines: each command calling `tinycode` must parse, each `acpx --agent` must start tinycode.
fn check_shell(text: &str) -> Result<(), String> {
    for line in text.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
        for segment in line.split(['|', ';']).map(str::trim) {
            let words = shell_words(segment);
            match words.first().map(String::as_str) {
                Some("tinycode") => {
                    tinycode::cli::Cli::try_parse_from(&words).map_err(|e| format!("`{segment}`: {e}"))?;
                }
                Some("acpx") => {
                    if let Some(at) = words.iter().position(|w| w == "--agent") {
                        check_command_line(&shell_words(&words[at + 1]))?;
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn check_file(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).unwrap();
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => check_json(&text),
        Some("lua") => check_lua(&text),
        Some("el") => check_elisp(&text),
        Some("toml") => check_toml(&text),
        Some("md") => Ok(()),
        other => Err(format!("a snippet type the test does not know: {other:?}")),
    }
}

/// The fenced blocks of a Markdown page: (info string, body).
fn fenced_blocks(page: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else { continue };
        let body: Vec<&str> = lines.by_ref().take_while(|l| !l.trim_start().starts_with("```")).collect();
        blocks.push((info.trim().to_string(), body.join("\n") + "\n"));
    }
    blocks
}

fn check_block(info: &str, body: &str) -> Result<(), String> {
    match info {
        "json" => check_json(body),
        "lua" => check_lua(body),
        "elisp" => check_elisp(body),
        "toml" => check_toml(body),
        "sh" => check_shell(body),
        other => Err(format!("a code block type the test does not know: {other:?}")),
    }
}

#[test]
fn every_editor_snippet_parses_and_starts_tinycode_acp() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in all_files() {
        if let Err(e) = check_file(&path) {
            failures.push(format!("{}: {e}", path.display()));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 16, "only {checked} files under editors/");
}

#[test]
fn every_code_block_on_the_editor_pages_is_checked() {
    let mut failures = Vec::new();
    let mut blocks = 0;
    for page in all_files().into_iter().filter(|p| p.extension().is_some_and(|e| e == "md")) {
        for (info, body) in fenced_blocks(&std::fs::read_to_string(&page).unwrap()) {
            blocks += 1;
            if let Err(e) = check_block(&info, &body) {
                failures.push(format!("{} ({info} block): {e}\n{body}", page.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(blocks >= 12, "only {blocks} code blocks");
}

#[test]
fn each_snippet_file_is_shown_verbatim_on_its_page() {
    for path in all_files().into_iter().filter(|p| p.extension().is_some_and(|e| e != "md")) {
        let page = std::fs::read_to_string(path.parent().unwrap().join("README.md")).unwrap();
        let snippet = std::fs::read_to_string(&path).unwrap();
        assert!(page.contains(&snippet), "{} is not on its page verbatim", path.display());
    }
}

#[test]
fn every_client_the_issue_names_has_a_page() {
    for client in ["zed", "jetbrains", "neovim", "emacs", "vscode", "headless"] {
        let page = editors().join(client).join("README.md");
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert!(text.contains("## Smoke checklist"), "{client} has no smoke checklist");
        assert!(text.contains("auth"), "{client} says nothing about auth");
    }
}

#[test]
fn the_checks_reject_a_wrong_command_line_and_broken_syntax() {
    let wrong = r#"{"agent_servers": {"tinycode": {"command": "tinycode", "args": ["serve"]}}}"#;
    assert!(check_json(wrong).unwrap_err().contains("not `tinycode acp`"));
    assert!(
        check_json(r#"{"agent_servers": {"tinycode": {"command": "tinycode", "args": ["acp"],}}}"#).is_err()
    );
    assert!(check_lua("acp_providers = { t = { command = \"tinycode\", args = { \"acp\" } }").is_err());
    assert!(check_lua("x = { command = \"codex\", args = { \"acp\" } }").is_err());
    assert!(check_elisp("(acp-make-client :command \"tinycode\" :command-params '(\"serve\"))").is_err());
    assert!(check_shell("tinycode run --moddel x hi").is_err());
    assert!(check_shell("acpx --agent 'tinycode serve' exec hi").is_err());
    assert!(check_shell("git diff | tinycode run \"review this diff:\" -").is_ok());
    assert_eq!(shell_words("a 'b c' \"\" d"), ["a", "b c", "", "d"]);
}
