//! Test support: a fake model server, an in-process ACP client, the ACP schema every frame is checked against,
//! snapshots, test-only tools.
pub mod client;
pub mod fake_model;
pub mod fuzz;
pub mod mcp;
pub mod raw;
pub mod scenario;
pub mod schema;
pub mod snapshot;
pub mod syntax;
pub mod tools;
pub mod trees;
pub mod web_server;
pub mod websocket;
