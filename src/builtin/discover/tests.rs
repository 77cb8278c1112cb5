//! Discover on generated trees with known answers.

use super::engine::{Deadline, Findings, Limits, Relevance};
use super::*;
use crate::workspace::ignore_rules::Stack;

fn touch(root: &Path, rel: &str, content: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// A service whose root name contains "auth", with auth code in obvious and less obvious places, and traps:
/// ignored trees, a binary file, a huge file, a look-alike word.
fn auth_service() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("auth-svc");
    let files: &[(&str, &str)] = &[
        ("src/lib.rs", "pub mod auth;\npub mod billing;\npub mod middleware;\n"),
        (
            "src/auth/session.rs",
            "use crate::auth::token::Token;\n\n/// Sessions of logged-in users.\npub struct SessionStore {\n    ttl: u64,\n}\n\nimpl SessionStore {\n    pub fn login(&self, user: &str) -> Token {\n        Token::issue(user)\n    }\n}\n",
        ),
        (
            "src/auth/token.rs",
            "pub struct Token(String);\n\nimpl Token {\n    pub fn issue(user: &str) -> Token {\n        Token(format!(\"jwt:{user}\"))\n    }\n\n    pub fn verify_jwt(&self) -> bool {\n        self.0.starts_with(\"jwt:\")\n    }\n}\n",
        ),
        (
            "src/middleware.rs",
            "pub fn authenticate(request: &Request) -> bool {\n    check_permission(request) && request.session().is_some()\n}\n\nfn check_permission(request: &Request) -> bool {\n    request.role() == \"admin\"\n}\n",
        ),
        (
            "src/bin/auth_cli.rs",
            "fn main() {\n    println!(\"login as admin\");\n    run_auth();\n}\n\nfn run_auth() {}\n",
        ),
        (
            "src/billing/invoice.rs",
            "pub struct Invoice {\n    pub total: u64,\n}\n\npub fn charge(invoice: &Invoice) -> u64 {\n    invoice.total\n}\n",
        ),
        ("README.md", "Written by the author. Billing and invoices.\n"),
        ("node_modules/auth/index.js", "function login() { return session; }\n"),
        ("target/debug/auth.rs", "fn login() {}\n"),
        (".gitignore", "target/\n"),
    ];
    for (rel, content) in files {
        touch(&root, rel, content.as_bytes());
    }
    touch(&root, "data/auth.json", b"{\"auth\": \"login\0session token\"}");
    let mut huge = vec![b'x'; 6 << 20];
    huge.extend_from_slice(b"\nauth login session token\n");
    touch(&root, "logs/huge.txt", &huge);
    (dir, root)
}

fn run(root: &Path, query: &str) -> Findings {
    map(root, &Stack::new(root, None), &terms::extract(query), &Limits::default(), &Deadline::default())
}

fn ranked(findings: &Findings) -> Vec<(String, Relevance)> {
    findings.hits.iter().map(|h| (h.rel.display().to_string(), h.relevance)).collect()
}

#[test]
fn an_auth_question_finds_the_auth_code_and_nothing_that_only_shares_the_roots_name() {
    let (_dir, root) = auth_service();
    let findings = run(&root, "where is auth handled?");
    assert_eq!(
        ranked(&findings),
        vec![
            ("src/auth/session.rs".to_string(), Relevance::High),
            ("src/middleware.rs".to_string(), Relevance::High),
            ("src/auth/token.rs".to_string(), Relevance::High),
            ("src/bin/auth_cli.rs".to_string(), Relevance::Medium),
            ("src/lib.rs".to_string(), Relevance::Medium),
        ]
    );
    assert_eq!((findings.walked, findings.prescanned, findings.partial), (8, 7, false));
}

#[test]
fn symbols_with_lines_and_folders_named_by_their_relative_path_make_the_report() {
    let (_dir, root) = auth_service();
    let findings = run(&root, "where is auth handled?");
    let text = report::render("where is auth handled?", ".", &findings);
    assert_eq!(
        text,
        "# Discovery: where is auth handled?\nFound 5 relevant files (3 high, 2 medium) in 3 areas. Key: src/auth, src, src/bin.\n(8 files walked, 7 scanned, 7 read → 5 relevant)\n\n```\nsrc/\n  auth/\n    ★ session.rs\n    ★ token.rs\n  bin/\n    ◆ auth_cli.rs\n  ◆ lib.rs\n  ★ middleware.rs\n```\n\n## src/auth\n2 files (2 high relevance)\n  ★ `src/auth/session.rs` — auth/session (SessionStore, login) (12L)\n    defines: class SessionStore (L4), method login (L9)\n    imports: crate::auth::token::Token\n    context: L1: use crate::auth::token::Token; | L4: pub struct SessionStore { | L9: pub fn login(&self, user: &str) -> Token {\n  ★ `src/auth/token.rs` — auth/token (Token, verify_jwt) (11L)\n    defines: class Token (L1), method verify_jwt (L8)\n    context: L1: pub struct Token(String); | L4: pub fn issue(user: &str) -> Token { | L5: Token(format!(\"jwt:{user}\"))\n\n## src\n2 files (1 high relevance)\n  ★ `src/middleware.rs` — src/middleware (authenticate, check_permission) (7L)\n    defines: function authenticate (L1), function check_permission (L5)\n    context: L1: pub fn authenticate(request: &Request) -> bool { | L2: check_permission(request) && request.session().is_some() | L5: fn check_permission(request: &Request) -> bool {\n  ◆ `src/lib.rs` — src/lib (auth) (3L)\n    defines: module auth (L1)\n    context: L1: pub mod auth;\n\n## src/bin\n1 file (0 high relevance)\n  ◆ `src/bin/auth_cli.rs` — bin/auth_cli (run_auth) (6L)\n    defines: function run_auth (L6)\n    context: L2: println!(\"login as admin\"); | L3: run_auth(); | L6: fn run_auth() {}\n"
    );
}

#[test]
fn the_caps_hold_when_more_files_match_than_can_be_read_or_reported() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..400 {
        let body = format!("fn login_{i}() {{ session(); token(); }}\n");
        touch(dir.path(), &format!("m{}/f{i}.rs", i % 7), body.as_bytes());
    }
    let findings = run(dir.path(), "auth login");
    assert_eq!((findings.walked, findings.prescanned, findings.read), (400, 400, 150));
    let text = report::render("auth login", ".", &findings);
    let entries = text.lines().filter(|l| l.starts_with("  ★ `") || l.starts_with("  ◆ `")).count();
    assert_eq!(entries, report::MAX_REPORT_FILES);
    assert!(text.lines().last().unwrap().starts_with("(+130 more in: m"), "{text}");

    let small = Limits { budget: 10 * 40, ..Limits::default() };
    let findings = map(
        dir.path(),
        &Stack::new(dir.path(), None),
        &terms::extract("auth login"),
        &small,
        &Deadline::default(),
    );
    assert_eq!(findings.prescanned, 10, "the byte budget bounds the content pre-scan");
}

#[test]
fn a_fired_deadline_returns_what_was_found_with_a_note() {
    let (_dir, root) = auth_service();
    let deadline = Deadline::default();
    deadline.fire();
    let findings =
        map(&root, &Stack::new(&root, None), &terms::extract("auth"), &Limits::default(), &deadline);
    assert_eq!((findings.walked, findings.hits.len(), findings.partial), (0, 0, true));
    assert_eq!(
        report::render("auth", ".", &findings),
        "# Discovery: auth\nNo relevant files found under `.`.\n(0 files walked, 0 scanned, 0 read → 0 relevant)\n(Stopped at the time limit: the results are partial. Narrow the query or the directory.)\n"
    );
}

#[test]
fn a_query_without_searchable_words_has_no_terms() {
    let terms = terms::extract("where is it?");
    assert!(terms.terms.is_empty() && terms.exact.is_empty());
}
