//! Settings of the web tools, which only the user may give: `[webfetch] allow_private` (private hosts a local
//! dev server listens on) and `[websearch] base_url`, read from the user's own config file, never from a
//! project's (a repository must not open a path to private addresses or send the search key elsewhere); and
//! the search key, `EXA_API_KEY`, from the environment in [`Sources`].
//!
//! Owns these sections' format. Must not open connections. Read once at start-up, when the tools are registered.

use std::path::Path;

use serde::Deserialize;

use super::{ConfigError, Sources};

/// Where `websearch` sends queries unless `[websearch] base_url` says otherwise (seed 000 §8.3).
pub const DEFAULT_SEARCH_URL: &str = "https://api.exa.ai/search";

/// A private host webfetch may reach, with its port: `localhost:3000`, `127.0.0.1:8080`, `[::1]:5173`. The host
/// is kept in the URL parser's normal form (lower case, IPv6 in brackets).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct PrivateHost {
    pub host: String,
    pub port: u16,
}

impl TryFrom<String> for PrivateHost {
    type Error = String;

    fn try_from(entry: String) -> Result<Self, String> {
        let bad = |why: &str| format!("`{entry}` in webfetch.allow_private: {why}");
        let (host, port) =
            entry.rsplit_once(':').ok_or_else(|| bad("give the port too, as in \"localhost:3000\""))?;
        if host.is_empty()
            || host.contains(['/', '@', '?', '#'])
            || (host.contains(':') && !host.starts_with('['))
        {
            return Err(bad("expected host:port (IPv6 in brackets: \"[::1]:3000\")"));
        }
        let port: u16 = port.parse().map_err(|_| bad("the port must be a number from 1 to 65535"))?;
        if port == 0 {
            return Err(bad("the port must be a number from 1 to 65535"));
        }
        let parsed = url::Url::parse(&format!("http://{host}/")).map_err(|e| bad(&e.to_string()))?;
        let host = parsed.host_str().ok_or_else(|| bad("no host"))?.trim_end_matches('.').to_string();
        Ok(PrivateHost { host, port })
    }
}

/// `[webfetch]`: user file only.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebfetchSection {
    #[serde(default)]
    pub allow_private: Vec<PrivateHost>,
}

/// `[websearch]`: user file only.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebsearchSection {
    pub base_url: Option<String>,
}

/// The two sections as they appear in the user's file (the other keys are `Layer`'s business).
#[derive(Debug, Default, Deserialize)]
struct UserSections {
    webfetch: Option<WebfetchSection>,
    websearch: Option<WebsearchSection>,
}

/// Where websearch goes and with which key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    pub api_key: String,
    pub url: String,
}

/// The web tools' settings for this process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebSettings {
    pub allow_private: Vec<PrivateHost>,
    /// Set when `EXA_API_KEY` is; `websearch` is registered only then.
    pub search: Option<Search>,
}

impl WebSettings {
    /// Read the user's file (`<user_config_home>/tinycode/config.toml`) and the environment in `sources`.
    pub fn load(sources: &Sources) -> Result<WebSettings, ConfigError> {
        let sections = match &sources.user_config_home {
            Some(home) => read(&home.join("tinycode").join("config.toml"))?,
            None => UserSections::default(),
        };
        let url =
            sections.websearch.and_then(|s| s.base_url).unwrap_or_else(|| DEFAULT_SEARCH_URL.to_string());
        Ok(WebSettings {
            allow_private: sections.webfetch.map(|w| w.allow_private).unwrap_or_default(),
            search: sources.var("EXA_API_KEY").map(|key| Search { api_key: key.to_string(), url }),
        })
    }
}

fn read(path: &Path) -> Result<UserSections, ConfigError> {
    // The user's own file, read like every config file (`workspace::project_file`).
    let reach = crate::workspace::project_file::Scope::named();
    let Some(text) = super::read_optional(path, &reach)? else { return Ok(UserSections::default()) };
    let bad = |message: String| ConfigError::Parse { path: path.to_path_buf(), message };
    let sections: UserSections = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if let Some(url) = sections.websearch.as_ref().and_then(|s| s.base_url.as_deref())
        && let Err(e) = url::Url::parse(url)
    {
        return Err(bad(format!("websearch.base_url `{url}`: {e}")));
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn sources(env: &[(&str, &str)], home: &Path) -> Sources {
        Sources {
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            user_config_home: Some(home.to_path_buf()),
        }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn host(host: &str, port: u16) -> PrivateHost {
        PrivateHost { host: host.into(), port }
    }

    #[test]
    fn the_user_file_allows_private_hosts_and_the_environment_gives_the_search_key() {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join("tinycode/config.toml"),
            "model = \"m\"\n[webfetch]\nallow_private = [\"LocalHost:3000\", \"127.0.0.1:8080\", \"[0:0::1]:5173\"]\n[websearch]\nbase_url = \"http://127.0.0.1:9/search\"\n",
        );
        let settings = WebSettings::load(&sources(&[("EXA_API_KEY", "k")], dir.path())).unwrap();
        assert_eq!(
            settings,
            WebSettings {
                allow_private: vec![host("localhost", 3000), host("127.0.0.1", 8080), host("[::1]", 5173)],
                search: Some(Search { api_key: "k".into(), url: "http://127.0.0.1:9/search".into() }),
            }
        );
        assert_eq!(
            WebSettings::load(&sources(&[], dir.path())).unwrap().search,
            None,
            "no key, no websearch"
        );
        let nothing = tempfile::tempdir().unwrap();
        let default = WebSettings::load(&sources(&[("EXA_API_KEY", "k")], nothing.path())).unwrap();
        assert_eq!(default.search.unwrap().url, DEFAULT_SEARCH_URL);
        assert!(default.allow_private.is_empty());
    }

    #[test]
    fn a_project_file_cannot_allow_private_hosts_or_move_the_search_endpoint() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cwd = dir.path().join("proj");
        write(&home.join("tinycode/config.toml"), "[webfetch]\nallow_private = [\"localhost:3000\"]\n");
        write(
            &Config::project_file(&cwd),
            "[webfetch]\nallow_private = [\"169.254.169.254:80\"]\n[websearch]\nbase_url = \"https://evil.example/\"\n",
        );
        let s = sources(&[("EXA_API_KEY", "k")], &home);
        assert!(
            Config::load(&s, &cwd, &crate::config::trust::Trust::new(&s)).is_ok(),
            "the project's sections are ignored, not fatal"
        );
        let settings = WebSettings::load(&s).unwrap();
        assert_eq!(settings.allow_private, vec![host("localhost", 3000)]);
        assert_eq!(settings.search.unwrap().url, DEFAULT_SEARCH_URL);
    }

    #[test]
    fn a_private_host_without_a_port_or_in_a_wrong_form_is_an_error_naming_the_entry() {
        for (entry, why) in [
            ("localhost", "give the port too"),
            ("localhost:0", "the port must be a number"),
            ("localhost:http", "the port must be a number"),
            ("::1:3000", "IPv6 in brackets"),
            ("user@host:1", "expected host:port"),
            ("http://localhost:3000", "expected host:port"),
        ] {
            let error = PrivateHost::try_from(entry.to_string()).unwrap_err();
            assert!(error.starts_with(&format!("`{entry}` in webfetch.allow_private: ")), "{error}");
            assert!(error.contains(why), "{entry}: {error}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tinycode/config.toml");
        write(&file, "[webfetch]\nallow_private = [\"localhost\"]\n");
        let s = sources(&[], dir.path());
        let error =
            Config::load(&s, dir.path(), &crate::config::trust::Trust::new(&s)).unwrap_err().to_string();
        assert!(error.starts_with(&format!("invalid config file {}", file.display())), "{error}");
        assert!(WebSettings::load(&sources(&[], dir.path())).is_err());
    }
}
