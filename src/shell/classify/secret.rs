//! Secret files seen from the shell (seed 000 bash, widened): the names (`.env`, `.env.*`, `credentials`, `*.key`,
//! `*.pem`, SSH private keys, `.netrc`, `/proc/*/environ`, …), globs expanded against the directories the command
//! runs in (`cat .e?v`, `cat *`), symlinks resolved to what they point at, and recursive searches (`grep -r`, `rg`,
//! `git grep`, `diff -r`) over a directory that holds secret files. Whatever cannot be checked within the budget
//! counts as secret.
//!
//! Owns the names and the file-system checks. Reads directory listings only, never file contents.

use std::path::{Path, PathBuf};

use super::Host;
use super::wrap::base;
use crate::shell::tokenize::Word;
use crate::workspace::secret_files;

/// Entries a glob expansion or a recursive walk may look at before giving up (and counting as secret).
const BUDGET: usize = 20_000;

/// Names a glob is tried against to tell a pattern aimed at secrets (`.e*`, `*.pem`) from a broad one (`*`).
const SAMPLES: &[&str] = &[
    ".env",
    ".env.local",
    "credentials",
    "id_rsa",
    "id_ed25519",
    "server.key",
    "cert.pem",
    "store.jks",
    "cert.p12",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    "environ",
];
const NEUTRAL: &[&str] = &[
    "README.md",
    "main.rs",
    "notes.txt",
    "a",
    "zz",
    "Makefile",
    "x.json",
    ".gitignore",
    ".nvmrc",
    ".prettierrc",
    "index.js",
    "cargo.toml",
    "config.yml",
    "src",
    "examples",
    "data.csv",
    "x.kt",
    "package.json",
];

/// Does this path (as written) name a secret file? The one table is the file tools' (`workspace::secret_files`).
pub fn is_secret_path(path: &str) -> bool {
    secret_files::is_secret_path(Path::new(path))
}

/// The parts of a word that may name a file: each whitespace-separated piece (a word can hold a whole script for
/// `sh -c`), what follows a `:` (`HEAD:.env`) and what follows an `=` (`--env-file=.env`, `F=.env`).
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| {
        c.is_whitespace() || matches!(c, ';' | '|' | '&' | '<' | '>' | '(' | ')' | '"' | '\'' | ':')
    })
    .flat_map(|piece| [piece, piece.rsplit_once('=').map(|(_, v)| v).unwrap_or("")])
    .filter(|piece| !piece.is_empty())
}

fn note(found: &mut Vec<String>, what: String) {
    if !found.contains(&what) {
        found.push(what);
    }
}

/// Names in a line the tokenizer could not read, checked piece by piece.
pub fn in_text(text: &str, found: &mut Vec<String>) {
    for piece in pieces(text) {
        if is_secret_path(piece) {
            note(found, piece.to_string());
        }
    }
}

/// `path` as the shell would resolve it from `dir` (`~` is the home directory).
fn resolve(dir: &Path, path: &str, host: &Host) -> Option<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/") {
        return host.home.as_ref().map(|home| home.join(rest));
    }
    if path == "~" {
        return host.home.clone();
    }
    Some(dir.join(path))
}

/// What `path` finally is after symlinks, when that is a secret file.
fn secret_target(path: &Path) -> Option<PathBuf> {
    let target = std::fs::canonicalize(path).ok()?;
    is_secret_path(&target.to_string_lossy()).then_some(target)
}

/// The secret files a word names, points at through a symlink, or expands to, from any of `dirs`.
pub fn in_word(word: &Word, dirs: &[PathBuf], host: &Host, found: &mut Vec<String>) {
    for piece in pieces(&word.text) {
        if is_secret_path(piece) {
            note(found, piece.to_string());
        }
    }
    if !word.dynamic && !word.glob {
        if is_secret_path(&word.text) {
            return;
        }
        for dir in dirs {
            if let Some(target) = resolve(dir, &word.text, host).as_deref().and_then(secret_target) {
                note(found, format!("{} (links to {})", word.text, target.display()));
            }
        }
        return;
    }
    let brace = word.dynamic && !word.text.contains(['$', '`']);
    if !word.glob && !brace {
        return;
    }
    for pattern in braces(&word.pattern) {
        if aimed_at_secrets(&pattern) {
            note(found, format!("{} (matches secret file names)", word.text));
        }
        for dir in dirs {
            match expand(&pattern, dir, host) {
                Some(paths) => {
                    for path in paths {
                        let shown = path.strip_prefix(dir).unwrap_or(&path).display().to_string();
                        if is_secret_path(&path.to_string_lossy()) {
                            note(found, shown);
                        } else if let Some(target) = secret_target(&path) {
                            note(found, format!("{shown} (links to {})", target.display()));
                        }
                    }
                }
                None => note(found, format!("{} (too many files to check)", word.text)),
            }
        }
    }
}

/// Does the last component of `pattern` match secret names but not ordinary ones?
fn aimed_at_secrets(pattern: &str) -> bool {
    let last = split_components(pattern).pop().unwrap_or_default();
    if !has_meta(&last) {
        return is_secret_path(&unescape(&last));
    }
    SAMPLES.iter().any(|s| matches(&last, s)) && !NEUTRAL.iter().any(|n| matches(&last, n))
}

/// The alternatives of a brace expansion (`.{e,}nv` → `.env`, `.nv`), at most 256; escapes are kept.
pub fn braces(pattern: &str) -> Vec<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut open = None;
    let mut depth = 0;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '{' => {
                if depth == 0 {
                    open = Some(i);
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0
                    && let Some(start) = open
                {
                    let parts = split_top(&chars[start + 1..i]);
                    if parts.len() > 1 {
                        let head: String = chars[..start].iter().collect();
                        let tail: String = chars[i + 1..].iter().collect();
                        let mut out = Vec::new();
                        for part in parts {
                            for rest in braces(&format!("{head}{part}{tail}")) {
                                if out.len() < 256 {
                                    out.push(rest);
                                }
                            }
                        }
                        return out;
                    }
                    open = None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    vec![pattern.to_string()]
}

/// The comma-separated parts of a brace's inside, at its top level.
fn split_top(inside: &[char]) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut depth = 0;
    let mut i = 0;
    while i < inside.len() {
        let c = inside[i];
        match c {
            '\\' => {
                if let Some(last) = parts.last_mut() {
                    last.push('\\');
                    if let Some(next) = inside.get(i + 1) {
                        last.push(*next);
                    }
                }
                i += 2;
                continue;
            }
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(String::new());
                i += 1;
                continue;
            }
            _ => {}
        }
        if let Some(last) = parts.last_mut() {
            last.push(c);
        }
        i += 1;
    }
    parts
}

fn split_components(pattern: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '/' => parts.push(String::new()),
            '\\' => {
                if let Some(last) = parts.last_mut() {
                    last.push('\\');
                    if let Some(next) = chars.next() {
                        last.push(next);
                    }
                }
            }
            other => {
                if let Some(last) = parts.last_mut() {
                    last.push(other);
                }
            }
        }
    }
    parts
}

fn has_meta(component: &str) -> bool {
    let mut chars = component.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

fn unescape(component: &str) -> String {
    let mut out = String::new();
    let mut chars = component.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The existing paths `pattern` expands to from `dir`, or `None` past the budget. Leading dots match `*` too:
/// a shell with `dotglob` set would match them, so the check does.
fn expand(pattern: &str, dir: &Path, host: &Host) -> Option<Vec<PathBuf>> {
    let (start, rest) = if let Some(rest) = pattern.strip_prefix('/') {
        (PathBuf::from("/"), rest)
    } else if let Some(rest) = pattern.strip_prefix("~/") {
        (host.home.clone()?, rest)
    } else {
        (dir.to_path_buf(), pattern)
    };
    let mut current = vec![start];
    let mut budget = BUDGET;
    for component in split_components(rest) {
        if component.is_empty() {
            continue;
        }
        if !has_meta(&component) {
            let literal = unescape(&component);
            current = current.into_iter().map(|p| p.join(&literal)).filter(|p| p.exists()).collect();
            continue;
        }
        let mut next = Vec::new();
        for path in &current {
            let Ok(entries) = std::fs::read_dir(path) else { continue };
            for entry in entries.flatten() {
                budget = budget.checked_sub(1)?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if matches(&component, &name) {
                    next.push(path.join(name));
                }
            }
        }
        current = next;
    }
    Some(current)
}

/// Does the glob `pattern` (one path component, `\` escapes) match `name`?
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n)
}

fn match_from(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).any(|skip| match_from(&p[1..], &n[skip..])),
        Some('?') => !n.is_empty() && match_from(&p[1..], &n[1..]),
        Some('[') => match (class(&p[1..]), n.first()) {
            (Some((matcher, used)), Some(c)) => matcher(*c) && match_from(&p[1 + used..], &n[1..]),
            (Some(_), None) => false,
            (None, _) => n.first() == Some(&'[') && match_from(&p[1..], &n[1..]),
        },
        Some('\\') => match p.get(1) {
            Some(c) => n.first() == Some(c) && match_from(&p[2..], &n[1..]),
            None => n.first() == Some(&'\\') && n.len() == 1,
        },
        Some(c) => n.first() == Some(c) && match_from(&p[1..], &n[1..]),
    }
}

type ClassMatcher = Box<dyn Fn(char) -> bool>;

/// A `[...]` class after its `[`: a matcher and how many characters it used (with the `]`).
fn class(p: &[char]) -> Option<(ClassMatcher, usize)> {
    let negate = matches!(p.first(), Some('!' | '^'));
    let mut i = usize::from(negate);
    let mut ranges: Vec<(char, char)> = Vec::new();
    let mut first = true;
    loop {
        let c = *p.get(i)?;
        if c == ']' && !first {
            break;
        }
        first = false;
        let (lo, used) = if c == '\\' { (*p.get(i + 1)?, 2) } else { (c, 1) };
        i += used;
        if p.get(i) == Some(&'-') && p.get(i + 1).is_some_and(|c| *c != ']') {
            let hi = *p.get(i + 1)?;
            ranges.push((lo, hi));
            i += 2;
        } else {
            ranges.push((lo, lo));
        }
    }
    let matcher = move |c: char| ranges.iter().any(|(lo, hi)| *lo <= c && c <= *hi) != negate;
    Some((Box::new(matcher), i + 1))
}

/// How a recursive search walks: which files it reads.
struct Walk {
    hidden: bool,
    ignore_files: bool,
    follow: bool,
}

/// How `argv` searches file contents recursively, if it does.
fn search_mode(argv: &[&str]) -> Option<Walk> {
    let (&name, args) = argv.split_first()?;
    let short =
        |letter: char| args.iter().any(|a| !a.starts_with("--") && a.starts_with('-') && a.contains(letter));
    match base(name) {
        "grep" | "egrep" | "fgrep" => {
            let recursive = short('r')
                || short('R')
                || args.iter().any(|a| {
                    matches!(*a, "--recursive" | "--dereference-recursive" | "--directories=recurse")
                })
                || args.windows(2).any(|w| w[0] == "-d" && w[1] == "recurse");
            let follow = short('R') || args.contains(&"--dereference-recursive");
            recursive.then_some(Walk { hidden: true, ignore_files: false, follow })
        }
        "rg" => {
            let unrestricted: usize = args
                .iter()
                .map(|a| match *a {
                    "--unrestricted" => 1,
                    a if a.starts_with('-') && !a.starts_with("--") => a.matches('u').count(),
                    _ => 0,
                })
                .sum();
            let hidden = unrestricted >= 2 || args.iter().any(|a| matches!(*a, "--hidden" | "-."));
            let no_ignore = unrestricted >= 1 || args.iter().any(|a| a.starts_with("--no-ignore"));
            let follow = short('L') || args.contains(&"--follow");
            Some(Walk { hidden, ignore_files: !no_ignore, follow })
        }
        // Tracked files are searched even when ignored, so ignore files do not narrow the check.
        "git" => {
            let sub = args.iter().find(|a| !a.starts_with('-'))?;
            (*sub == "grep").then_some(Walk { hidden: true, ignore_files: false, follow: false })
        }
        "diff" => {
            let recursive = short('r') || args.contains(&"--recursive");
            recursive.then_some(Walk { hidden: true, ignore_files: false, follow: false })
        }
        _ => None,
    }
}

/// Secret files a recursive search (`grep -r`, `rg`, `git grep`, `diff -r`) would read, from any of `dirs`.
pub fn in_search(argv: &[&str], dirs: &[PathBuf], host: &Host, found: &mut Vec<String>) {
    let Some(walk) = search_mode(argv) else { return };
    let operands: Vec<&str> = argv[1..].iter().copied().filter(|a| !a.starts_with('-')).collect();
    for dir in dirs {
        let paths: Vec<PathBuf> = operands.iter().filter_map(|o| resolve(dir, o, host)).collect();
        let roots: Vec<PathBuf> = paths.iter().filter(|p| p.is_dir()).cloned().collect();
        let roots =
            if roots.is_empty() && !paths.iter().any(|p| p.exists()) { vec![dir.clone()] } else { roots };
        for root in roots {
            if !walk_root(&root, &walk, found) {
                note(found, format!("{} (too many files to check for secrets)", root.display()));
            }
        }
    }
}

/// Note the secret files under `root`; false when the budget ran out.
fn walk_root(root: &Path, walk: &Walk, found: &mut Vec<String>) -> bool {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(walk.ignore_files)
        .hidden(!walk.hidden)
        .follow_links(walk.follow)
        .filter_entry(|entry| entry.file_name() != ".git");
    if walk.ignore_files {
        builder.add_custom_ignore_filename(".rgignore");
    }
    let mut seen = 0usize;
    for entry in builder.build().flatten() {
        seen += 1;
        if seen > BUDGET {
            return false;
        }
        let path = entry.path();
        let shown = path.strip_prefix(root).unwrap_or(path).display().to_string();
        if is_secret_path(&path.to_string_lossy()) {
            note(found, shown);
        } else if entry.path_is_symlink()
            && let Some(target) = secret_target(path)
        {
            note(found, format!("{shown} (links to {})", target.display()));
        }
        if found.len() > 8 {
            break;
        }
    }
    true
}
