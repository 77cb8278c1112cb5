//! The environment of every command tinycode runs (bash, background tasks, formatters, and any server it starts
//! later): the agent's own environment narrowed by the `[shell]` policy, with provider keys and every other
//! secret-looking variable removed, plus the variables that keep commands from waiting for a pager or a terminal.
//!
//! Owns the rules for which variables a command sees. Reads the process environment; never changes it.
//!
//! A variable looks secret when one of its words (split at `_`, `-` and `.`, any case) ends in `KEY`, `KEYS`,
//! `TOKEN` or `TOKENS`, or contains `SECRET`, `PASSWORD` or `PASSWD`. Whole words keep the rule precise:
//! `OPENAI_API_KEY`, `GH_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD` and `APIKEY` go; `KEYBOARD_LAYOUT`,
//! `TOKENIZERS_PARALLELISM`, `SSH_AUTH_SOCK` and `PWD` stay.

use std::ffi::{OsStr, OsString};

use crate::config::{EnvInherit, EnvPolicy};

/// Set for every command so nothing waits for a pager, a terminal or a password prompt.
pub const QUIET_ENV: [(&str, &str); 5] = [
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
];

/// What `env_inherit = "core"` keeps (plus every `LC_*`).
const CORE: [&str; 13] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "LANG", "LANGUAGE", "TMPDIR", "TEMP", "TMP",
    "TZ", "PWD",
];

/// Word endings and contents that mark a variable as secret.
const SECRET_ENDINGS: [&str; 4] = ["KEY", "KEYS", "TOKEN", "TOKENS"];
const SECRET_PARTS: [&str; 3] = ["SECRET", "PASSWORD", "PASSWD"];

/// Does the name look like it holds a credential?
pub fn looks_secret(name: &str) -> bool {
    name.split(['_', '-', '.']).map(str::to_ascii_uppercase).any(|word| {
        SECRET_ENDINGS.iter().any(|end| word.ends_with(end))
            || SECRET_PARTS.iter().any(|part| word.contains(part))
    })
}

/// Does `name` match `pattern` (`*` matches any run of characters; case is ignored)?
pub fn matches(pattern: &str, name: &str) -> bool {
    let (pattern, name) = (pattern.to_ascii_uppercase(), name.to_ascii_uppercase());
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn inherited(policy: &EnvPolicy, name: &str) -> bool {
    match policy.inherit {
        EnvInherit::All => true,
        EnvInherit::Core => CORE.contains(&name) || name.starts_with("LC_"),
        EnvInherit::None => false,
    }
}

/// Does the policy let a command see the variable `name`?
pub fn allowed(policy: &EnvPolicy, name: &str) -> bool {
    if !inherited(policy, name) || policy.remove.iter().any(|p| matches(p, name)) {
        return false;
    }
    !looks_secret(name) || policy.keep.iter().any(|p| matches(p, name))
}

/// The complete environment of a command, computed once per session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    vars: Vec<(OsString, OsString)>,
}

impl Default for Environment {
    /// The default policy applied to this process's environment.
    fn default() -> Self {
        Self::new(&EnvPolicy::default())
    }
}

impl Environment {
    /// `policy` applied to this process's environment.
    pub fn new(policy: &EnvPolicy) -> Self {
        Self::from_vars(policy, std::env::vars_os())
    }

    /// `policy` applied to `vars`. Names that are not valid UTF-8 are dropped: no rule can vouch for them.
    pub fn from_vars(policy: &EnvPolicy, vars: impl IntoIterator<Item = (OsString, OsString)>) -> Self {
        let mut kept: Vec<(OsString, OsString)> = vars
            .into_iter()
            .filter(|(name, _)| name.to_str().is_some_and(|n| allowed(policy, n)))
            .filter(|(name, _)| !QUIET_ENV.iter().any(|(quiet, _)| OsStr::new(quiet) == name))
            .collect();
        kept.extend(QUIET_ENV.iter().map(|(name, value)| (OsString::from(name), OsString::from(value))));
        Self { vars: kept }
    }

    pub fn vars(&self) -> &[(OsString, OsString)] {
        &self.vars
    }

    /// The value `name` will have, if any.
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_os_str())
    }

    /// Give `command` exactly this environment.
    pub fn apply(&self, command: &mut tokio::process::Command) {
        command.env_clear().envs(self.vars.iter().map(|(n, v)| (n, v)));
    }

    /// This environment with `vars` set on top (each replaces a variable of the same name).
    pub fn with<N: Into<OsString>, V: Into<OsString>>(&self, vars: impl IntoIterator<Item = (N, V)>) -> Self {
        let mut out = self.clone();
        for (name, value) in vars {
            let (name, value) = (name.into(), value.into());
            match out.vars.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => out.vars.push((name, value)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(policy: &EnvPolicy, vars: &[(&str, &str)]) -> Vec<String> {
        let vars = vars.iter().map(|(n, v)| (OsString::from(n), OsString::from(v)));
        Environment::from_vars(policy, vars)
            .vars()
            .iter()
            .map(|(n, v)| format!("{}={}", n.to_string_lossy(), v.to_string_lossy()))
            .collect()
    }

    #[test]
    fn provider_keys_and_secret_looking_names_are_removed_by_whole_words() {
        for secret in [
            "TINYCODE_API_KEY",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "openrouter_api_key",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "GH_TOKEN",
            "NPM_TOKENS",
            "HF_TOKEN",
            "APIKEY",
            "PGPASSWORD",
            "DB_PASSWD",
            "CLIENT_SECRET",
            "SSH-KEY",
            "my.secret.value",
        ] {
            assert!(looks_secret(secret), "{secret}");
        }
        for harmless in [
            "KEYBOARD_LAYOUT",
            "TOKENIZERS_PARALLELISM",
            "SSH_AUTH_SOCK",
            "PWD",
            "OLDPWD",
            "PATH",
            "KEYTIMEOUT",
            "XDG_SESSION_TYPE",
            "TINYCODE_BASE_URL",
        ] {
            assert!(!looks_secret(harmless), "{harmless}");
        }
    }

    #[test]
    fn wildcard_patterns_match_whole_names_in_any_case() {
        assert!(matches("GITHUB_TOKEN", "github_token"));
        assert!(matches("AWS_*", "AWS_PROFILE"));
        assert!(matches("*_TOKEN", "GH_TOKEN"));
        assert!(matches("*URL*", "DATABASE_URL_RO"));
        assert!(matches("A*B*C", "AxxBxxC"));
        assert!(!matches("A*B*C", "AxxCxxB"));
        assert!(!matches("AWS_*", "MY_AWS_PROFILE"));
        assert!(!matches("*_TOKEN", "GH_TOKEN_FILE"));
        assert!(!matches("AB*BA", "ABA"));
    }

    #[test]
    fn the_default_keeps_everything_else_and_sets_the_quiet_variables() {
        let vars = [("PATH", "/bin"), ("OPENAI_API_KEY", "sk-1"), ("TERM", "xterm"), ("LANG", "C.UTF-8")];
        assert_eq!(
            env(&EnvPolicy::default(), &vars),
            vec![
                "PATH=/bin",
                "LANG=C.UTF-8",
                "PAGER=cat",
                "GIT_PAGER=cat",
                "GIT_TERMINAL_PROMPT=0",
                "TERM=dumb",
                "NO_COLOR=1"
            ]
        );
    }

    #[test]
    fn keep_brings_back_a_secret_remove_drops_more_and_inherit_narrows() {
        let vars = [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("LC_ALL", "C"),
            ("GITHUB_TOKEN", "g"),
            ("OPENAI_API_KEY", "k"),
            ("DATABASE_URL", "postgres://u:p@h"),
            ("EDITOR", "vi"),
        ];
        let policy = EnvPolicy {
            inherit: EnvInherit::All,
            keep: vec!["github_token".into()],
            remove: vec!["*_URL".into()],
        };
        let kept = env(&policy, &vars);
        assert_eq!(kept[..5], ["PATH=/bin", "HOME=/h", "LC_ALL=C", "GITHUB_TOKEN=g", "EDITOR=vi"]);
        assert_eq!(kept.len(), 5 + QUIET_ENV.len());

        let core = EnvPolicy { inherit: EnvInherit::Core, ..EnvPolicy::default() };
        assert_eq!(env(&core, &vars)[..3], ["PATH=/bin", "HOME=/h", "LC_ALL=C"]);
        assert_eq!(env(&core, &vars).len(), 3 + QUIET_ENV.len());

        let none = EnvPolicy { inherit: EnvInherit::None, ..EnvPolicy::default() };
        assert_eq!(env(&none, &vars).len(), QUIET_ENV.len());
    }
}
