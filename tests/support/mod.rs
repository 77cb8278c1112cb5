//! Test support: a fake model server, an in-process ACP client, snapshots, test-only tools.
pub mod client;
pub mod fake_model;
pub mod mcp;
pub mod snapshot;
pub mod tools;
