//! Where the user's global git excludes file is: `core.excludesFile` from `$XDG_CONFIG_HOME/git/config` or
//! `~/.gitconfig` (the latter wins, as in git), else git's default `$XDG_CONFIG_HOME/git/ignore`
//! (`~/.config/git/ignore`). The ignore stack applies it below the project's own ignore files.
//!
//! Owns finding that path. Reads the two git config files only, safely (`regular`).

use std::path::{Path, PathBuf};

use super::Sources;
use crate::workspace::regular;

/// Git config files larger than this are not read.
const MAX_GIT_CONFIG_BYTES: u64 = 1024 * 1024;

/// `core.excludesFile` in the git config text `text`, if set (the last setting wins).
fn excludes_file(text: &str) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let section = line.trim_start_matches('[').split([']', ' ', '"']).next().unwrap_or("");
            in_core = section.eq_ignore_ascii_case("core");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if in_core && key.trim().eq_ignore_ascii_case("excludesfile") {
            let value = value.split([';', '#']).next().unwrap_or("").trim().trim_matches('"');
            found = (!value.is_empty()).then(|| value.to_string());
        }
    }
    found
}

/// `~/x` with the home directory put in.
fn expand(value: &str, home: Option<&Path>) -> Option<PathBuf> {
    match value.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        None => Some(PathBuf::from(value)),
    }
}

fn read(path: &Path) -> Option<String> {
    let read = regular::read(path, MAX_GIT_CONFIG_BYTES).ok().filter(|r| r.complete)?;
    Some(String::from_utf8_lossy(&read.bytes).into_owned())
}

/// The global excludes file of the user `sources` describes (it may not exist).
pub fn global_excludes(sources: &Sources) -> Option<PathBuf> {
    let home = sources.var("HOME").map(PathBuf::from);
    let xdg = sources
        .var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    let mut value = None;
    for file in [xdg.as_ref().map(|x| x.join("git/config")), home.as_ref().map(|h| h.join(".gitconfig"))]
        .into_iter()
        .flatten()
    {
        if let Some(set) = read(&file).as_deref().and_then(excludes_file) {
            value = Some(set);
        }
    }
    match value {
        Some(value) => expand(&value, home.as_deref()),
        None => xdg.map(|x| x.join("git/ignore")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_is_found_in_the_core_section_in_any_case_and_the_last_one_wins() {
        let text = "[user]\n\texcludesFile = no\n[core]\n\tautocrlf = false\n\texcludesfile = ~/.gitignore_global ; note\n[Core]\nExcludesFile = \"/etc/ignore\"\n";
        assert_eq!(excludes_file(text), Some("/etc/ignore".into()));
        assert_eq!(excludes_file("[core]\n"), None);
        assert_eq!(expand("~/.gi", Some(Path::new("/home/u"))), Some(PathBuf::from("/home/u/.gi")));
    }

    #[test]
    fn the_home_gitconfig_wins_and_git_s_default_applies_without_a_setting() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let sources = |env: &[(&str, &Path)]| Sources {
            env: env.iter().map(|(k, v)| (k.to_string(), v.display().to_string())).collect(),
            user_config_home: None,
        };
        let s = sources(&[("HOME", home)]);
        assert_eq!(global_excludes(&s), Some(home.join(".config/git/ignore")));
        std::fs::create_dir_all(home.join(".config/git")).unwrap();
        std::fs::write(home.join(".config/git/config"), "[core]\nexcludesFile = /from/xdg\n").unwrap();
        assert_eq!(global_excludes(&s), Some(PathBuf::from("/from/xdg")));
        std::fs::write(home.join(".gitconfig"), "[core]\nexcludesFile = ~/.global-ignore\n").unwrap();
        assert_eq!(global_excludes(&s), Some(home.join(".global-ignore")));
        assert_eq!(global_excludes(&sources(&[])), None);
    }
}
