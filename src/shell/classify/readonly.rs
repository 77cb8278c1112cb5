//! Is one simple command read-only? Only when every part of it is known to be: a bare command name found on the
//! system PATH (no `/`, no PATH entry that is relative or inside the project), no environment assignment in front
//! but a short harmless list, every option on that command's safe list in `allow`, no expansion anywhere, no
//! redirection that writes, and for git a repository (and submodules) whose own configuration and hooks run
//! nothing, as git itself reports them (`workspace::git_programs`).
//!
//! Owns applying the allow-list. "Cannot tell" is always "not read-only".

use std::path::Path;

use super::Host;
use super::allow::{self, Operands, Spec};
use super::wrap::is_assignment;
use crate::shell::tokenize::{Redirect, Simple};
use crate::workspace::git_programs;

/// Environment assignments that may precede a read-only command: locale, time zone and output width or colour.
const HARMLESS_ASSIGNMENTS: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
    "NO_COLOR",
    "CLICOLOR",
    "COLUMNS",
];

/// Is `command` read-only? `after_cd` when an earlier command of the line changed directory.
pub fn command(command: &Simple, host: &Host, after_cd: bool) -> bool {
    if command.argv.iter().any(|w| w.dynamic) || !command.redirects.iter().all(redirect_reads) {
        return false;
    }
    let words = command.args();
    let assignments = words.iter().take_while(|w| is_assignment(w)).count();
    let harmless = words[..assignments]
        .iter()
        .all(|w| w.split_once('=').is_some_and(|(name, _)| HARMLESS_ASSIGNMENTS.contains(&name)));
    if !harmless {
        return false;
    }
    let Some((&name, args)) = words[assignments..].split_first() else { return true };
    let Some(spec) = allow::lookup(name) else { return false };
    if !spec.builtin && !on_system_path(name, host) {
        return false;
    }
    if name == "git" && (after_cd || !fits(spec, args) || !git_programs::runs_nothing(&host.cwd)) {
        return false;
    }
    fits(spec, args)
}

/// Reading redirections only: input from a file, a heredoc or here-string without expansions, fd duplication,
/// and output to `/dev/null` or the command's own streams.
fn redirect_reads(redirect: &Redirect) -> bool {
    let target = &redirect.target;
    if target.dynamic {
        return false;
    }
    match redirect.op.as_str() {
        "<" | "<<<" => true,
        "<<" | "<<-" => redirect.body.as_ref().is_none_or(|b| !b.dynamic),
        ">&" | "<&" => target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit()),
        ">" | ">>" | "&>" | "&>>" | ">|" => {
            matches!(target.text.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr")
        }
        _ => false,
    }
}

/// Is `name` found on PATH in a system directory, before any relative or in-project entry?
fn on_system_path(name: &str, host: &Host) -> bool {
    let Some(path) = &host.path else { return false };
    for dir in std::env::split_paths(path) {
        if dir.as_os_str().is_empty() || dir.is_relative() || dir.starts_with(&host.cwd) {
            return false;
        }
        if is_executable(&dir.join(name)) {
            return true;
        }
    }
    false
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// How an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Nothing,
    Value,
    Optional,
}

fn option(spec: &Spec, name: &str) -> Option<Takes> {
    spec.options.iter().flat_map(|group| group.split_whitespace()).find_map(|o| {
        if o == name {
            Some(Takes::Nothing)
        } else if o.strip_suffix('=') == Some(name) {
            Some(Takes::Value)
        } else if o.strip_suffix('?') == Some(name) {
            Some(Takes::Optional)
        } else {
            None
        }
    })
}

fn numeric(spec: &Spec) -> bool {
    option(spec, "-#").is_some()
}

/// Do `args` fit `spec`: known options only, operands within bounds, subcommands read-only too?
pub fn fits(spec: &Spec, args: &[&str]) -> bool {
    if spec.plain {
        return spec.check.is_none_or(|check| check(args, args));
    }
    let mut operands: Vec<&str> = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let arg = args[i];
        let is_option = !only_operands && arg.starts_with('-') && arg != "-";
        if !is_option {
            if !spec.subcommands.is_empty() {
                return subcommand(spec, arg, &args[i + 1..]);
            }
            operands.push(arg);
            i += 1;
            continue;
        }
        if arg == "--" {
            only_operands = true;
            i += 1;
            continue;
        }
        match consume(spec, args, i) {
            Some(next) => i = next,
            None => return false,
        }
    }
    if !spec.subcommands.is_empty() && !spec.bare {
        return false;
    }
    let within = match spec.operands {
        Operands::Any => true,
        Operands::AtMost(n) => operands.len() <= n,
    };
    within && spec.check.is_none_or(|check| check(args, &operands))
}

fn subcommand(spec: &Spec, name: &str, rest: &[&str]) -> bool {
    spec.subcommands.iter().find(|s| s.name == name).is_some_and(|sub| fits(sub, rest))
}

/// The option at `args[i]`: the index after it and its value, or `None` when it is not on the list.
fn consume(spec: &Spec, args: &[&str], i: usize) -> Option<usize> {
    let arg = args[i];
    let takes_next = |takes: Takes, attached: bool| match takes {
        Takes::Nothing => (!attached).then_some(i + 1),
        Takes::Value if attached => Some(i + 1),
        Takes::Value => (i + 1 < args.len()).then_some(i + 2),
        Takes::Optional => Some(i + 1),
    };
    if let Some(takes) = option(spec, arg) {
        return takes_next(takes, false);
    }
    if spec.word_options {
        return None;
    }
    if arg.starts_with("--") {
        let (name, _) = arg.split_once('=')?;
        return takes_next(option(spec, name)?, true);
    }
    let letters: Vec<char> = arg.chars().skip(1).collect();
    if numeric(spec) && letters.iter().all(char::is_ascii_digit) {
        return Some(i + 1);
    }
    for (k, letter) in letters.iter().enumerate() {
        let attached = k + 1 < letters.len();
        match option(spec, &format!("-{letter}"))? {
            Takes::Nothing => continue,
            takes => return takes_next(takes, attached),
        }
    }
    Some(i + 1)
}
