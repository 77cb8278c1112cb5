//! Writing the user's config file (`$XDG_CONFIG_HOME/tinycode/config.toml`) when the user signs in: one
//! `[providers.NAME]` table replaced or added, and the top-level `provider` pointing at it, leaving every other
//! line (and comment) as it was. The file is replaced atomically and readable by the user only (mode 0600),
//! since it may hold a key.
//!
//! Owns these edits. Never writes a project's file.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::Sources;
use super::providers::Kind;
use super::trust::quoted;

/// What to write for one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderEntry {
    pub name: String,
    pub kind: Kind,
    pub base_url: Option<String>,
    /// The key itself (`api_key`) …
    pub api_key: Option<String>,
    /// … or the variable that holds it (`api_key_env`).
    pub api_key_env: Option<String>,
    pub models: Vec<String>,
}

/// Why the file could not be written. Handled by `tinycode setup` and `authenticate`, which tell the user.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("there is no user config directory (set XDG_CONFIG_HOME or HOME)")]
    NoHome,
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path} would not parse after the change ({message}); it was left as it was")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// The user's config file.
pub fn path(sources: &Sources) -> Option<PathBuf> {
    sources.user_config_home.as_ref().map(|home| home.join("tinycode").join("config.toml"))
}

/// A table key: bare when it can be, else quoted.
fn key(name: &str) -> String {
    let bare = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { name.to_string() } else { quoted(name) }
}

fn table_text(entry: &ProviderEntry) -> String {
    let mut text = format!("[providers.{}]\nkind = {}\n", key(&entry.name), quoted(entry.kind.as_str()));
    if let Some(url) = &entry.base_url {
        text.push_str(&format!("base_url = {}\n", quoted(url)));
    }
    if let Some(key) = &entry.api_key {
        text.push_str(&format!("api_key = {}\n", quoted(key)));
    }
    if let Some(var) = &entry.api_key_env {
        text.push_str(&format!("api_key_env = {}\n", quoted(var)));
    }
    if !entry.models.is_empty() {
        let models: Vec<String> = entry.models.iter().map(|m| quoted(m)).collect();
        text.push_str(&format!("models = [{}]\n", models.join(", ")));
    }
    text
}

/// Is `line` the header of the table `[providers.NAME]` (quoted or bare)?
fn is_header_of(line: &str, name: &str) -> bool {
    let header: String = line.trim().chars().filter(|c| !c.is_whitespace()).collect();
    header == format!("[providers.{name}]") || header == format!("[providers.{}]", quoted(name))
}

/// `text` with `entry`'s table replaced (or appended) and `provider = NAME` set at the top level.
pub fn with_provider(text: &str, entry: &ProviderEntry) -> String {
    let mut top = Vec::new();
    let mut rest = Vec::new();
    let mut in_top = true;
    let mut skipping = false;
    for line in text.lines() {
        let header = line.trim_start().starts_with('[');
        if header {
            in_top = false;
            skipping = is_header_of(line, &entry.name);
        }
        if skipping {
            continue;
        }
        let key = line.split('=').next().unwrap_or_default().trim();
        if in_top && key == "provider" {
            continue;
        }
        if in_top { top.push(line) } else { rest.push(line) }
    }
    let mut out = format!("provider = {}\n", quoted(&entry.name));
    for line in top {
        out.push_str(line);
        out.push('\n');
    }
    for line in rest {
        out.push_str(line);
        out.push('\n');
    }
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str(&table_text(entry));
    out
}

/// Add or replace `entry` in the user's config file and make it the default provider. Returns the file.
pub fn save_provider(sources: &Sources, entry: &ProviderEntry) -> Result<PathBuf, WriteError> {
    let path = path(sources).ok_or(WriteError::NoHome)?;
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(WriteError::Read { path, message: e.to_string() }),
    };
    let updated = with_provider(&text, entry);
    if let Err(e) = toml::from_str::<toml::Table>(&updated) {
        return Err(WriteError::Invalid { path, message: e.to_string() });
    }
    write_private(&path, &updated).map_err(|source| WriteError::Write { path: path.clone(), source })?;
    Ok(path)
}

/// Replace `path` atomically with `text`, readable by the user only.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().ok_or(std::io::ErrorKind::InvalidInput)?;
    std::fs::create_dir_all(dir)?;
    let temp = dir.join(format!(".config.toml.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        #[cfg(unix)]
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> ProviderEntry {
        ProviderEntry {
            name: "anthropic".into(),
            kind: Kind::Anthropic,
            base_url: None,
            api_key: Some("sk-\"x\"".into()),
            api_key_env: None,
            models: vec!["claude-sonnet-4-5".into()],
        }
    }

    #[test]
    fn the_table_is_replaced_and_everything_else_stays_with_its_comments() {
        let before = "# my settings\nprovider = \"old\"\nmodel = \"x\"\n\n[retry]\nmax_retries = 1\n\n\
                      [providers.anthropic]\napi_key = \"old\"\n\n[providers.old]\nbase_url = \"http://o\"\n";
        assert_eq!(
            with_provider(before, &entry()),
            "provider = \"anthropic\"\n# my settings\nmodel = \"x\"\n\n[retry]\nmax_retries = 1\n\n\
             [providers.old]\nbase_url = \"http://o\"\n\n\
             [providers.anthropic]\nkind = \"anthropic\"\napi_key = \"sk-\\\"x\\\"\"\nmodels = [\"claude-sonnet-4-5\"]\n"
        );
    }

    #[test]
    fn the_file_is_created_private_and_parses_back() {
        let dir = tempfile::tempdir().unwrap();
        let sources = Sources { env: Default::default(), user_config_home: Some(dir.path().to_path_buf()) };
        let path = save_provider(&sources, &entry()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let table: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(table["providers"]["anthropic"]["api_key"].as_str(), Some("sk-\"x\""));
        let config = crate::config::Config::load_user(&sources).unwrap();
        assert_eq!(config.providers[0].api_key.as_deref(), Some("sk-\"x\""));
        assert_eq!(config.model, "claude-sonnet-4-5");
    }
}
