//! The names MCP tools go by for the model: `mcp__<server>__<tool>`, only `[A-Za-z0-9_-]`, at most 64 bytes, with
//! `_` and 8 hex digits of a stable hash of the raw `(server, tool)` pair when the plain name is too long or already
//! taken. A name is assigned once per pair and kept while the pair exists, so a refreshed tool list never renames
//! a tool the model already knows. Calls are routed by looking the name up here, never by splitting it: server and
//! tool names may themselves contain `__`.
//!
//! Owns the naming rule and the lookup. Knows nothing of connections.

use std::collections::{BTreeMap, HashMap};

/// Longest tool name providers accept.
pub const MAX_NAME: usize = 64;
/// Every MCP tool name starts with this.
pub const PREFIX: &str = "mcp__";

/// `[A-Za-z0-9_-]` only: every other character becomes `_` (nothing is collapsed); empty becomes `_`.
pub fn sanitize(part: &str) -> String {
    let clean: String = part
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    if clean.is_empty() { "_".into() } else { clean }
}

/// Eight hex digits of SHA-256 over the raw pair: the same pair always gets the same suffix.
fn stable_hash(server: &str, tool: &str) -> String {
    let input = format!("{server}\0{tool}");
    let digest = ring::digest::digest(&ring::digest::SHA256, input.as_bytes());
    digest.as_ref()[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// The plain name of a pair, before any length or clash handling.
pub fn plain(server: &str, tool: &str) -> String {
    format!("{PREFIX}{}__{}", sanitize(server), sanitize(tool))
}

/// The raw pair a model-visible name stands for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pair {
    pub server: String,
    pub tool: String,
}

/// Assigned names, both ways.
#[derive(Debug, Default)]
pub struct Names {
    by_pair: HashMap<Pair, String>,
    by_name: BTreeMap<String, Pair>,
}

impl Names {
    /// The name of `(server, tool)`: the one it already has, else a new one that no other pair uses.
    pub fn assign(&mut self, server: &str, tool: &str) -> String {
        let pair = Pair { server: server.into(), tool: tool.into() };
        if let Some(name) = self.by_pair.get(&pair) {
            return name.clone();
        }
        let plain = plain(server, tool);
        let name = if plain.len() <= MAX_NAME && !self.by_name.contains_key(&plain) {
            plain
        } else {
            self.hashed(&plain, server, tool)
        };
        self.by_pair.insert(pair.clone(), name.clone());
        self.by_name.insert(name.clone(), pair);
        name
    }

    /// `plain` cut to fit, then `_` and the pair's hash; a counter in the astronomically rare case of a clash.
    fn hashed(&self, plain: &str, server: &str, tool: &str) -> String {
        let suffix = format!("_{}", stable_hash(server, tool));
        let mut n = 1;
        loop {
            let extra = if n == 1 { String::new() } else { n.to_string() };
            let keep = MAX_NAME - suffix.len() - extra.len();
            // Sanitised names are ASCII, so any byte index is a character boundary.
            let name = format!("{}{suffix}{extra}", &plain[..plain.len().min(keep)]);
            if !self.by_name.contains_key(&name) {
                return name;
            }
            n += 1;
        }
    }

    /// The pair behind a model-visible name.
    pub fn lookup(&self, name: &str) -> Option<&Pair> {
        self.by_name.get(name)
    }

    /// Forget every pair of `server` whose tool is not in `keep` (the server withdrew it or went away).
    pub fn retain(&mut self, server: &str, keep: &[String]) {
        let gone: Vec<Pair> =
            self.by_pair.keys().filter(|p| p.server == server && !keep.contains(&p.tool)).cloned().collect();
        for pair in gone {
            if let Some(name) = self.by_pair.remove(&pair) {
                self.by_name.remove(&name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_only_allowed_characters_without_collapsing_anything() {
        assert_eq!(sanitize("my server.v2"), "my_server_v2");
        assert_eq!(sanitize("a__b"), "a__b");
        assert_eq!(sanitize("é"), "_");
        assert_eq!(sanitize(""), "_");
        let mut names = Names::default();
        assert_eq!(names.assign("GitHub", "create-issue"), "mcp__GitHub__create-issue");
    }

    #[test]
    fn a_clash_gets_a_stable_hash_suffix_and_the_first_pair_keeps_the_plain_name() {
        let mut names = Names::default();
        assert_eq!(names.assign("my server", "echo"), "mcp__my_server__echo");
        let second = names.assign("my_server", "echo");
        assert_eq!(second, format!("mcp__my_server__echo_{}", stable_hash("my_server", "echo")));
        assert_eq!(second.len(), "mcp__my_server__echo".len() + 9);
        assert_eq!(names.assign("my_server", "echo"), second, "a pair keeps its name");
        assert_eq!(names.lookup(&second), Some(&Pair { server: "my_server".into(), tool: "echo".into() }));
        let mut fresh = Names::default();
        fresh.assign("my server", "echo");
        assert_eq!(fresh.assign("my_server", "echo"), second, "the suffix is the same in every process");
    }

    #[test]
    fn long_names_are_cut_to_64_bytes_with_the_hash() {
        let mut names = Names::default();
        let tool = "t".repeat(70);
        let name = names.assign("srv", &tool);
        assert_eq!(name.len(), MAX_NAME);
        assert_eq!(name, format!("mcp__srv__{}_{}", "t".repeat(45), stable_hash("srv", &tool)));
        let exactly = "u".repeat(MAX_NAME - "mcp__srv__".len());
        assert_eq!(names.assign("srv", &exactly), format!("mcp__srv__{exactly}"));
    }

    #[test]
    fn names_are_routed_by_lookup_even_when_parts_contain_double_underscores() {
        let mut names = Names::default();
        let name = names.assign("a__b", "c");
        assert_eq!(name, "mcp__a__b__c");
        assert_eq!(names.lookup(&name), Some(&Pair { server: "a__b".into(), tool: "c".into() }));
        let other = names.assign("a", "b__c");
        assert_ne!(other, name, "the same plain name goes to one pair only");
        assert_eq!(names.lookup(&other), Some(&Pair { server: "a".into(), tool: "b__c".into() }));
    }

    #[test]
    fn withdrawn_tools_release_their_names() {
        let mut names = Names::default();
        names.assign("s", "a");
        names.assign("s", "b");
        names.retain("s", &["b".to_string()]);
        assert_eq!(names.lookup("mcp__s__a"), None);
        assert!(names.lookup("mcp__s__b").is_some());
    }
}
