//! What `discover` looks for: the query turned into terms. Words of three or more characters, noise words
//! dropped, identifiers (`ToolRetryError`, `agent_loop`, `agent_loop.py`) kept as exact terms and split into
//! their sub-words, and concepts expanded (an "auth" query also looks for login, session, token…).
//!
//! Unlike the reference, the query's own word is always kept (a "typescript" query still looks for
//! typescript), a concept is reached only through its listed forms (so "author" is not "auth"), and the order is
//! the query's, so the same query always gives the same terms.
//!
//! Owns the vocabularies (noise words, concepts, the extensions searched). Must not read files.

use std::sync::LazyLock;

use regex::Regex;

/// Extensions of the files `discover` considers (the reference's list plus common variants).
pub const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "go", "rs", "java", "rb", "php", "c",
    "cc", "cpp", "cxx", "h", "hh", "hpp", "hxx", "cs", "swift", "kt", "scala", "lua", "sh", "bash", "zsh",
    "md", "txt", "yaml", "yml", "toml", "json", "ini", "cfg", "conf", "sql",
];

/// Extensions of documentation and data rather than code: read after code when the byte budget is short.
pub const DOC_EXTENSIONS: &[&str] = &["md", "txt", "yaml", "yml", "toml", "json", "ini", "cfg", "conf"];

/// Words that say nothing about where code lives (the reference's 28, plus a few question words).
pub const NOISE_WORDS: &[&str] = &[
    "where",
    "what",
    "how",
    "the",
    "and",
    "are",
    "all",
    "code",
    "related",
    "find",
    "show",
    "module",
    "file",
    "defined",
    "does",
    "this",
    "that",
    "which",
    "with",
    "for",
    "from",
    "about",
    "look",
    "get",
    "used",
    "using",
    "implement",
    "implementation",
    "there",
    "when",
    "into",
    "have",
    "handled",
    "happens",
    "located",
    "lives",
    "files",
    "work",
    "works",
    "done",
    "place",
];

/// A concept: the query words that reach it, and what it expands to. The first four expansions are also
/// looked for in paths (as the reference does); all of them in contents.
struct Concept {
    forms: &'static [&'static str],
    expansions: &'static [&'static str],
}

const CONCEPTS: &[Concept] = &[
    Concept {
        forms: &[
            "auth",
            "authn",
            "authz",
            "authenticate",
            "authentication",
            "authorize",
            "authorization",
            "authorized",
            "authenticated",
        ],
        expansions: &[
            "auth",
            "login",
            "session",
            "token",
            "jwt",
            "oauth",
            "credential",
            "permission",
            "role",
            "passport",
            "sso",
        ],
    },
    Concept {
        forms: &["database", "databases", "db"],
        expansions: &[
            "db",
            "database",
            "model",
            "schema",
            "migration",
            "orm",
            "query",
            "repository",
            "entity",
        ],
    },
    Concept {
        forms: &["api", "apis", "endpoint", "endpoints"],
        expansions: &[
            "api",
            "route",
            "endpoint",
            "controller",
            "handler",
            "middleware",
            "request",
            "response",
        ],
    },
    Concept { forms: &["test", "tests", "testing"], expansions: &["test", "spec", "fixture", "mock"] },
    Concept {
        forms: &["config", "configs", "configuration", "configure", "settings"],
        expansions: &["config", "settings", "env", "constant"],
    },
    Concept { forms: &["error", "errors"], expansions: &["error", "exception", "fallback", "retry"] },
    Concept {
        forms: &["cache", "caches", "caching", "cached"],
        expansions: &["cache", "redis", "memcache", "store"],
    },
    Concept {
        forms: &["queue", "queues", "queued"],
        expansions: &["queue", "worker", "job", "task", "celery"],
    },
    Concept {
        forms: &["ontology", "ontologies"],
        expansions: &["relation", "graph", "edge", "node", "entity", "schema", "hierarchy", "taxonomy"],
    },
    Concept {
        forms: &["type", "types", "typing"],
        expansions: &["type", "schema", "interface", "protocol", "contract"],
    },
    Concept { forms: &["tool", "tools"], expansions: &["tool", "command", "action", "executor"] },
    Concept { forms: &["agent", "agents"], expansions: &["agent", "loop", "step", "run", "execute"] },
    Concept {
        forms: &["widget", "widgets", "gui"],
        expansions: &["ui", "widget", "panel", "render", "display", "screen"],
    },
    Concept { forms: &["prompt", "prompts"], expansions: &["prompt", "system", "template", "instruction"] },
    Concept {
        forms: &["compaction", "compact", "compacting"],
        expansions: &["compact", "compaction", "summary", "summarize", "truncate"],
    },
];

/// One term and how much a hit on it counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// Lower case.
    pub text: String,
    /// 1 for the query's own words, less for expansions.
    pub weight: f64,
    /// Also looked for in paths.
    pub in_paths: bool,
}

/// What a query asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Terms {
    /// Identifiers as written (case kept): a file containing one is highly relevant.
    pub exact: Vec<String>,
    /// Lower-case terms, query order, no duplicates.
    pub terms: Vec<Term>,
}

/// Weight of a concept's expansion relative to a word of the query.
const EXPANSION_WEIGHT: f64 = 0.5;

static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]{2,}").unwrap_or_else(|_| unreachable!()));
static EXACT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?:\.[a-z0-9]+)?|[A-Za-z_]\w*\.[A-Za-z]\w+)\b")
        .unwrap_or_else(|_| unreachable!())
});

/// The sub-words of an identifier: `ToolRetryError` → tool, retry, error; `agent_loop` → agent, loop.
pub fn sub_words(identifier: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in identifier.chars() {
        let boundary = !c.is_ascii_alphanumeric()
            || (c.is_ascii_uppercase()
                && previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit()));
        if boundary && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        if c.is_ascii_alphanumeric() {
            current.push(c.to_ascii_lowercase());
        }
        previous = Some(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

fn concept_of(word: &str) -> Option<&'static Concept> {
    let singular = word.strip_suffix('s').unwrap_or(word);
    CONCEPTS.iter().find(|c| c.forms.contains(&word) || c.forms.contains(&singular))
}

impl Terms {
    fn add(&mut self, text: &str, weight: f64, in_paths: bool) {
        if text.len() < 2 || NOISE_WORDS.contains(&text) {
            return;
        }
        match self.terms.iter_mut().find(|t| t.text == text) {
            Some(known) => {
                known.weight = known.weight.max(weight);
                known.in_paths |= in_paths;
            }
            None => self.terms.push(Term { text: text.to_string(), weight, in_paths }),
        }
    }

    fn add_word(&mut self, word: &str) {
        if word.len() < 3 || NOISE_WORDS.contains(&word) {
            return;
        }
        self.add(word, 1.0, true);
        if let Some(concept) = concept_of(word) {
            for (i, expansion) in concept.expansions.iter().enumerate() {
                self.add(expansion, EXPANSION_WEIGHT, i < 4);
            }
        }
    }
}

/// The terms of `query`.
pub fn extract(query: &str) -> Terms {
    let mut terms = Terms::default();
    for exact in EXACT.find_iter(query) {
        let text = exact.as_str().trim_end_matches('.');
        if !terms.exact.iter().any(|e| e == text) {
            terms.exact.push(text.to_string());
        }
    }
    for word in WORD.find_iter(query) {
        let word = word.as_str();
        let parts = sub_words(word);
        if parts.len() > 1 {
            terms.add(&word.to_ascii_lowercase(), 1.0, true);
        }
        for part in parts {
            terms.add_word(&part);
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(terms: &Terms) -> Vec<(&str, f64, bool)> {
        terms.terms.iter().map(|t| (t.text.as_str(), t.weight, t.in_paths)).collect()
    }

    #[test]
    fn an_auth_question_keeps_its_words_drops_noise_and_expands_the_concept() {
        let terms = extract("where is auth handled?");
        assert_eq!(terms.exact, Vec::<String>::new());
        assert_eq!(
            texts(&terms),
            vec![
                ("auth", 1.0, true),
                ("login", 0.5, true),
                ("session", 0.5, true),
                ("token", 0.5, true),
                ("jwt", 0.5, false),
                ("oauth", 0.5, false),
                ("credential", 0.5, false),
                ("permission", 0.5, false),
                ("role", 0.5, false),
                ("passport", 0.5, false),
                ("sso", 0.5, false),
            ]
        );
    }

    #[test]
    fn identifiers_are_exact_terms_and_split_into_sub_words() {
        let terms = extract("How does ToolRetryError propagate in agent_loop.py");
        assert_eq!(terms.exact, vec!["ToolRetryError", "agent_loop.py"]);
        let words: Vec<&str> = terms.terms.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            words,
            vec![
                "toolretryerror",
                "tool",
                "command",
                "action",
                "executor",
                "retry",
                "error",
                "exception",
                "fallback",
                "propagate",
                "agent_loop",
                "agent",
                "loop",
                "step",
                "run",
                "execute"
            ]
        );
    }

    #[test]
    fn the_query_word_survives_and_look_alikes_do_not_reach_a_concept() {
        let words = |q: &str| extract(q).terms.into_iter().map(|t| t.text).collect::<Vec<_>>();
        assert_eq!(words("typescript parser"), vec!["typescript", "parser"]);
        assert_eq!(words("author name"), vec!["author", "name"]);
        assert_eq!(words("authentication")[..3], ["authentication", "auth", "login"]);
        assert_eq!(
            words("The configuration"),
            vec!["configuration", "config", "settings", "env", "constant"]
        );
    }

    #[test]
    fn sub_words_split_camel_case_snake_case_and_digits() {
        assert_eq!(sub_words("HTTPServer2Config"), vec!["httpserver2", "config"]);
        assert_eq!(sub_words("parse_json_v2"), vec!["parse", "json", "v2"]);
        assert_eq!(sub_words("plain"), vec!["plain"]);
    }
}
