//! The command line: what `tinycode` accepts (clap derive), and the commands that work on the session database
//! without an agent (`sessions`, `export`). `main.rs` dispatches one function per subcommand; the headless run
//! itself lives in `acp::headless` because it drives the agent over ACP.
//!
//! Owns argument names, help texts and exit codes. Must not speak ACP or run a turn.

pub mod export;
pub mod run;
pub mod sessions;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// How a command ended, as the process exit code. `--help` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Finished: the model ended its answer, or the command did what it was asked.
    Done = 0,
    /// An error: provider, configuration, protocol, unknown session, unreadable database.
    Failed = 1,
    /// Bad usage: unknown flag, missing or empty prompt, bad value.
    Usage = 2,
    /// The turn stopped early: cancelled (Ctrl-C), output limit, request cap, refusal.
    Stopped = 3,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit as u8)
    }
}

/// The exit-code table, as a literal so `concat!` can build the help texts from it.
macro_rules! exit_codes {
    () => {
        "Exit codes:
  0  finished
  1  error (provider, configuration, protocol, unknown session)
  2  bad usage (unknown flag, missing prompt, bad value)
  3  the turn stopped early (cancelled, output limit, request cap, refusal)"
    };
}

/// Shown under every command's `--help`.
pub const EXIT_CODES: &str = exit_codes!();

const MAIN_HELP: &str = concat!(
    exit_codes!(),
    "

Environment:
  TINYCODE_PROVIDER   a provider name (anthropic, openai, openrouter, ollama, …) or kind
  TINYCODE_BASE_URL   the provider's API URL; TINYCODE_API_KEY its key (local servers usually need none)
  TINYCODE_MODEL      model (NAME/model when several providers are configured)
  ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY, DEEPSEEK_API_KEY, …
                      used when nothing else is configured; else a local server is looked for
                      (`tinycode setup` walks through it, `tinycode doctor` shows what is used)
  TINYCODE_DATA_DIR   where sessions are stored (default ~/.local/share/tinycode)
  RUST_LOG            log filter (logs go to stderr); TINYCODE_LOG_FILE logs to a file instead

Editors launch the command line `tinycode acp`; the source's editors/ folder has a page per editor."
);

/// The modes `--mode` accepts (the agent's own list).
const MODES: [&str; 4] = ["build", "plan", "accept-edits", "yolo"];

/// tinycode: a coding agent for editors that speak the Agent Client Protocol.
#[derive(Debug, Parser)]
#[command(
    name = "tinycode",
    version,
    about = "A coding agent for editors that speak the Agent Client Protocol (ACP)",
    long_about = "A coding agent for editors that speak the Agent Client Protocol (ACP).\n\nEditors launch `tinycode acp` and talk to it on stdio; `tinycode run` runs one prompt from a shell or a script.",
    after_help = MAIN_HELP,
    arg_required_else_help = true,
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// One variant per subcommand; `main.rs` has one function for each.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve ACP on stdio (what editors launch)
    #[command(after_help = EXIT_CODES)]
    Acp(AcpArgs),
    /// Run one prompt headlessly: the answer goes to stdout, tool calls to stderr
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// List stored sessions, newest first (this directory's unless --all)
    #[command(after_help = EXIT_CODES)]
    Sessions(SessionsArgs),
    /// Write a stored session as Markdown (or HTML with rendered diffs) for sharing
    #[command(after_help = EXIT_CODES)]
    Export(ExportArgs),
    /// Print a shell completion script (bash, zsh or fish) to stdout
    #[command(after_help = COMPLETIONS_HELP)]
    Completions(CompletionsArgs),
    /// Trust DIR's .tinycode/config.toml as it is now: let it run commands, widen permissions or pick the server
    #[command(after_help = EXIT_CODES)]
    Trust(TrustArgs),
    /// Serve ACP over WebSocket for an editor on another machine (SSH, WSL, containers); prints a token once
    #[command(after_help = SERVE_HELP)]
    Serve(ServeArgs),
    /// Choose a model provider (local servers found, keys in the environment), enter its key, check it, save it
    #[command(after_help = EXIT_CODES)]
    Setup,
    /// Show the effective configuration (keys redacted) with its sources, and check every provider
    #[command(after_help = EXIT_CODES)]
    Doctor(DoctorArgs),
}

#[derive(Debug, Args)]
pub struct AcpArgs {
    /// Run the interactive sign-in (`tinycode setup`) instead of serving ACP: the terminal sign-in method
    /// editors start from their agent command
    #[arg(long = "setup")]
    pub setup: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The project directory whose settings to include (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

const SERVE_HELP: &str = concat!(
    "Clients send the token as `Authorization: Bearer <token>` (or ws://ADDRESS/?token=<token>); without it the
handshake gets HTTP 401. A request from a web page whose Origin is not loopback (or given with --allow-origin)
gets HTTP 403; past --max-connections, HTTP 503. A client silent for --ping-timeout (no pong, no message) is
dropped and its turns cancelled. Forward the port over SSH rather than listening on other addresses: the traffic
is not encrypted.
  on the agent's machine:  tinycode serve --listen 127.0.0.1:7878
  on the editor's machine: ssh -L 7878:127.0.0.1:7878 devbox

",
    exit_codes!()
);

/// The address `serve` listens on when `--listen` is not given.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on; only loopback addresses unless --allow-remote
    #[arg(long, value_name = "ADDRESS:PORT", default_value = DEFAULT_LISTEN, value_parser = listen_address)]
    pub listen: std::net::SocketAddr,
    /// Also listen on addresses other machines can reach (unencrypted: prefer SSH forwarding)
    #[arg(long)]
    pub allow_remote: bool,
    /// Also accept WebSocket handshakes from web pages of this origin (scheme://host[:port]); none and loopback
    /// origins are always accepted. Repeatable
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Clients served at once; more get HTTP 503
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_connections: usize,
    /// Ping each client this often (seconds)
    #[arg(long, value_name = "SECONDS", default_value_t = 15)]
    pub ping_interval: u64,
    /// End a client's connection (cancelling its turns) after this long without any frame from it (seconds)
    #[arg(long, value_name = "SECONDS", default_value_t = 45)]
    pub ping_timeout: u64,
}

/// An `ADDRESS:PORT` (`localhost:PORT` means 127.0.0.1); host names are not resolved.
fn listen_address(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Some(port) = text.strip_prefix("localhost:") {
        let port: u16 = port.parse().map_err(|_| format!("`{port}` is not a port number"))?;
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| format!("`{text}` is not ADDRESS:PORT (e.g. 127.0.0.1:7878 or [::1]:7878)"))
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Stop trusting the project instead
    #[arg(long)]
    pub revoke: bool,
    /// The project directory (default: the current directory)
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

const COMPLETIONS_HELP: &str = "\
Install:
  bash: tinycode completions bash > ~/.local/share/bash-completion/completions/tinycode
  zsh:  tinycode completions zsh > ~/.zfunc/_tinycode   (with fpath+=~/.zfunc before compinit)
  fish: tinycode completions fish > ~/.config/fish/completions/tinycode.fish";

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt. `-` (or no words with stdin a pipe or file) reads it from stdin; `-` among words is
    /// replaced by stdin, so `git diff | tinycode run review this: -` works
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,
    /// Model to use for this run (else TINYCODE_MODEL or the config)
    #[arg(long, short = 'm', value_name = "NAME")]
    pub model: Option<String>,
    /// Mode to run in
    #[arg(long, value_name = "MODE", value_parser = clap::builder::PossibleValuesParser::new(MODES))]
    pub mode: Option<String>,
    /// Project directory (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Allow each permission ask once (otherwise asks are rejected)
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print one JSON event per line on stdout instead of text (see the README for the events)
    #[arg(long)]
    pub json: bool,
    /// Continue the newest session of this directory
    #[arg(long = "continue", short = 'c', conflicts_with = "session")]
    pub continue_last: bool,
    /// Continue the stored session with this id (see `tinycode sessions`)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// List the sessions of every project
    #[arg(long, conflicts_with = "cwd")]
    pub all: bool,
    /// List the sessions of this project directory (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print at most this many sessions
    #[arg(long, short = 'n', value_name = "N", default_value_t = 50)]
    pub limit: usize,
    /// One JSON object per line: id, cwd, title, createdAt, updatedAt, mode, model
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown
    Md,
    /// Self-contained HTML (no scripts) with rendered diffs
    Html,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The session id (see `tinycode sessions`)
    #[arg(value_name = "ID")]
    pub id: String,
    /// Output format (default: from the output file's extension, else Markdown)
    #[arg(long, short = 'f', value_enum)]
    pub format: Option<Format>,
    /// Write to this file instead of stdout
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl ExportArgs {
    /// The format asked for, else the output file's extension (`.html`/`.htm`), else Markdown.
    pub fn format(&self) -> Format {
        self.format.unwrap_or_else(|| {
            let html = self
                .output
                .as_ref()
                .and_then(|p| p.extension())
                .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
            if html { Format::Html } else { Format::Md }
        })
    }
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Write the completion script for `shell` to `out`.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    let mut command = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut command, "tinycode", out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("tinycode").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_takes_its_flags_anywhere_and_the_prompt_words_in_order() {
        let cli = parse(&["run", "--model", "m1", "fix", "the", "--yes", "bug", "--mode", "plan", "--json"])
            .unwrap();
        let Command::Run(run) = cli.command else { panic!("not run") };
        assert_eq!(run.prompt, vec!["fix", "the", "bug"]);
        assert_eq!(run.model.as_deref(), Some("m1"));
        assert_eq!(run.mode.as_deref(), Some("plan"));
        assert!(run.yes && run.json && !run.continue_last);
        assert_eq!(run.session, None);
    }

    #[test]
    fn an_unknown_flag_is_a_usage_error_with_a_suggestion_not_prompt_words() {
        let error = parse(&["run", "--moddel", "x", "hi"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::UnknownArgument);
        assert_eq!(error.exit_code(), 2);
        let text = error.render().to_string();
        assert!(text.contains("unexpected argument '--moddel'"), "{text}");
        assert!(text.contains("a similar argument exists: '--model'"), "{text}");
    }

    #[test]
    fn prompt_words_that_look_like_flags_pass_after_a_double_dash() {
        let Command::Run(run) = parse(&["run", "--", "--model", "x"]).unwrap().command else { panic!() };
        assert_eq!(run.prompt, vec!["--model", "x"]);
    }

    #[test]
    fn an_unknown_mode_is_rejected_with_the_valid_ones() {
        let error = parse(&["run", "--mode", "chaos", "hi"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
        let text = error.render().to_string();
        assert!(text.contains("[possible values: build, plan, accept-edits, yolo]"), "{text}");
    }

    #[test]
    fn continue_and_session_exclude_each_other() {
        let error = parse(&["run", "--continue", "--session", "sess_1", "hi"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::ArgumentConflict);
    }

    #[test]
    fn help_and_version_are_not_errors_and_every_subcommand_has_help() {
        for args in [vec!["--help"], vec!["--version"], vec!["help", "run"]] {
            let error = parse(&args).unwrap_err();
            assert!(!error.use_stderr(), "{args:?} must print to stdout");
            assert_eq!(error.exit_code(), 0, "{args:?}");
        }
        for sub in ["acp", "run", "sessions", "export", "completions", "serve", "setup", "doctor"] {
            let error = parse(&[sub, "--help"]).unwrap_err();
            assert_eq!(error.kind(), clap::error::ErrorKind::DisplayHelp, "{sub}");
            let text = error.render().to_string();
            assert!(text.contains("Usage: tinycode "), "{sub}: {text}");
        }
        let run_help = parse(&["run", "--help"]).unwrap_err().render().to_string();
        assert!(run_help.contains("Exit codes:\n  0  finished"), "{run_help}");
    }

    #[test]
    fn serve_listens_on_loopback_unless_told_otherwise() {
        let serve = |args: &[&str]| match parse(args).map(|c| c.command) {
            Ok(Command::Serve(s)) => Ok((s.listen.to_string(), s.allow_remote)),
            Ok(_) => panic!("not serve"),
            Err(e) => Err(e.render().to_string()),
        };
        assert_eq!(serve(&["serve"]), Ok(("127.0.0.1:7878".into(), false)));
        assert_eq!(serve(&["serve", "--listen", "localhost:9000"]), Ok(("127.0.0.1:9000".into(), false)));
        assert_eq!(serve(&["serve", "--listen=[::1]:9", "--allow-remote"]), Ok(("[::1]:9".into(), true)));
        let bad = serve(&["serve", "--listen", "devbox:7878"]).unwrap_err();
        assert!(bad.contains("`devbox:7878` is not ADDRESS:PORT"), "{bad}");
        let unknown = serve(&["serve", "--port", "1"]).unwrap_err();
        assert!(unknown.contains("unexpected argument '--port'"), "{unknown}");
    }

    #[test]
    fn acp_takes_the_setup_flag_editors_add_for_terminal_sign_in() {
        let Command::Acp(acp) = parse(&["acp", "--setup"]).unwrap().command else { panic!() };
        assert!(acp.setup);
        let Command::Acp(acp) = parse(&["acp"]).unwrap().command else { panic!() };
        assert!(!acp.setup);
        let Command::Doctor(doctor) = parse(&["doctor", "--cwd", "/tmp"]).unwrap().command else { panic!() };
        assert_eq!(doctor.cwd, Some(PathBuf::from("/tmp")));
    }

    #[test]
    fn the_export_format_follows_the_flag_then_the_file_extension() {
        let export = |args: &[&str]| match parse(args).unwrap().command {
            Command::Export(e) => e.format(),
            _ => panic!(),
        };
        assert_eq!(export(&["export", "s"]), Format::Md);
        assert_eq!(export(&["export", "s", "-o", "chat.HTML"]), Format::Html);
        assert_eq!(export(&["export", "s", "-o", "chat.html", "--format", "md"]), Format::Md);
        assert_eq!(export(&["export", "s", "--format", "html"]), Format::Html);
    }

    #[test]
    fn completion_scripts_name_the_subcommands_and_flags_for_each_shell() {
        for (shell, marker, flag) in [
            (clap_complete::Shell::Bash, "complete -F _tinycode", "--"),
            (clap_complete::Shell::Zsh, "#compdef tinycode", "--"),
            (clap_complete::Shell::Fish, "complete -c tinycode", "-l "),
        ] {
            let mut out = Vec::new();
            completions(shell, &mut out);
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains(marker), "{shell}: {text}");
            for word in ["sessions", "export", &format!("{flag}continue"), &format!("{flag}json")] {
                assert!(text.contains(word), "{shell} lacks {word}");
            }
        }
    }
}
