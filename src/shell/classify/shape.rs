//! What permission rules name for a command line, one shape per simple command. A plain command is named by its
//! prefix (`git commit`, `cargo test`, `ls`), which an "always" answer may remember. Anything else is named by
//! its whole normalised text (`sh -c 'curl x | python3'`), which only the very same command matches: runners
//! (shells, interpreters, wrappers, `find`, `make`, `npm exec`, …), commands given by path or with leading
//! assignments, options before a subcommand (`git -c …`), writing redirections, heredocs, and commands inside
//! substitutions or scripts. What a wrapper or script runs is named too (exactly), so a rule about it (a denied
//! `rm`) still applies.
//!
//! Owns the shapes and their quoting. The exact-match syntax of a rule belongs to `permission`.

use super::wrap::{self, Inner, is_assignment, is_runner, runs_via_subcommand};
use crate::shell::tokenize::{self, Simple, Word};

/// How a rule names one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// Covers every command that starts with these words.
    Prefix(String),
    /// Covers only this command, written exactly so.
    Exact(String),
}

const WITH_SUBCOMMANDS: &[&str] = &[
    "git",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "cargo",
    "go",
    "docker",
    "podman",
    "kubectl",
    "oc",
    "helm",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "systemctl",
    "apt",
    "apt-get",
    "brew",
    "dotnet",
    "gh",
    "terraform",
    "mvn",
    "gradle",
    "make",
    "deno",
    "rustup",
    "npx",
    "composer",
    "bundle",
    "rails",
    "mix",
];

/// Wrappers and scripts are followed this deep.
const MAX_DEPTH: usize = 4;

/// The shapes permission rules match for `line`.
pub fn shapes(line: &str) -> Vec<Shape> {
    let mut found = Vec::new();
    match tokenize::parse(line) {
        Ok(commands) => {
            for command in &commands {
                shape_of(command, false, 0, &mut found);
                if reads_code_from_the_line(command) {
                    // `echo … | sh`: the program is the rest of the line, so only the whole line names it.
                    push(&mut found, Shape::Exact(quote(line.trim())));
                }
            }
        }
        Err(_) => found.push(Shape::Exact(quote(line.trim()))),
    }
    if found.is_empty() {
        found.push(Shape::Exact(quote(line.trim())));
    }
    found
}

fn push(found: &mut Vec<Shape>, shape: Shape) {
    if !found.contains(&shape) {
        found.push(shape);
    }
}

fn shape_of(command: &Simple, inside: bool, depth: usize, found: &mut Vec<Shape>) {
    if let Some(prefix) = (!inside).then(|| prefix(command)).flatten() {
        push(found, Shape::Prefix(prefix));
        return;
    }
    push(found, Shape::Exact(render(command)));
    if depth >= MAX_DEPTH {
        return;
    }
    let words = command.args();
    match wrap::unwrap(&words) {
        Inner::Argv(inner) if inner.len() < words.len() && !inner.is_empty() => {
            shape_of(&tokenize::literal(&inner), true, depth + 1, found);
        }
        Inner::Argv(inner) => {
            for exec in wrap::find_exec(inner.get(1..).unwrap_or_default()) {
                shape_of(&tokenize::literal(&exec), true, depth + 1, found);
            }
        }
        Inner::Script(script) => match tokenize::parse(&script) {
            Ok(commands) => {
                for command in &commands {
                    shape_of(command, true, depth + 1, found);
                }
            }
            Err(_) => push(found, Shape::Exact(quote(script.trim()))),
        },
    }
}

/// Does this command take its program from the line around it (`… | sh`, `python3 <<EOF`)?
fn reads_code_from_the_line(command: &Simple) -> bool {
    let words = command.args();
    let stdin_is_file = command.redirects.iter().any(|r| r.op == "<");
    match wrap::unwrap(&words) {
        Inner::Argv(inner) => inner
            .split_first()
            .is_some_and(|(name, args)| wrap::unseen_code(name, args, stdin_is_file).is_some()),
        Inner::Script(_) => false,
    }
}

/// The prefix a plain command is named by, or `None` when it must be named exactly.
fn prefix(command: &Simple) -> Option<String> {
    if command.nested || command.redirects.iter().any(|r| writes(r) || r.op.starts_with("<<")) {
        return None;
    }
    let (first, rest) = command.argv.split_first()?;
    let name = first.text.as_str();
    let plain = |w: &Word| !w.dynamic && !w.text.is_empty() && !w.text.contains(char::is_whitespace);
    if !plain(first) || is_assignment(name) || name.contains('/') || is_runner(name) || name.starts_with('-')
    {
        return None;
    }
    if !WITH_SUBCOMMANDS.contains(&name) {
        return Some(name.to_string());
    }
    match rest.first() {
        None => Some(name.to_string()),
        Some(sub) if plain(sub) && !sub.text.starts_with('-') && !runs_via_subcommand(name, &sub.text) => {
            Some(format!("{name} {}", sub.text))
        }
        Some(_) => None,
    }
}

/// A redirection that writes somewhere other than `/dev/null` or another descriptor.
fn writes(redirect: &tokenize::Redirect) -> bool {
    let op = redirect.op.as_str();
    let target = redirect.target.text.as_str();
    let dup = matches!(op, ">&" | "<&") && (target == "-" || target.chars().all(|c| c.is_ascii_digit()));
    (op.contains('>') && !dup && target != "/dev/null") || op == "<>"
}

/// The command as one normalised line: each word quoted, then its redirections and heredoc bodies.
fn render(command: &Simple) -> String {
    let mut parts: Vec<String> = command.argv.iter().map(render_word).collect();
    for redirect in &command.redirects {
        parts.push(format!("{}{}", redirect.op, render_word(&redirect.target)));
        if let Some(body) = &redirect.body {
            parts.push(quote(&body.text));
        }
    }
    parts.join(" ")
}

/// Words with expansions in double quotes, literal words single-quoted when needed, so the two never look alike.
fn render_word(word: &Word) -> String {
    if word.dynamic {
        let escaped = word.text.replace('\\', "\\\\").replace('"', "\\\"");
        return escape_controls(&format!("\"{escaped}\""));
    }
    quote(&word.text)
}

/// `text` as one shell word: bare when it is plain, single-quoted otherwise, `$'…'` when it holds control
/// characters.
pub fn quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text.to_string();
    }
    if !text.chars().any(char::is_control) {
        return format!("'{}'", text.replace('\'', "'\\''"));
    }
    let mut out = String::from("$'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| if c.is_control() { format!("\\x{:02x}", u32::from(c)) } else { c.to_string() })
        .collect()
}
