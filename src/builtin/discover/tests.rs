//! Discover on generated trees with known answers.

use super::engine::{Deadline, Findings, Limits, Relevance};
use super::*;

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
        ("src/bin/auth_cli.rs", "fn main() {\n    println!(\"login as admin\");\n    run_auth();\n}\n\nfn run_auth() {}\n"),
        ("src/billing/invoice.rs", "pub struct Invoice {\n    pub total: u64,\n}\n\npub fn charge(invoice: &Invoice) -> u64 {\n    invoice.total\n}\n"),
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
    map(root, &terms::extract(query), &Limits::default(), &Deadline::default())
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
            ("src/auth/token.rs".to_string(), Relevance::High),
            ("src/middleware.rs".to_string(), Relevance::High),
            ("src/bin/auth_cli.rs".to_string(), Relevance::Medium),
            ("src/lib.rs".to_string(), Relevance::Medium),
        ]
    );
    assert_eq!((findings.walked, findings.prescanned, findings.partial), (9, 8, false));
}

#[test]
fn symbols_with_lines_and_folders_named_by_their_relative_path_make_the_report() {
    let (_dir, root) = auth_service();
    let findings = run(&root, "where is auth handled?");
    let text = report::render("where is auth handled?", ".", &findings);
    assert_eq!(text, "");
}
