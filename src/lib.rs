//! tinycode: a coding agent that editors launch over stdio and drive through the Agent Client Protocol.
//!
//! # Architecture map
//!
//! ```text
//! editor --(ACP JSON-RPC on stdio)--> acp --> session --> agent (turn loop) --> llm (streaming HTTP)
//!                                                 |            \--> tool registry --> permission (asks go back
//!                                                 |             \      |             out through acp's seams)
//!                                                 |              \     +--> builtin tools --> workspace, shell, control
//!                                                 \--------------+--> store (SQLite worker thread: sessions,
//!                                                                      messages, todos, rules, usage)
//! ```
//!
//! | module       | owns |
//! |--------------|------|
//! | `acp`        | the only module that speaks ACP: handlers, conversions, the seams' implementations, headless mode |
//! | `session`    | session lifetime (create, load, resume, list, close, delete), turn scheduling and cancellation, settings (mode, model, reasoning), the model catalogue, when to ask for project trust; the seams the editor must provide |
//! | `agent`      | the turn loop, history invariant, compaction, the journal (what is stored, rebuilt and replayed), system prompt, agent events |
//! | `llm`        | provider wire formats, SSE, stream limits (idle, deadline, output cap), tool-call assembly, retries |
//! | `lsp`        | language servers for diagnostics after edits: which server per language and root, the LSP client (framing, requests both ways, document sync), lifecycle; implements `workspace::diagnostics::Checker` |
//! | `builtin`    | the built-in tools, one file or folder each, and the one module that registers them |
//! | `tool`       | the tool framework only: Def, Registry, Context, the execution flow, truncation, argument reading, the input repair pipeline (names, JSON text, aliases, schema-driven values, required fields, repair notes), the error contract |
//! | `workspace`  | services the tools share for files: editor-or-disk access with the read ledger and locks; the boundary (symlinks resolved); regular-file reads with a cap; walks and ignore rules; atomic writes; secret files and secret content; formatters; the diagnostics seam (`Checker`) |
//! | `shell`      | services the shell tools share: tokenizer and classifier (the read-only allow-list, destructive and secret detection, permission shapes), process groups and trees, the supervisor mode, the command environment (also used by formatters), output capture, background tasks, the editor-terminal seam |
//! | `control`    | the session state tools may change besides files: to-do list, pending mode switch, the question seam |
//! | `permission` | categories, rules, per-mode rulesets, the plan-mode guard, protected paths, remembered rules per project, the `Approver` seam |
//! | `bus`        | the in-process event bus |
//! | `store`      | the SQLite database: schema, migrations, and every SQL statement, run on one worker thread |
//! | `config`     | environment and config files, project trust (which project settings need it, the user's trust record), the key binding |
//! | `clock`      | wall-clock times as stored (milliseconds) and as shown (ISO 8601) |
//! | `display`    | how a tool call is presented (title, kind, locations, diffs), shared by `tool` and `permission` |
//!
//! # Dependency rule
//!
//! `acp → session → agent → {llm, tool, permission, store, bus, config}`, and `session → lsp → {workspace, shell,
//! config}`. Nothing below `session` imports `acp` (CI greps for it), nothing below `agent` imports `session` or
//! `agent`, and only `session` imports `lsp`: the file tools reach it through the `workspace::diagnostics::Checker`
//! seam in their context. The editor is reached only
//! through small traits (`agent::EventSink`, `session::SettingsSink`, `permission::Approver`, `workspace::files::ClientFs`,
//! `shell::terminal::ClientTerminals`, `control::Asker`, `session::TrustAsker`) that `acp` implements.
//!
//! Inside the tool layer: `builtin → tool → {workspace, shell, control}`. The framework (`tool`) never imports a
//! built-in tool (only `builtin::registry()` knows them all), and the shared services import nothing of the
//! framework but its error type. CI greps for both.
//!
//! `permission` asks one pure question of `shell::classify` (`may_be_prefix`: can a remembered command rule be a
//! prefix, or is it a shell, interpreter or wrapper that must be matched exactly?); `shell` imports nothing of
//! `permission`.

pub mod acp;
pub mod agent;
pub mod builtin;
pub mod bus;
pub mod clock;
pub mod config;
pub mod control;
pub mod display;
pub mod llm;
pub mod lsp;
pub mod permission;
pub mod session;
pub mod shell;
pub mod store;
pub mod tool;
pub mod workspace;
