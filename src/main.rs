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
    tinycode trust [--revoke] [DIR]    Let DIR's .tinycode/config.toml (as it is now) run commands, widen
                                       permissions or pick the server; --revoke stops trusting it
    tinycode setup                     Choose a model provider, enter its key, check it, save it
    tinycode doctor [--cwd DIR]        Show the effective configuration and check every provider
    tinycode --version | --help

ENVIRONMENT:
    TINYCODE_PROVIDER   a provider name (anthropic, openai, openrouter, ollama, …) or kind
    TINYCODE_BASE_URL   the provider's URL; TINYCODE_API_KEY its key
    TINYCODE_MODEL      model (NAME/model when several providers are configured)
    ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY, DEEPSEEK_API_KEY, GEMINI_API_KEY, …
                        used when nothing else is configured (see the README's Providers section)
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

async fn doctor(args: &[String]) -> ExitCode {
    let cwd = match args {
        [flag, dir] if flag == "--cwd" => PathBuf::from(dir),
        [] => PathBuf::from("."),
        _ => {
            say(&format!("error: doctor takes only --cwd DIR\n\n{USAGE}"));
            return ExitCode::from(2);
        }
    };
    ExitCode::from(tinycode::setup::doctor::command(Sources::from_process(), &cwd).await)
}

#[tokio::main]
async fn main() -> ExitCode {
    tinycode::shell::process::kill_children_on_panic();
    let code = dispatch().await;
    // Nothing this process started may outlive it.
    tinycode::shell::process::kill_all();
    code
}

async fn dispatch() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        // `--setup`: the terminal sign-in an editor runs (its configured command plus this argument).
        Some("acp") if args.iter().any(|a| a == tinycode::acp::auth::SETUP_ARG) => {
            ExitCode::from(tinycode::setup::command(Sources::from_process()).await)
        }
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
        Some("trust") => trust(&args[1..]),
        Some("setup") => ExitCode::from(tinycode::setup::command(Sources::from_process()).await),
        Some("doctor") => doctor(&args[1..]).await,
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
