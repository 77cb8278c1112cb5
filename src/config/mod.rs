//! Configuration: environment variables, then `<cwd>/.tinycode/config.toml`, then
//! `$XDG_CONFIG_HOME/tinycode/config.toml` (highest precedence first), merged into one [`Config`].
//!
//! Owns the file format and the precedence rule. Reads files only; must not open network connections.
//! Callers pass the environment in explicitly ([`Sources`]) so tests never see the developer's variables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub mod web;

/// The OpenAI endpoint used when neither `TINYCODE_BASE_URL` nor `OPENAI_BASE_URL` nor a config file says otherwise.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The model used when nothing names one.
pub const DEFAULT_MODEL: &str = "gpt-4.1";

/// A configuration problem the user must fix. Handled by the ACP layer, which answers the request with an
/// error naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid value for {name}: {message}")]
    Env { name: String, message: String },
}

/// Where configuration comes from. [`Sources::from_process`] reads the real environment; tests build their own.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub env: BTreeMap<String, String>,
    /// The directory holding the user's `tinycode/config.toml` (normally `$XDG_CONFIG_HOME`).
    pub user_config_home: Option<PathBuf>,
}

impl Sources {
    pub fn from_process() -> Self {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let user_config_home = env
            .get("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| env.get("HOME").map(|h| Path::new(h).join(".config")));
        Self { env, user_config_home }
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// The data directory: `TINYCODE_DATA_DIR`, else `$XDG_DATA_HOME/tinycode`, else `~/.local/share/tinycode`.
    pub fn data_dir(&self) -> PathBuf {
        if let Some(dir) = self.var("TINYCODE_DATA_DIR") {
            return PathBuf::from(dir);
        }
        if let Some(dir) = self.var("XDG_DATA_HOME") {
            return Path::new(dir).join("tinycode");
        }
        let home = self.var("HOME").unwrap_or("/tmp");
        Path::new(home).join(".local/share/tinycode")
    }
}

/// Retry policy for provider requests.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryConfig {
    /// Retries after the first attempt (so `max_retries + 1` attempts in all).
    pub max_retries: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }
}

/// The effective configuration of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub data_dir: PathBuf,
    /// Cap on model requests in one prompt turn; reaching it ends the turn with `max_turn_requests`.
    pub max_turn_requests: u32,
    /// `max_tokens` sent to the model, if set.
    pub max_output_tokens: Option<u32>,
    pub retry: RetryConfig,
    /// How long a stream may stay silent (after its first byte) before it counts as cut.
    pub stream_idle_timeout: Duration,
    /// Time allowed to connect and receive response headers.
    pub connect_timeout: Duration,
    /// Formatter commands by file extension, run after the agent writes a file.
    pub formatters: BTreeMap<String, Vec<String>>,
    /// Run commands in the editor's terminals (`terminal/create`) when it offers them.
    pub client_terminals: bool,
    /// Models offered in the picker besides the provider's own list.
    pub models: Vec<String>,
    /// The model's context window in tokens, when the built-in list does not know it.
    pub context_window: Option<u64>,
    /// The mode new sessions start in (`build`, `plan`, `accept-edits`, `yolo`).
    pub default_mode: Option<String>,
    /// Permission rules from the user's and the project's configuration (project rules come last and win).
    pub permission_rules: Vec<crate::permission::Rule>,
}

/// One layer of settings as it appears in a config file. Every field is optional; layers are merged.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Layer {
    base_url: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    data_dir: Option<PathBuf>,
    max_turn_requests: Option<u32>,
    max_output_tokens: Option<u32>,
    stream_idle_timeout_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    retry: Option<RetryLayer>,
    formatters: Option<BTreeMap<String, Vec<String>>>,
    shell: Option<ShellLayer>,
    models: Option<Vec<String>>,
    context_window: Option<u64>,
    default_mode: Option<String>,
    permission: Option<PermissionLayer>,
    /// USER FILE ONLY: read by `web::WebSettings`; parsed here so typos fail, dropped from a project's file.
    webfetch: Option<web::WebfetchSection>,
    /// USER FILE ONLY: as `webfetch`.
    websearch: Option<web::WebsearchSection>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct PermissionLayer {
    #[serde(default)]
    rules: Vec<crate::permission::Rule>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct ShellLayer {
    client_terminals: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct RetryLayer {
    max_retries: Option<u32>,
    initial_backoff_ms: Option<u64>,
    max_backoff_ms: Option<u64>,
}

/// Per-key merge: entries of `higher` win over those of `lower`.
fn merge_maps<V>(
    higher: Option<BTreeMap<String, V>>,
    lower: Option<BTreeMap<String, V>>,
) -> Option<BTreeMap<String, V>> {
    match (higher, lower) {
        (Some(higher), Some(mut lower)) => {
            lower.extend(higher);
            Some(lower)
        }
        (a, b) => a.or(b),
    }
}

impl Layer {
    /// Fill every field still unset in `self` from `lower`.
    fn under(self, lower: Layer) -> Layer {
        let retry = match (self.retry, lower.retry) {
            (Some(a), Some(b)) => Some(RetryLayer {
                max_retries: a.max_retries.or(b.max_retries),
                initial_backoff_ms: a.initial_backoff_ms.or(b.initial_backoff_ms),
                max_backoff_ms: a.max_backoff_ms.or(b.max_backoff_ms),
            }),
            (a, b) => a.or(b),
        };
        Layer {
            base_url: self.base_url.or(lower.base_url),
            api_key: self.api_key.or(lower.api_key),
            model: self.model.or(lower.model),
            data_dir: self.data_dir.or(lower.data_dir),
            max_turn_requests: self.max_turn_requests.or(lower.max_turn_requests),
            max_output_tokens: self.max_output_tokens.or(lower.max_output_tokens),
            stream_idle_timeout_ms: self.stream_idle_timeout_ms.or(lower.stream_idle_timeout_ms),
            connect_timeout_ms: self.connect_timeout_ms.or(lower.connect_timeout_ms),
            retry,
            formatters: merge_maps(self.formatters, lower.formatters),
            models: self.models.or(lower.models),
            context_window: self.context_window.or(lower.context_window),
            default_mode: self.default_mode.or(lower.default_mode),
            // Rules accumulate: user rules first, project rules after them (the last matching rule wins).
            permission: match (self.permission, lower.permission) {
                (Some(high), Some(low)) => Some(PermissionLayer { rules: [low.rules, high.rules].concat() }),
                (a, b) => a.or(b),
            },
            webfetch: self.webfetch.or(lower.webfetch),
            websearch: self.websearch.or(lower.websearch),
            shell: match (self.shell, lower.shell) {
                (Some(a), Some(b)) => {
                    Some(ShellLayer { client_terminals: a.client_terminals.or(b.client_terminals) })
                }
                (a, b) => a.or(b),
            },
        }
    }

    fn from_env(sources: &Sources) -> Result<Layer, ConfigError> {
        let number = |name: &str| -> Result<Option<u32>, ConfigError> {
            sources
                .var(name)
                .map(|v| {
                    v.trim()
                        .parse::<u32>()
                        .map_err(|e| ConfigError::Env { name: name.into(), message: e.to_string() })
                })
                .transpose()
        };
        Ok(Layer {
            base_url: sources
                .var("TINYCODE_BASE_URL")
                .or_else(|| sources.var("OPENAI_BASE_URL"))
                .map(String::from),
            api_key: sources
                .var("TINYCODE_API_KEY")
                .or_else(|| sources.var("OPENAI_API_KEY"))
                .map(String::from),
            model: sources.var("TINYCODE_MODEL").map(String::from),
            data_dir: sources.var("TINYCODE_DATA_DIR").map(PathBuf::from),
            max_turn_requests: number("TINYCODE_MAX_TURN_REQUESTS")?,
            ..Layer::default()
        })
    }

    fn from_file(path: &Path) -> Result<Layer, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Layer::default()),
            Err(source) => return Err(ConfigError::Read { path: path.to_path_buf(), source }),
        };
        toml::from_str(&text)
            .map_err(|e| ConfigError::Parse { path: path.to_path_buf(), message: e.to_string() })
    }
}

impl Config {
    /// The project file for a session rooted at `cwd`.
    pub fn project_file(cwd: &Path) -> PathBuf {
        cwd.join(".tinycode").join("config.toml")
    }

    /// Merge environment, project file and user file for a session rooted at `cwd`.
    pub fn load(sources: &Sources, cwd: &Path) -> Result<Config, ConfigError> {
        let user = match &sources.user_config_home {
            Some(home) => Layer::from_file(&home.join("tinycode").join("config.toml"))?,
            None => Layer::default(),
        };
        let mut project = Layer::from_file(&Self::project_file(cwd))?;
        let (webfetch, websearch) = (project.webfetch.take(), project.websearch.take());
        if webfetch.is_some() || websearch.is_some() {
            tracing::warn!(
                file = %Self::project_file(cwd).display(),
                "[webfetch] and [websearch] are ignored in a project's config: only the user's own file may set them"
            );
        }
        let merged = Layer::from_env(sources)?.under(project).under(user);
        Ok(Self::resolve(merged, sources))
    }

    fn resolve(layer: Layer, sources: &Sources) -> Config {
        let defaults = RetryConfig::default();
        let retry = layer.retry.unwrap_or_default();
        Config {
            base_url: layer.base_url.unwrap_or_else(|| DEFAULT_BASE_URL.to_string()),
            api_key: layer.api_key.filter(|k| !k.is_empty()),
            model: layer.model.unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            data_dir: layer.data_dir.unwrap_or_else(|| sources.data_dir()),
            max_turn_requests: layer.max_turn_requests.unwrap_or(50).max(1),
            max_output_tokens: layer.max_output_tokens,
            retry: RetryConfig {
                max_retries: retry.max_retries.unwrap_or(defaults.max_retries),
                initial_backoff: retry
                    .initial_backoff_ms
                    .map(Duration::from_millis)
                    .unwrap_or(defaults.initial_backoff),
                max_backoff: retry.max_backoff_ms.map(Duration::from_millis).unwrap_or(defaults.max_backoff),
            },
            stream_idle_timeout: Duration::from_millis(layer.stream_idle_timeout_ms.unwrap_or(300_000)),
            connect_timeout: Duration::from_millis(layer.connect_timeout_ms.unwrap_or(30_000)),
            formatters: layer.formatters.unwrap_or_default(),
            client_terminals: layer.shell.and_then(|s| s.client_terminals).unwrap_or(false),
            models: layer.models.unwrap_or_default(),
            context_window: layer.context_window,
            default_mode: layer.default_mode,
            permission_rules: layer.permission.map(|p| p.rules).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(env: &[(&str, &str)], home: Option<&Path>) -> Sources {
        Sources {
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            user_config_home: home.map(Path::to_path_buf),
        }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn environment_beats_project_file_which_beats_user_file() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("proj");
        let home = dir.path().join("home");
        write(
            &home.join("tinycode/config.toml"),
            "model = \"user-model\"\nbase_url = \"http://user\"\napi_key = \"k-user\"\nmax_turn_requests = 7\n",
        );
        write(
            &cwd.join(".tinycode/config.toml"),
            "model = \"project-model\"\nbase_url = \"http://project\"\n[formatters]\nrs = [\"rustfmt\"]\n",
        );
        let s = sources(&[("TINYCODE_MODEL", "env-model"), ("TINYCODE_DATA_DIR", "/data")], Some(&home));
        let config = Config::load(&s, &cwd).unwrap();
        assert_eq!(config.model, "env-model");
        assert_eq!(config.base_url, "http://project");
        assert_eq!(config.api_key.as_deref(), Some("k-user"));
        assert_eq!(config.max_turn_requests, 7);
        assert_eq!(config.data_dir, PathBuf::from("/data"));
        assert_eq!(config.formatters, BTreeMap::from([("rs".to_string(), vec!["rustfmt".to_string()])]));
    }

    #[test]
    fn tinycode_variables_win_over_openai_variables_and_defaults_apply_last() {
        let dir = tempfile::tempdir().unwrap();
        let s = sources(
            &[("OPENAI_BASE_URL", "http://openai"), ("OPENAI_API_KEY", "k1"), ("TINYCODE_API_KEY", "k2")],
            None,
        );
        let config = Config::load(&s, dir.path()).unwrap();
        assert_eq!(config.base_url, "http://openai");
        assert_eq!(config.api_key.as_deref(), Some("k2"));
        assert_eq!(config.model, DEFAULT_MODEL);

        let config = Config::load(&sources(&[], None), dir.path()).unwrap();
        assert_eq!(config.base_url, DEFAULT_BASE_URL);
        assert_eq!(config.api_key, None);
    }

    #[test]
    fn a_malformed_project_file_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = Config::project_file(dir.path());
        write(&file, "model = [unclosed\n");
        let err = Config::load(&sources(&[], None), dir.path()).unwrap_err();
        assert!(err.to_string().starts_with(&format!("invalid config file {}", file.display())), "{err}");
    }

    #[test]
    fn unknown_keys_are_rejected_so_typos_do_not_pass_silently() {
        let dir = tempfile::tempdir().unwrap();
        write(&Config::project_file(dir.path()), "modle = \"x\"\n");
        let err = Config::load(&sources(&[], None), dir.path()).unwrap_err();
        assert!(err.to_string().contains("unknown field `modle`"), "{err}");
    }

    #[test]
    fn a_non_numeric_request_cap_in_the_environment_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err =
            Config::load(&sources(&[("TINYCODE_MAX_TURN_REQUESTS", "many")], None), dir.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value for TINYCODE_MAX_TURN_REQUESTS: invalid digit found in string"
        );
    }
}
