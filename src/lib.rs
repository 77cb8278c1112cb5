//! tinycode: a coding agent that editors launch over stdio and drive through the Agent Client Protocol.
//!
//! # Architecture map
//!
//! ```text
//! editor --(ACP JSON-RPC on stdio)--> acp --> session --> agent (turn loop) --> llm (streaming HTTP)
//!                                                 |            \--> tool registry --> permission (asks go back
//!                                                 |             \      |             out through acp's seams)
//!                                                 |              \     +--> builtin tools --> workspace, shell, control, web (guarded HTTP)
//!                                                 |               \    +--> mcp tools (adapter) --> MCP servers
//!                                                 |                \                              (stdio, HTTP)
//!                                                 +-- slash commands, skills, instruction files <-- extensions
//!                                                 \--------------+--> store (SQLite worker thread: sessions,
//!                                                                      messages, todos, rules, usage)
//! ```
//!
//! | module       | owns |
//! |--------------|------|
//! | `acp`        | the only module that speaks ACP: the stdio transport (bounded lines, answers to unreadable ones, the early answers to `initialize` and the first `session/new`), params checked against the schema's types, handlers, sign-in (`authMethods`, `authenticate`), conversions, the seams' implementations, headless mode, the WebSocket transport (`serve`) |
//! | `launch`     | the process from `main` to its exit code: what Rust's runtime start did (the binary has its own C `main`), allocator settings, logging, the command line's dispatch to one function per subcommand (`src/main.rs` only calls it) |
//! | `cli`        | the command line (clap): arguments, help, exit codes, and the commands that read the store without an agent (`sessions`, `export`) |
//! | `session`    | session lifetime (a new session decided before it is built, create, load, resume, list, close, delete), turn scheduling (the queue, steering) and cancellation, checkpoints and undo, scheduled jobs' turns, settings (mode, model, reasoning), the model catalogue, when to ask for project trust, subagents (child sessions of `task`, agent definitions, the relay that shows a child through its parent), slash commands (built-ins, custom commands, skills, MCP prompts) and what the session advertises; the seams the editor must provide |
//! | `agent`      | the turn loop, history invariant, compaction, the journal (what is stored, rebuilt and replayed), system prompt and instruction files, agent events |
//! | `llm`        | `transport` (HTTP client, SSE, errors a user can act on, retries), `limits` (idle, deadline, output cap), one module per wire format (`chat` Chat Completions, `responses` OpenAI Responses, `messages` Anthropic), `router` (a client per provider, by model id), `catalogue` (model metadata), `detect` (loopback probes), `ids` |
//! | `lsp`        | language servers for diagnostics after edits: which server per language and root, the LSP client (framing, requests both ways, document sync), lifecycle; implements `workspace::diagnostics::Checker` |
//! | `builtin`    | the built-in tools, one file or folder each, and the one module that registers them |
//! | `mcp`        | the MCP client: servers (editor's and config's), their processes and bounded close, tool names, the adapter that makes their tools `tool::Def`s, prompts and resources, the `Elicitor` seam |
//! | `extensions` | discovery and formats of skills (`SKILL.md`) and custom commands (Markdown), argument placeholders |
//! | `tool`       | the tool framework only: Def, Registry, Context, the subagent seam (`tool::subagent`), the execution flow, the boundary (a panic fails one call; arguments bounded), truncation, argument reading, the input repair pipeline (names, JSON text, aliases, schema-driven values, required fields, repair notes), the error contract |
//! | `workspace`  | services the tools share for files: editor-or-disk access with the read ledger and locks; the boundary (symlinks resolved); regular-file reads with a cap; the one reader for the project's and the user's files tinycode reads on its own (`project_file`); walks and the ignore stack; UTF-16 text; atomic writes and all-or-nothing change sets (`staging`); secret files and secret content; formatters; the git commands tinycode runs itself (inert: no program a repository configures runs) and what git says a repository's configuration would run; the record of what a turn changed |
//! | `web`        | the service behind webfetch and websearch: the SSRF-guarded HTTP client of its own (URL check, guarded resolver, redirect policy, no proxy), HTML → Markdown, the response cache, the search client |
//! | `shell`      | services the shell tools share: tokenizer and classifier (the read-only allow-list, destructive and secret detection, permission shapes), process groups and trees, the supervisor mode, the command environment, the launcher of the programs tinycode starts on its own (formatters, language servers, MCP servers, git, probes: found outside an untrusted project, toolchain pinned, formatters and language servers held until trust), output capture, background tasks (monitor wake-ups, fenced output, listening ports), the editor-terminal seam |
//! | `control`    | the session state tools may change besides files: to-do list, pending mode switch, the question seam, the worktree, scheduled jobs (seam), the wake-up signal of `sleep` |
//! | `schedule`   | cron expressions and the scheduler's timer loop (jobs fire through the session manager) |
//! | `private`    | the modes of tinycode's own files: the data folder 0700, what it keeps there 0600, an open data folder closed when the store opens |
//! | `permission` | categories, rules, per-mode rulesets, the plan-mode guard, protected paths, remembered rules per project, the `Approver` seam |
//! | `bus`        | the in-process event bus |
//! | `store`      | the SQLite database: schema, migrations, and every SQL statement, run on one worker thread (writes it refuses held and retried in order; a damaged file moved aside) |
//! | `config`     | environment and config files, the providers and their key binding (`providers`), project trust (which project settings need it, the user's trust record), writing the user's file on sign-in (`user`), subagents defined in config files (`agents`) |
//! | `setup`      | the terminal commands `tinycode setup` (choose a provider, enter and check its key, save it) and `tinycode doctor` |
//! | `clock`      | wall-clock times as stored (milliseconds) and as shown (ISO 8601) |
//! | `tls`        | the process's TLS client settings: ring, and the platform's root certificates read once, on the first certificate to check (never for plain HTTP) |
//! | `warm`       | start-up work beside the first requests, on low-priority threads of its own |
//! | `heap`       | giving freed memory back to the system once a turn is over |
//! | `display`    | how a tool call is presented (title, kind, locations, diffs), shared by `tool` and `permission` |
//!
//! # Dependency rule
//!
//! `acp → session → agent → {llm, mcp, tool, permission, store, bus, config}`, and `session → lsp → {workspace, shell,
//! config}`. Nothing below `session` imports `acp` (CI greps for it), nothing below `agent` imports `session` or
//! `agent`, and only `session` imports `lsp`: the file tools reach it through the `workspace::diagnostics::Checker`
//! seam in their context. `cli` sits beside `acp` at the top: it may read `agent` (the journal's replay, for
//! exports) and `store`, never `acp`. The editor is reached only
//! through small traits (`agent::EventSink`, `session::SettingsSink`, `permission::Approver`, `workspace::files::ClientFs`,
//! `shell::terminal::ClientTerminals`, `control::Asker`, `session::TrustAsker`, `mcp::Elicitor`) that `acp` implements.
//!
//! Inside the tool layer: `{builtin, mcp} → tool → {workspace, shell, control}`, and `builtin → web`. The framework
//! (`tool`) never imports a built-in tool (only `builtin::registry()` knows them all) nor `mcp` (its adapter
//! registers `Def`s into a session's registry), the shared services import nothing of the framework but its error
//! type, and `web` imports nothing of the framework at all (it has its own errors). `extensions` is a leaf service
//! (files only) that `config` (trust for commands' shell lines), `agent`, `builtin` (`skill`) and `session` read.
//! CI greps for these.
//!
//! `schedule` imports only `clock`: the session layer runs its loop and fires jobs as turns, and `builtin::cron`
//! checks expressions with its parser before asking the user.
//!
//! `permission` asks one pure question of `shell::classify` (`may_be_prefix`: can a remembered command rule be a
//! prefix, or is it a shell, interpreter or wrapper that must be matched exactly?); `shell` imports nothing of
//! `permission`.

// Supported platforms: Linux and macOS. Process groups, signals and the shell tools are Unix-only for now.
#[cfg(not(unix))]
compile_error!(
    "tinycode supports Linux and macOS; Windows is not supported yet (see Platforms in the README). Use WSL, or the Linux binary."
);

pub mod acp;
pub mod agent;
pub mod builtin;
pub mod bus;
pub mod cli;
pub mod clock;
pub mod config;
pub mod control;
pub mod display;
pub mod extensions;
pub mod heap;
pub mod launch;
pub mod llm;
pub mod lsp;
pub mod mcp;
pub mod permission;
pub mod private;
pub mod schedule;
pub mod session;
pub mod setup;
pub mod shell;
pub mod store;
pub mod tls;
pub mod tool;
pub mod warm;
pub mod web;
pub mod workspace;
