//! Project trust: `<project>/.tinycode/config.toml` arrives with whatever repository the user opens, so the
//! settings in it that can run code, send data elsewhere or widen permissions are ignored until the user trusts
//! that project. This module owns which settings are harmless (an allow-list: everything else needs trust, so
//! a new setting is gated by default), what an untrusted file wants (shown in the ask), the trust record in the
//! user's config directory (`trusted.toml`, keyed by the canonical project path, holding a fingerprint of the
//! trusted settings, of the files they name and of the repository at the path ([`binding`]), so a change to any
//! of them asks again), and this process's answers ("not now" is not asked again).
//!
//! Reads and writes only the trust record; never the project. Must not ask anyone (the session layer does).

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Deserialize;
use toml::{Table, Value};

use super::Sources;

pub mod binding;

use binding::Binding;

/// Settings a project file may set without trust, as dotted keys; an entry covers everything below it.
/// They change limits and lists only: nothing in them runs, reaches a new host or allows anything.
pub const HARMLESS: &[&str] = &[
    "models",
    "catalogue",
    "context_window",
    "max_diff_bytes",
    "max_output_tokens",
    "max_turn_requests",
    "stream_idle_timeout_ms",
    "connect_timeout_ms",
    "response_timeout_ms",
    "retry",
    "shell.client_terminals",
    // Scheduled jobs are on by default and "off" anywhere wins, so a project can only turn them off.
    "cron",
    "edit_mode",
    "mcp_startup_timeout_ms",
    "mcp_call_timeout_ms",
];

/// What each setting that needs trust lets a project do, as the ask words it. Settings of features not built yet
/// are listed so they plug into the same gate; a setting missing here still needs trust (see [`HARMLESS`]).
pub const GATED: &[(&str, &str)] = &[
    ("base_url", "send your prompts and code to this server (your own API key is not sent there)"),
    ("api_key", "use its own API key"),
    ("provider", "choose the model provider"),
    ("providers", "add model providers (where your prompts and code are sent, with which key)"),
    ("model", "choose the model new sessions use (with a router, this also picks who receives your code)"),
    ("default_mode", "choose the mode new sessions start in (`yolo` and `accept-edits` ask less)"),
    ("permission", "add permission rules (they can let commands and edits run without asking)"),
    ("formatters", "run these commands after every file the agent writes"),
    ("data_dir", "keep tinycode's task output in this directory"),
    ("mcp", "start these MCP servers (programs on your machine, or services it sends data to)"),
    ("lsp", "start these language servers"),
    (
        "commands",
        "run these shell lines when you use the project's slash command (each line still asks first)",
    ),
    ("hooks", "run these hooks"),
    ("agents", "define subagents: their prompts (text from the repository) and the models they use"),
    (
        "instructions",
        "load these files from outside the project into the prompt (the model may send them on)",
    ),
    ("tools", "replace what the model is told about this tool (prompt text from the repository)"),
];

/// Why an unlisted setting is gated.
const UNCLASSIFIED: &str = "change a setting that is not known to be harmless";
/// Values longer than this are cut in the ask.
const MAX_SHOWN_VALUE: usize = 200;
/// The record's file name in the user's tinycode config directory.
pub const RECORD_FILE: &str = "trusted.toml";

/// A trust record that cannot be read or written. Handled by whoever recorded the answer: the session layer logs
/// it (the trust still holds for this process), `tinycode trust` prints it.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("there is no user config directory to keep the trust record in (set XDG_CONFIG_HOME or HOME)")]
    NoHome,
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// Is `key` (dotted) a harmless setting?
pub fn is_harmless(key: &str) -> bool {
    HARMLESS.iter().any(|h| key == *h || key.strip_prefix(h).is_some_and(|rest| rest.starts_with('.')))
}

/// What the ask says a gated setting does.
pub fn why(key: &str) -> &'static str {
    let top = key.split('.').next().unwrap_or(key);
    GATED.iter().find(|(k, _)| *k == top).map(|(_, why)| *why).unwrap_or(UNCLASSIFIED)
}

/// Split a project file into its harmless part and its gated settings (dotted key and value, sorted).
pub fn split(table: &Table) -> (Table, Vec<(String, Value)>) {
    let mut gated = Vec::new();
    let harmless = split_under(table, "", &mut gated);
    (harmless, gated)
}

/// Does an `instructions` entry name a file inside the project (relative, no `..`, no `~`)? Such entries are
/// harmless: the project's own files. Symlinks are checked when the files are read.
pub fn inside_project(entry: &str) -> bool {
    let path = Path::new(entry);
    !entry.starts_with('~')
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
}

/// `instructions`: the entries inside the project are harmless, the others gated.
fn split_instructions(value: &Value, harmless: &mut Table, gated: &mut Vec<(String, Value)>) {
    let Value::Array(entries) = value else {
        gated.push(("instructions".into(), value.clone()));
        return;
    };
    let (inside, outside): (Vec<Value>, Vec<Value>) =
        entries.iter().cloned().partition(|e| e.as_str().is_some_and(inside_project));
    if !inside.is_empty() {
        harmless.insert("instructions".into(), Value::Array(inside));
    }
    if !outside.is_empty() {
        gated.push(("instructions".into(), Value::Array(outside)));
    }
}

fn split_under(table: &Table, prefix: &str, gated: &mut Vec<(String, Value)>) -> Table {
    let mut harmless = Table::new();
    for (key, value) in table {
        if prefix.is_empty() && key == "instructions" {
            split_instructions(value, &mut harmless, gated);
            continue;
        }
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        let below = format!("{path}.");
        if is_harmless(&path) {
            harmless.insert(key.clone(), value.clone());
        } else if let (Value::Table(inner), true) = (value, HARMLESS.iter().any(|h| h.starts_with(&below))) {
            let part = split_under(inner, &path, gated);
            if !part.is_empty() {
                harmless.insert(key.clone(), Value::Table(part));
            }
        } else {
            gated.push((path, value.clone()));
        }
    }
    harmless
}

/// One gated setting an untrusted project file sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    pub key: String,
    /// The value as shown (keys are hidden, long values cut).
    pub value: String,
    pub why: &'static str,
}

/// What an untrusted project file wants: shown in the ask, and the answer is recorded against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The canonical project directory.
    pub project: PathBuf,
    pub file: PathBuf,
    /// `sha256:<hex>` of the gated settings, the files they name and the repository: trust covers these, and a
    /// change to any of them asks again.
    pub fingerprint: String,
    /// `sha256:<hex>` of the gated settings' text alone.
    pub settings: String,
    /// The files the settings name and the repository, as they are now.
    pub binding: Binding,
    pub wants: Vec<Want>,
    /// The user trusted other settings of this project before.
    pub changed: bool,
    /// What differs from what the user trusted (with `changed`).
    pub again: Option<Again>,
}

/// Why a project the user trusted is asked about again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// The gated settings changed.
    Settings,
    /// The settings are the same but a file they name (a script they run) changed.
    Files,
    /// Another repository is at the trusted path.
    Repository,
    /// The record is from a tinycode that bound trust to the settings' text only.
    OldRecord,
}

fn shown(key: &str, value: &Value) -> String {
    if key.split('.').next_back() == Some("api_key") {
        return "(hidden)".into();
    }
    let text = serde_json::to_string(value).unwrap_or_default();
    if text.len() <= MAX_SHOWN_VALUE {
        return text;
    }
    format!("{}…", &text[..text.floor_char_boundary(MAX_SHOWN_VALUE)])
}

/// The fingerprint of a set of gated settings (their text alone).
pub fn fingerprint(gated: &[(String, Value)]) -> String {
    binding::sha256(serde_json::to_string(gated).unwrap_or_default().as_bytes())
}

/// The fingerprint trust is recorded under: the settings' text, the files they name and the repository.
fn bound(settings: &str, binding: &Binding) -> String {
    binding::sha256(format!("{settings}\n{}\n{}", binding.files, binding.repository).as_bytes())
}

impl Request {
    pub fn new(project: &Path, file: &Path, gated: &[(String, Value)]) -> Self {
        let wants = gated
            .iter()
            .map(|(key, value)| Want { key: key.clone(), value: shown(key, value), why: why(key) })
            .collect();
        let (settings, binding) = (fingerprint(gated), Binding::read(project, gated));
        Self {
            project: project.to_path_buf(),
            file: file.to_path_buf(),
            fingerprint: bound(&settings, &binding),
            settings,
            binding,
            wants,
            changed: false,
            again: None,
        }
    }

    /// The question's title.
    pub fn title(&self) -> String {
        match (self.changed, self.again) {
            (true, Some(Again::Repository)) => {
                format!(
                    "Trust the project {}? Another repository is at this path now.",
                    self.project.display()
                )
            }
            (true, _) => format!("Trust the changed settings of {}?", self.project.display()),
            (false, _) => format!("Trust the project {}?", self.project.display()),
        }
    }

    fn intro(&self) -> String {
        if !self.changed {
            return "wants to:".into();
        }
        match self.again {
            Some(Again::Files) => format!(
                "is as you trusted it, but a file its settings run changed since ({}). It wants to:",
                binding::shown(&self.binding.named)
            ),
            Some(Again::Repository) => {
                "is at a path you trusted, but in another repository than the one you \
                 trusted there (it was replaced or unpacked anew). It wants to:"
                    .into()
            }
            Some(Again::OldRecord) => {
                "was trusted with an older tinycode, whose trust did not cover the files \
                 the settings run or the repository: please confirm once more. It wants to:"
                    .into()
            }
            Some(Again::Settings) | None => "changed since you trusted this project. It wants to:".into(),
        }
    }

    /// What the file wants, one Markdown line per setting, and what happens until the user trusts it.
    pub fn summary(&self) -> String {
        let mut text = format!("{} {}\n", self.file.display(), self.intro());
        for want in &self.wants {
            text.push_str(&format!("- {}: `{} = {}`\n", want.why, want.key, want.value));
        }
        if !self.binding.named.is_empty() {
            text.push_str(&format!(
                "\nTrust covers the files these settings name as they are now ({}): when they change, tinycode \
                 asks again.\n",
                binding::shown(&self.binding.named)
            ));
        }
        text.push_str(
            "\nUntil you trust the project these settings are ignored; the rest of the file applies. A repository \
             you did not write can use them to run commands or send your code elsewhere.",
        );
        text
    }
}

impl Request {
    /// What a run that cannot ask says instead: what was ignored and how to trust the project.
    pub fn ignored(&self) -> String {
        let mut text = format!("Ignoring settings in {} that need your trust:\n", self.file.display());
        for want in &self.wants {
            text.push_str(&format!("  {} = {} ({})\n", want.key, want.value, want.why));
        }
        text.push_str(&format!(
            "To apply them, trust the project: tinycode trust {}",
            self.project.display()
        ));
        text
    }
}

/// `tinycode trust [--revoke] [PATH]`: trust the settings the project file at `path` sets now (or stop trusting
/// the project). A project that sets nothing needing trust is trusted as a whole (the user's formatters and
/// language servers run only in trusted projects). Returns what to tell the user.
pub fn command(sources: &Sources, path: &Path, revoke: bool) -> Result<String, String> {
    let project = std::fs::canonicalize(path).map_err(|e| format!("cannot use {}: {e}", path.display()))?;
    if !project.is_dir() {
        return Err(format!("{} is not a directory", project.display()));
    }
    let trust = Trust::new(sources);
    if revoke {
        return match trust.revoke(&project).map_err(|e| e.to_string())? {
            true => Ok(format!(
                "No longer trusting {}: its settings that need trust are ignored again.",
                project.display()
            )),
            false => Ok(format!("{} was not trusted.", project.display())),
        };
    }
    let loaded = super::Config::load(sources, &project, &trust).map_err(|e| e.to_string())?;
    let Some(request) = loaded.untrusted else {
        let file = super::Config::project_file(&project);
        let reach = crate::workspace::project_file::Scope::within(&crate::extensions::project_root(&project));
        let text = super::read_optional(&file, &reach).ok().flatten().unwrap_or_default();
        let gated = toml::from_str::<Table>(&text).map(|t| split(&t).1).unwrap_or_default();
        let (descriptions, _) =
            super::tools::read_dir(&project.join(".tinycode").join(super::tools::TOOLS_DIR), &reach);
        if gated.is_empty() && descriptions.is_empty() {
            // Nothing of its own to trust, but the user's formatters and language servers wait for trust there.
            trust.grant_project(&project).map_err(|e| e.to_string())?;
            return Ok(format!(
                "Trusted {}: your formatters and language servers now run in it.",
                project.display()
            ));
        }
        return Ok(format!("{} is already trusted with its current settings.", project.display()));
    };
    trust.grant(&request).map_err(|e| e.to_string())?;
    let mut text =
        format!("Trusted {}. These settings of {} now apply:\n", project.display(), request.file.display());
    for want in &request.wants {
        text.push_str(&format!("  {} = {}\n", want.key, want.value));
    }
    text.push_str(
        "When they, the files they run or the repository at this path change, tinycode asks again.",
    );
    Ok(text)
}

/// The trust record as stored.
#[derive(Debug, Default, Deserialize)]
struct Record {
    #[serde(default)]
    projects: BTreeMap<String, Entry>,
}

/// One trusted project. `settings` is what is compared; the parts say what changed when it differs (entries
/// written before trust covered files and repositories have none, and are asked about again).
#[derive(Debug, Clone, Deserialize)]
struct Entry {
    settings: String,
    text: Option<String>,
    files: Option<String>,
    repository: Option<String>,
    trusted_at: Option<String>,
}

/// A TOML basic string.
pub(super) fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Record {
    fn read(path: &Path) -> Result<Record, TrustError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Record::default()),
            Err(e) => return Err(TrustError::Read { path: path.into(), message: e.to_string() }),
        };
        toml::from_str(&text).map_err(|e| TrustError::Read { path: path.into(), message: e.to_string() })
    }

    fn render(&self) -> String {
        let mut text = String::from(
            "# Projects whose .tinycode/config.toml you trust, written by tinycode (`tinycode trust [--revoke] PATH`).\n\
             # `settings` fingerprints the settings you trusted, the files they run (`files`) and the repository at\n\
             # the path (`repository`): when any of them changes, tinycode asks again.\n",
        );
        for (project, entry) in &self.projects {
            text.push_str(&format!(
                "\n[projects.{}]\nsettings = {}\n",
                quoted(project),
                quoted(&entry.settings)
            ));
            for (name, value) in
                [("text", &entry.text), ("files", &entry.files), ("repository", &entry.repository)]
            {
                if let Some(value) = value {
                    text.push_str(&format!("{name} = {}\n", quoted(value)));
                }
            }
            if let Some(at) = &entry.trusted_at {
                text.push_str(&format!("trusted_at = {}\n", quoted(at)));
            }
        }
        text
    }

    /// Replace the file atomically, readable by the user only.
    fn write(&self, path: &Path) -> Result<(), TrustError> {
        let failed = |source| TrustError::Write { path: path.into(), source };
        let dir = path.parent().ok_or_else(|| failed(std::io::ErrorKind::InvalidInput.into()))?;
        std::fs::create_dir_all(dir).map_err(failed)?;
        let temp = dir.join(format!(".{RECORD_FILE}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let written = (|| {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&temp)?;
            file.write_all(self.render().as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map_err(failed)
    }
}

/// Whether a project's gated settings are trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Trusted,
    /// The user trusted other settings of this project (they changed since).
    Changed,
    Unknown,
}

type Key = (PathBuf, String);

fn key(request: &Request) -> Key {
    (request.project.clone(), request.fingerprint.clone())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Trust decisions: the user's record plus this process's answers. One per process (the session manager's).
pub struct Trust {
    record: Option<PathBuf>,
    /// Held while the record is read, changed and written, so two answers in this process never lose one.
    writing: Mutex<()>,
    trusted: Mutex<HashSet<Key>>,
    declined: Mutex<HashSet<Key>>,
    asking: Mutex<HashSet<Key>>,
}

impl Trust {
    pub fn new(sources: &Sources) -> Self {
        Self {
            record: sources.user_config_home.as_ref().map(|home| home.join("tinycode").join(RECORD_FILE)),
            writing: Mutex::default(),
            trusted: Mutex::default(),
            declined: Mutex::default(),
            asking: Mutex::default(),
        }
    }

    /// The record file, when there is a user config directory.
    pub fn record_path(&self) -> Option<&Path> {
        self.record.as_deref()
    }

    fn entry(&self, project: &Path) -> Option<Entry> {
        let path = self.record.as_ref()?;
        match Record::read(path) {
            Ok(mut record) => record.projects.remove(&project.display().to_string()),
            Err(e) => {
                // Fail closed: an unreadable record trusts nothing.
                tracing::warn!(error = %e, "ignoring the project trust record");
                None
            }
        }
    }

    /// How the user stands on `fingerprint` of `project` (canonical).
    pub fn standing(&self, project: &Path, fingerprint: &str) -> Standing {
        let key = (project.to_path_buf(), fingerprint.to_string());
        if lock(&self.trusted).contains(&key) {
            return Standing::Trusted;
        }
        match self.entry(project) {
            Some(entry) if entry.settings == fingerprint => Standing::Trusted,
            Some(_) => Standing::Changed,
            None => Standing::Unknown,
        }
    }

    /// Has the user trusted `project` (canonical), with whatever settings, in this process or in the record, for
    /// the repository that is at that path now? With the project's current settings trusted too
    /// (`Loaded::untrusted` is `None`), the project is trusted: the user's formatters and language servers run in
    /// it. Another repository unpacked at the path, or a record from before trust named repositories, is not known.
    pub fn knows(&self, project: &Path) -> bool {
        lock(&self.trusted).iter().any(|(p, _)| p == project)
            || self
                .entry(project)
                .and_then(|e| e.repository)
                .is_some_and(|r| r == binding::repository(project))
    }

    /// Trust `project` (canonical), whose file sets nothing that needs trust, for this process and in the record.
    pub fn grant_project(&self, project: &Path) -> Result<(), TrustError> {
        self.grant(&Request::new(project, &super::Config::project_file(project), &[]))
    }

    /// Why `request`, whose standing is [`Standing::Changed`], differs from what the user trusted.
    pub fn again(&self, request: &Request) -> Option<Again> {
        let entry = self.entry(&request.project)?;
        Some(match (&entry.text, &entry.files, &entry.repository) {
            (_, _, None) => Again::OldRecord,
            (_, _, Some(repository)) if *repository != request.binding.repository => Again::Repository,
            (Some(text), Some(files), _) if *text == request.settings && *files != request.binding.files => {
                Again::Files
            }
            _ => Again::Settings,
        })
    }

    /// Trust the settings `request` describes, for this process and in the record.
    pub fn grant(&self, request: &Request) -> Result<(), TrustError> {
        lock(&self.trusted).insert(key(request));
        lock(&self.declined).remove(&key(request));
        let path = self.record.as_ref().ok_or(TrustError::NoHome)?;
        let _writing = lock(&self.writing);
        let mut record = Record::read(path)?;
        let entry = Entry {
            settings: request.fingerprint.clone(),
            text: Some(request.settings.clone()),
            files: Some(request.binding.files.clone()),
            repository: Some(request.binding.repository.clone()),
            trusted_at: Some(crate::clock::iso8601(crate::clock::now_millis())),
        };
        record.projects.insert(request.project.display().to_string(), entry);
        record.write(path)
    }

    /// Forget the trust in `project` (canonical). Returns whether the record had it.
    pub fn revoke(&self, project: &Path) -> Result<bool, TrustError> {
        lock(&self.trusted).retain(|(p, _)| p != project);
        let path = self.record.as_ref().ok_or(TrustError::NoHome)?;
        let _writing = lock(&self.writing);
        let mut record = Record::read(path)?;
        let had = record.projects.remove(&project.display().to_string()).is_some();
        if had {
            record.write(path)?;
        }
        Ok(had)
    }

    /// Remember "not now" for this process.
    pub fn decline(&self, request: &Request) {
        lock(&self.declined).insert(key(request));
    }

    /// Claim the ask for `request`: false when it was declined in this process, is trusted, or is being asked.
    pub fn begin_ask(&self, request: &Request) -> bool {
        let key = key(request);
        if lock(&self.declined).contains(&key) || lock(&self.trusted).contains(&key) {
            return false;
        }
        lock(&self.asking).insert(key)
    }

    /// The ask claimed by [`Trust::begin_ask`] is over.
    pub fn end_ask(&self, request: &Request) {
        lock(&self.asking).remove(&key(request));
    }
}

/// `path` with symlinks resolved when it exists (the key of the trust record).
pub fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests;
