//! `discover` through ACP on a generated tree with known answers.

use serde_json::json;

use super::turn::{finished, tool_result};
use crate::support::client::Harness;
use crate::support::fake_model::{answer, calls};

#[tokio::test]
async fn discover_maps_where_auth_lives_in_a_generated_tree() {
    let h = Harness::start(vec![]).await;
    h.write("src/auth/session.rs", "pub struct SessionStore;\n\nimpl SessionStore {\n    pub fn login(&self) -> bool {\n        true\n    }\n}\n");
    h.write(
        "src/auth/token.rs",
        "pub fn verify_token(jwt: &str) -> bool {\n    jwt.starts_with(\"jwt:\")\n}\n",
    );
    h.write("src/billing.rs", "pub fn charge() -> u64 {\n    42\n}\n");
    h.write("node_modules/auth/index.js", "function login() { return session; }\n");
    let args = json!({"query": "where is auth handled?"}).to_string();
    h.model.script(vec![calls(&[("d", "discover", &args)]), answer(&["ok"])]);
    let session = h.session().await;
    h.client.prompt(&session, "map auth").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "d"),
        "# Discovery: where is auth handled?\nFound 2 relevant files (2 high, 0 medium) in 1 area. Key: src/auth.\n(3 files walked, 3 scanned, 2 read → 2 relevant)\n\n```\nsrc/\n  auth/\n    ★ session.rs\n    ★ token.rs\n```\n\n## src/auth\n2 files (2 high relevance)\n  ★ `src/auth/session.rs` — auth/session (SessionStore, login) (7L)\n    defines: class SessionStore (L1), method login (L4)\n    context: L1: pub struct SessionStore; | L3: impl SessionStore { | L4: pub fn login(&self) -> bool {\n  ★ `src/auth/token.rs` — auth/token (verify_token) (3L)\n    defines: function verify_token (L1)\n    context: L1: pub fn verify_token(jwt: &str) -> bool { | L2: jwt.starts_with(\"jwt:\")\n"
    );
    let card = finished(&h.client.updates(&session), "d");
    assert_eq!(card["status"], "completed");
    assert_eq!(
        h.client.log.permission_requests.lock().unwrap().len(),
        0,
        "a map of the workspace asks nothing"
    );
}
