//! What project trust is bound to besides the text of the gated settings: the bytes of the project files those
//! settings name (the script a formatter, MCP server, language server or command line runs), and the repository
//! at the project path (the identity of its `.git`, so another repository unpacked at a trusted path does not
//! inherit the trust). Read inertly: file metadata and file bytes only, never a program the repository controls.
//!
//! Owns finding the named files and the repository identity. Deciding what is trusted belongs to `trust`.

use std::path::{Component, Path};

use toml::Value;

use crate::workspace::regular;

/// The gated settings whose values name programs and their arguments.
pub const RUNS: &[&str] = &["formatters", "mcp", "lsp", "commands", "hooks"];
/// Words looked at per project file, at most (a settings file is small; this bounds a hostile one).
const MAX_WORDS: usize = 512;
/// Longest word taken for a path.
const MAX_WORD: usize = 1024;
/// Bytes of a named file that are hashed; a larger file is hashed up to here plus its size.
const MAX_HASHED: u64 = 16 * 1024 * 1024;

/// What trust is bound to, each as text that changes when the thing changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// `sha256:` of the named files' state (relative path and what is there: bytes, a link out, nothing).
    pub files: String,
    /// The repository at the project path (see [`repository`]).
    pub repository: String,
    /// The relative paths of the named files that exist, for the ask.
    pub named: Vec<String>,
}

impl Binding {
    /// Read what the gated settings of `project` (canonical) are bound to.
    pub fn read(project: &Path, gated: &[(String, Value)]) -> Self {
        let words = words(gated);
        let mut state = String::new();
        let mut named = Vec::new();
        for word in &words {
            let Some(what) = state_of(project, word) else { continue };
            if what != "absent" {
                named.push(word.clone());
            }
            state.push_str(&format!("{word}\0{what}\n"));
        }
        Self { files: sha256(state.as_bytes()), repository: repository(project), named }
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The words of the settings in [`RUNS`] that could be relative paths, normalized, sorted, once each.
fn words(gated: &[(String, Value)]) -> Vec<String> {
    let mut strings = Vec::new();
    for (key, value) in gated {
        if RUNS.contains(&key.split('.').next().unwrap_or(key)) {
            collect(value, &mut strings);
        }
    }
    let mut words: Vec<String> = strings
        .iter()
        .flat_map(|s| s.split_whitespace())
        .map(|w| w.trim_matches(|c| matches!(c, '"' | '\'' | ';' | '(' | ')')))
        .map(|w| w.split_once('=').filter(|_| w.starts_with('-')).map_or(w, |(_, v)| v))
        .filter_map(relative)
        .collect();
    words.sort();
    words.dedup();
    words.truncate(MAX_WORDS);
    words
}

fn collect(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        Value::Table(table) => table.values().for_each(|v| collect(v, out)),
        _ => {}
    }
}

/// `word` as a path inside the project (`./x` and `x` alike), when it is one: relative, no `..`, not an option.
fn relative(word: &str) -> Option<String> {
    if word.is_empty() || word.len() > MAX_WORD || word.starts_with('-') || word.contains(['$', '`', '\0']) {
        return None;
    }
    let path = Path::new(word);
    let parts: Option<Vec<&str>> = path
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect();
    parts.filter(|p| !p.is_empty()).map(|p| p.join("/"))
}

/// What is at `word` in the project: `absent`, `dir`, `outside:<path>` (a link out of the project),
/// `special`, or the file's `sha256:`. `None` when it cannot be told (then it is not bound).
fn state_of(project: &Path, word: &str) -> Option<String> {
    let path = project.join(word);
    let real = match std::fs::canonicalize(&path) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some("absent".into()),
        Err(_) => return None,
    };
    if !real.starts_with(project) {
        return Some(format!("outside:{}", real.display()));
    }
    if real.is_dir() {
        return Some("dir".into());
    }
    match regular::read(&real, MAX_HASHED) {
        Ok(read) if read.complete => Some(sha256(&read.bytes)),
        Ok(read) => Some(format!("{}+{}", sha256(&read.bytes), read.meta.len())),
        Err(regular::OpenError::NotRegular(_)) => Some("special".into()),
        Err(_) => None,
    }
}

/// The repository at `project`: the identity of the nearest `.git` at or above it (device, inode and birth time
/// of the entry itself, never followed or read), else of the project directory. Another repository unpacked or
/// cloned at the path has another `.git`; everything git does keeps the one it has.
pub fn repository(project: &Path) -> String {
    for dir in project.ancestors() {
        if let Ok(meta) = std::fs::symlink_metadata(dir.join(".git")) {
            return format!("git:{}:{}", relative_to(dir, project), identity(&meta));
        }
    }
    match std::fs::metadata(project) {
        Ok(meta) => format!("dir:{}", identity(&meta)),
        Err(_) => "unknown".into(),
    }
}

/// How many levels up `dir` is from `project` (`.` for the project itself).
fn relative_to(dir: &Path, project: &Path) -> String {
    let up = project.components().count().saturating_sub(dir.components().count());
    if up == 0 { ".".into() } else { vec![".."; up].join("/") }
}

fn identity(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    let born = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{}:{}:{born}", meta.dev(), meta.ino())
}

/// The files of `binding` as shown in the ask.
pub fn shown(named: &[String]) -> String {
    named.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gated(text: &str) -> Vec<(String, Value)> {
        super::super::split(&toml::from_str(text).unwrap()).1
    }

    #[test]
    fn the_words_of_settings_that_run_programs_are_read_as_project_paths_and_prose_is_not() {
        let words = words(&gated(
            "[formatters]\nrs = [\"sh\", \"./fmt.sh\", \"--config=tools/fmt.toml\", \"$FILE\"]\n\
             [mcp.local]\ncommand = \"node\"\nargs = [\"../up.js\", \"/abs/server.js\", \"srv/index.js\"]\n\
             [commands]\ndeploy = \"bash scripts/deploy.sh --prod\"\n\
             [agents.x]\nprompt = \"read notes.md please\"\n",
        ));
        assert_eq!(
            words,
            ["bash", "fmt.sh", "node", "scripts/deploy.sh", "sh", "srv/index.js", "tools/fmt.toml"]
        );
    }

    #[test]
    fn a_named_script_binds_by_its_bytes_and_a_link_out_by_where_it_leads() {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap().join("p");
        std::fs::create_dir_all(&project).unwrap();
        let settings = gated("[formatters]\ntxt = [\"sh\", \"fmt.sh\"]\n");
        let absent = Binding::read(&project, &settings);
        std::fs::write(project.join("fmt.sh"), "exit 0\n").unwrap();
        let first = Binding::read(&project, &settings);
        assert_ne!(absent.files, first.files, "a script that appears changes the binding");
        assert_eq!(first.named, ["fmt.sh"]);
        assert_eq!(Binding::read(&project, &settings), first, "the same bytes, the same binding");
        std::fs::write(project.join("fmt.sh"), "touch pwned\n").unwrap();
        let changed = Binding::read(&project, &settings);
        assert_ne!(changed.files, first.files);
        assert_eq!(changed.repository, first.repository);
        std::fs::remove_file(project.join("fmt.sh")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere.sh"), project.join("fmt.sh")).unwrap();
        std::fs::write(dir.path().join("elsewhere.sh"), "exit 0\n").unwrap();
        assert_ne!(Binding::read(&project, &settings).files, first.files);
    }

    #[test]
    fn another_git_directory_at_the_same_path_is_another_repository() {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        let plain = repository(&project);
        assert!(plain.starts_with("dir:"), "{plain}");
        std::fs::create_dir(project.join(".git")).unwrap();
        let first = repository(&project);
        assert!(first.starts_with("git:.:"), "{first}");
        std::fs::create_dir(project.join("sub")).unwrap();
        assert_eq!(repository(&project.join("sub")), first.replacen("git:.:", "git:..:", 1));
        std::fs::write(project.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(repository(&project), first, "what git writes inside keeps the identity");
        std::fs::rename(project.join(".git"), project.join("old")).unwrap();
        std::fs::create_dir(project.join(".git")).unwrap();
        assert_ne!(repository(&project), first);
    }
}
