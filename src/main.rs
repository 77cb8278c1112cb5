//! The `tinycode` command line: `tinycode acp` serves ACP on stdio; `tinycode run "<prompt>"` runs one prompt
//! headlessly. Logs go to stderr (filtered by `RUST_LOG`) or to `TINYCODE_LOG_FILE`; stdout belongs to ACP.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tinycode::acp;
use tinycode::config::Sources;

const USAGE: &str = "\
tinycode: a coding agent for editors that speak the Agent Client Protocol

USAGE:
    tinycode acp                       Serve ACP over stdio (what editors launch)
    tinycode run [--yes] [--cwd DIR] <prompt>
                                       Run one prompt headlessly; the answer goes to stdout
    tinycode serve --listen 127.0.0.1:PORT [--allow-remote]
                                       Serve ACP over WebSocket (token printed once to stderr)
    tinycode trust [--revoke] [DIR]    Let DIR's .tinycode/config.toml (as it is now) run commands, widen
                                       permissions or pick the server; --revoke stops trusting it
    tinycode --version | --help

ENVIRONMENT:
    TINYCODE_BASE_URL   (else OPENAI_BASE_URL, else https://api.openai.com/v1)
    TINYCODE_API_KEY    (else OPENAI_API_KEY)
    TINYCODE_MODEL      model name sent to the provider
    TINYCODE_DATA_DIR   where tinycode keeps its data
    RUST_LOG            log filter (logs go to stderr), TINYCODE_LOG_FILE to log to a file instead
";

fn say(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Start logging. `default` applies when `RUST_LOG` is not set.
fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false);
    let file = std::env::var_os("TINYCODE_LOG_FILE")
        .and_then(|path| std::fs::OpenOptions::new().create(true).append(true).open(path).ok());
    match file {
        Some(file) => builder.with_writer(std::sync::Mutex::new(file)).init(),
        None => builder.with_writer(std::io::stderr).init(),
    }
}

struct RunArgs {
    yes: bool,
    cwd: Option<PathBuf>,
    prompt: Vec<String>,
}

fn parse_run(args: &[String]) -> Result<RunArgs, String> {
    let mut run = RunArgs { yes: false, cwd: None, prompt: Vec::new() };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--yes" | "-y" => run.yes = true,
            "--cwd" => run.cwd = Some(iter.next().ok_or("--cwd needs a directory")?.into()),
            "--" => run.prompt.extend(iter.by_ref().cloned()),
            _ => run.prompt.push(arg.clone()),
        }
    }
    if run.prompt.is_empty() {
        return Err("run needs a prompt".into());
    }
    Ok(run)
}

/// Wait for SIGTERM (Unix) so the agent can shut its sessions down instead of dying mid-write.
async fn terminated() {
    #[cfg(unix)]
    {
        if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            term.recv().await;
            return;
        }
    }
    std::future::pending::<()>().await;
}

async fn serve_stdio() -> ExitCode {
    let serve = acp::serve(acp::stdio::transport(), Sources::from_process());
    tokio::select! {
        result = serve => match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!(error = %e, "ACP connection failed");
                ExitCode::FAILURE
            }
        },
        () = terminated() => {
            tracing::info!("SIGTERM: shutting down");
            ExitCode::SUCCESS
        }
    }
}

async fn run_headless(args: &[String]) -> ExitCode {
    let run = match parse_run(args) {
        Ok(run) => run,
        Err(e) => {
            say(&format!("error: {e}\n\n{USAGE}"));
            return ExitCode::from(2);
        }
    };
    let cwd = match run.cwd.map(Ok).unwrap_or_else(std::env::current_dir).and_then(std::fs::canonicalize) {
        Ok(cwd) => cwd,
        Err(e) => {
            say(&format!("error: cannot use the working directory: {e}\n"));
            return ExitCode::from(2);
        }
    };
    let options = acp::headless::Options { prompt: run.prompt.join(" "), cwd, yes: run.yes };
    ExitCode::from(acp::headless::run(Sources::from_process(), options).await as u8)
}

fn trust(args: &[String]) -> ExitCode {
    let revoke = args.iter().any(|a| a == "--revoke");
    let dir = args.iter().find(|a| *a != "--revoke").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    match tinycode::config::trust::command(&Sources::from_process(), &dir, revoke) {
        Ok(text) => {
            say(&format!("{text}\n"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            say(&format!("error: {e}\n"));
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    // The hidden supervisor mode every command runs under; it needs no runtime and must start fast.
    if let Some(code) = tinycode::shell::supervisor::run_if_requested() {
        return ExitCode::from(code);
    }
    // Orphans of commands (daemons, `setsid`) are re-parented here rather than to init, so they can be killed.
    tinycode::shell::tree::become_subreaper();
    if let Some(executable) = supervisor_executable() {
        tinycode::shell::process::use_supervisor(executable);
    }
    agent()
}

/// This very binary, even if it was replaced or deleted since it started.
fn supervisor_executable() -> Option<PathBuf> {
    if cfg!(target_os = "linux") { Some(PathBuf::from("/proc/self/exe")) } else { None }
}

#[tokio::main]
async fn agent() -> ExitCode {
    tinycode::shell::process::kill_children_on_panic();
    let code = dispatch().await;
    // Nothing this process started may outlive it.
    tinycode::shell::process::kill_every_descendant();
    code
}

async fn dispatch() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("acp") => {
            // The SDK logs every error response it sends at WARN; those are answers, not faults.
            init_logging("warn,agent_client_protocol=error");
            serve_stdio().await
        }
        Some("run") => {
            // Headless output is for people: errors are printed by the run itself.
            init_logging("off");
            run_headless(&args[1..]).await
        }
        Some("serve") => {
            init_logging("info,agent_client_protocol=error");
            acp::serve::command(&args[1..]).await
        }
        Some("trust") => trust(&args[1..]),
        Some("--version" | "-V") => {
            say(&format!("tinycode {}\n", env!("CARGO_PKG_VERSION")));
            ExitCode::SUCCESS
        }
        Some("--help" | "-h" | "help") => {
            say(USAGE);
            ExitCode::SUCCESS
        }
        _ => {
            say(USAGE);
            ExitCode::from(2)
        }
    }
}
