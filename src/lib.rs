//! tinycode: a coding agent that editors launch over stdio and drive through the Agent Client Protocol.
//!
//! # Architecture map
//!
//! ```text
//! editor --(ACP JSON-RPC on stdio)--> acp --> session --> agent (turn loop) --> llm (streaming HTTP)
//!                                                 |            \--> tool registry --> permission (asks go back
//!                                                 |             \                    out through acp's seams)
//!                                                 \--------------+--> store (SQLite worker thread: sessions,
//!                                                                      messages, todos, rules, usage)
//! ```
//!
//! | module       | owns |
//! |--------------|------|
//! | `acp`        | the only module that speaks ACP: handlers, conversions, the seams' implementations, headless mode |
//! | `session`    | session lifetime (create, load, resume, list, close, delete), turn scheduling and cancellation, settings (mode, model, reasoning) and the model catalogue; the seams the editor must provide |
//! | `agent`      | the turn loop, history invariant, compaction, the journal (what is stored, rebuilt and replayed), system prompt, agent events |
//! | `llm`        | provider wire formats, SSE, tool-call assembly, retries, malformed-call repair |
//! | `tool`       | the tool framework (Def, Registry, Context, execution flow, truncation), the built-in tools, and the session state tools may change (`control`: to-do list, pending mode switch, question seam) |
//! | `permission` | categories, rules, per-mode rulesets, the plan-mode guard, remembered rules per project, the `Approver` seam |
//! | `bus`        | the in-process event bus |
//! | `store`      | the SQLite database: schema, migrations, and every SQL statement, run on one worker thread |
//! | `config`     | environment and config files |
//! | `clock`      | wall-clock times as stored (milliseconds) and as shown (ISO 8601) |
//! | `display`    | how a tool call is presented (title, kind, locations, diffs), shared by `tool` and `permission` |
//!
//! # Dependency rule
//!
//! `acp → session → agent → {llm, tool, permission, store, bus, config}`. Nothing below `session` imports
//! `acp` (CI greps for it), and nothing below `agent` imports `session` or `agent`. The editor is reached only
//! through small traits (`agent::EventSink`, `session::SettingsSink`, `permission::Approver`, `tool::files::ClientFs`,
//! `tool::shell::terminal::ClientTerminals`, `tool::control::Asker`) that `acp` implements.

pub mod acp;
pub mod agent;
pub mod bus;
pub mod clock;
pub mod config;
pub mod display;
pub mod llm;
pub mod permission;
pub mod session;
pub mod store;
pub mod tool;
