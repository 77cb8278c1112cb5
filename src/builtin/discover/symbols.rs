//! Definitions and imports in one file, for `discover`'s symbol field and report. Rust, Python,
//! TypeScript/TSX, JavaScript, Go, Java, C and C++ use the grammars' own `tags.scm` queries through
//! `tree-sitter-tags` (TypeScript's query only adds the TypeScript forms, so JavaScript's is appended to it);
//! other languages fall back to a line regex (`def`, `class`, `fn`, `func`, `function`…). Imports come from line
//! regexes for Rust `use`, Python, JavaScript/TypeScript, Go and Java.
//!
//! Owns symbol extraction. Parsing stops when the cancellation flag is set (the discover deadline). Must not
//! read files.

use std::cell::RefCell;
use std::sync::atomic::AtomicUsize;
use std::sync::{LazyLock, OnceLock};

use regex::Regex;
use tree_sitter_tags::{TagsConfiguration, TagsContext};

/// A definition: its name, what kind of thing it is, and its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub kind: String,
    pub line: u32,
}

/// The languages with a tags query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grammar {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
    Java,
    C,
    Cpp,
}

const GRAMMARS: usize = 9;

fn grammar(extension: &str) -> Option<Grammar> {
    Some(match extension {
        "rs" => Grammar::Rust,
        "py" | "pyi" => Grammar::Python,
        "ts" | "mts" | "cts" => Grammar::TypeScript,
        "tsx" => Grammar::Tsx,
        "js" | "jsx" | "mjs" | "cjs" => Grammar::JavaScript,
        "go" => Grammar::Go,
        "java" => Grammar::Java,
        "c" | "h" => Grammar::C,
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => Grammar::Cpp,
        _ => return None,
    })
}

/// The configuration of `grammar`, compiled on first use (a query compiles in milliseconds, not per file).
fn configuration(grammar: Grammar) -> Option<&'static TagsConfiguration> {
    static CONFIGS: [OnceLock<Option<TagsConfiguration>>; GRAMMARS] = [const { OnceLock::new() }; GRAMMARS];
    CONFIGS[grammar as usize]
        .get_or_init(|| {
            let typescript =
                || format!("{}\n{}", tree_sitter_typescript::TAGS_QUERY, tree_sitter_javascript::TAGS_QUERY);
            let (language, query): (tree_sitter::Language, String) = match grammar {
                Grammar::Rust => (tree_sitter_rust::LANGUAGE.into(), tree_sitter_rust::TAGS_QUERY.into()),
                Grammar::Python => {
                    (tree_sitter_python::LANGUAGE.into(), tree_sitter_python::TAGS_QUERY.into())
                }
                Grammar::TypeScript => (tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(), typescript()),
                Grammar::Tsx => (tree_sitter_typescript::LANGUAGE_TSX.into(), typescript()),
                Grammar::JavaScript => {
                    (tree_sitter_javascript::LANGUAGE.into(), tree_sitter_javascript::TAGS_QUERY.into())
                }
                Grammar::Go => (tree_sitter_go::LANGUAGE.into(), tree_sitter_go::TAGS_QUERY.into()),
                Grammar::Java => (tree_sitter_java::LANGUAGE.into(), tree_sitter_java::TAGS_QUERY.into()),
                Grammar::C => (tree_sitter_c::LANGUAGE.into(), tree_sitter_c::TAGS_QUERY.into()),
                Grammar::Cpp => (tree_sitter_cpp::LANGUAGE.into(), tree_sitter_cpp::TAGS_QUERY.into()),
            };
            TagsConfiguration::new(language, &query, "")
                .map_err(|e| tracing::warn!(?grammar, error = %e, "a tags query does not compile"))
                .ok()
        })
        .as_ref()
}

thread_local! {
    /// A parser per thread: contexts cannot be shared, and creating one per file is wasted work.
    static CONTEXT: RefCell<TagsContext> = RefCell::new(TagsContext::new());
}

/// Most definitions kept per file.
const MAX_SYMBOLS: usize = 400;

fn tagged(config: &TagsConfiguration, source: &[u8], cancel: &AtomicUsize) -> Option<Vec<Symbol>> {
    CONTEXT.with(|context| {
        let mut context = context.try_borrow_mut().ok()?;
        let (tags, _) = context.generate_tags(config, source, Some(cancel)).ok()?;
        let mut symbols = Vec::new();
        for tag in tags {
            let Ok(tag) = tag else { break };
            if !tag.is_definition {
                continue;
            }
            let name = String::from_utf8_lossy(source.get(tag.name_range.clone())?).into_owned();
            let kind = config.syntax_type_name(tag.syntax_type_id).to_string();
            symbols.push(Symbol {
                name,
                kind,
                line: u32::try_from(tag.span.start.row + 1).unwrap_or(u32::MAX),
            });
            if symbols.len() == MAX_SYMBOLS {
                break;
            }
        }
        Some(symbols)
    })
}

static FALLBACK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^[ \t]*(?:(?:pub(?:\([^)]*\))?|export|public|private|protected|internal|static|async|abstract|final|open|override|local)\s+)*(def|class|function|func|fn|struct|enum|trait|interface|impl|mod|module|object|protocol|extension)\s+(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)",
    )
    .unwrap_or_else(|_| unreachable!())
});

fn by_regex(source: &str) -> Vec<Symbol> {
    let mut symbols = Vec::new();
    for found in FALLBACK.captures_iter(source).take(MAX_SYMBOLS) {
        let (Some(kind), Some(name)) = (found.get(1), found.get(2)) else { continue };
        let line = source[..name.start()].bytes().filter(|&b| b == b'\n').count() + 1;
        let kind = match kind.as_str() {
            "def" | "fn" | "func" | "function" => "function",
            "class" | "struct" | "object" => "class",
            "trait" | "interface" | "protocol" => "interface",
            "mod" | "module" => "module",
            other => other,
        };
        symbols.push(Symbol {
            name: name.as_str().to_string(),
            kind: kind.to_string(),
            line: u32::try_from(line).unwrap_or(u32::MAX),
        });
    }
    symbols
}

/// The definitions in `source`, a file with `extension`, in source order.
pub fn definitions(extension: &str, source: &str, cancel: &AtomicUsize) -> Vec<Symbol> {
    if let Some(config) = grammar(extension).and_then(configuration)
        && let Some(mut symbols) = tagged(config, source.as_bytes(), cancel)
    {
        symbols.sort_by_key(|s| s.line);
        return symbols;
    }
    by_regex(source)
}

static IMPORTS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?(?:use\s+([A-Za-z_][\w:]*)|from\s+([\w.]+)\s+import|import\s+(?:static\s+)?([\w.]+)\s*;?\s*$|import\s+.*?from\s+["']([^"']+)["']|import\s+["']([^"']+)["']|.*?require\(\s*["']([^"']+)["']\s*\))"#,
    )
    .unwrap_or_else(|_| unreachable!())
});

/// Most imports listed per file.
pub const MAX_IMPORTS: usize = 8;

/// What `source` imports (modules, packages, paths), first seen first, at most [`MAX_IMPORTS`].
pub fn imports(source: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for capture in IMPORTS.captures_iter(source) {
        let Some(name) = capture.iter().skip(1).flatten().next() else { continue };
        let name = name.as_str().trim_end_matches("::").to_string();
        if !name.is_empty() && !found.contains(&name) {
            found.push(name);
            if found.len() == MAX_IMPORTS {
                break;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(extension: &str, source: &str) -> Vec<(String, String, u32)> {
        definitions(extension, source, &AtomicUsize::new(0))
            .into_iter()
            .map(|s| (s.name, s.kind, s.line))
            .collect()
    }

    fn s(name: &str, kind: &str, line: u32) -> (String, String, u32) {
        (name.into(), kind.into(), line)
    }

    #[test]
    fn every_grammar_compiles_its_tags_query() {
        for grammar in [
            Grammar::Rust,
            Grammar::Python,
            Grammar::TypeScript,
            Grammar::Tsx,
            Grammar::JavaScript,
            Grammar::Go,
            Grammar::Java,
            Grammar::C,
            Grammar::Cpp,
        ] {
            assert!(configuration(grammar).is_some(), "{grammar:?}");
        }
    }

    #[test]
    fn definitions_come_from_the_tags_queries_with_their_lines() {
        assert_eq!(
            names("rs", "pub struct Session;\n\nimpl Session {\n    fn login(&self) {}\n}\ntrait Auth {}\n"),
            vec![s("Session", "class", 1), s("login", "method", 4), s("Auth", "interface", 6)]
        );
        assert_eq!(
            names("py", "class Store:\n    def get(self):\n        pass\n\ndef login():\n    pass\n"),
            vec![s("Store", "class", 1), s("get", "function", 2), s("login", "function", 5)]
        );
        assert_eq!(
            names(
                "ts",
                "export interface Token { id: string }\nexport function verify(t: Token) {}\nclass Guard {}\n"
            ),
            vec![s("Token", "interface", 1), s("verify", "function", 2), s("Guard", "class", 3)]
        );
        assert_eq!(
            names(
                "go",
                "package auth\n\nfunc Login() {}\n\ntype Store struct{}\n\nfunc (s *Store) Get() {}\n"
            ),
            vec![s("Login", "function", 3), s("Store", "type", 5), s("Get", "method", 7)]
        );
        assert_eq!(
            names("java", "class Auth {\n  void login() {}\n}\n"),
            vec![s("Auth", "class", 1), s("login", "method", 2)]
        );
        assert_eq!(
            names("c", "struct token { int id; };\nint check_token(int t) { return t; }\n"),
            vec![s("token", "class", 1), s("check_token", "function", 2)]
        );
        assert_eq!(
            names("cpp", "class Vault {};\nint open_vault() { return 0; }\n"),
            vec![s("Vault", "class", 1), s("open_vault", "function", 2)]
        );
        assert_eq!(
            names("js", "function login() {}\nclass Session {}\n"),
            vec![s("login", "function", 1), s("Session", "class", 2)]
        );
    }

    #[test]
    fn other_languages_fall_back_to_the_line_regex() {
        assert_eq!(
            names("rb", "module Auth\n  class Session\n    def login\n    end\n  end\nend\n"),
            vec![s("Auth", "module", 1), s("Session", "class", 2), s("login", "function", 3)]
        );
    }

    #[test]
    fn imports_are_found_for_rust_python_javascript_and_go() {
        assert_eq!(
            imports(
                "use crate::auth::Session;\npub use std::sync::Arc;\nfrom os import path\nimport json\nimport { x } from \"./token\";\nconst y = require('jwt');\nimport \"fmt\"\n"
            ),
            vec!["crate::auth::Session", "std::sync::Arc", "os", "json", "./token", "jwt", "fmt"]
        );
    }
}
