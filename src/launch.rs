//! What the `tinycode` process does from `main` to its exit code: on Unix the part of Rust's runtime start it
//! needs ([`start`]: the binary has its own C `main`), the allocator's settings, logging, the command line (`cli`,
//! clap) and one function per subcommand. Help and version go to stdout, usage errors to stderr with
//! exit code 2; `--help` lists the exit codes. Logs go to stderr (filtered by `RUST_LOG`) or to
//! `TINYCODE_LOG_FILE`; in `acp`, stdout belongs to ACP.
//!
//! It lives in the library, not in `src/main.rs`, so that every function the binary runs is compiled into the
//! library crate: the release build's link order (`packaging/link-order.txt`) names functions by symbol, and the
//! names of the library's functions can be read from its build artefacts before the binary is linked
//! (`benches/link_order.py --rebase`); a binary crate's cannot. Touches nothing but what it dispatches to.
//!
//! To add a subcommand: one variant in `cli::Command`, one arm in `dispatch`, one function here.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Parser;

use crate::acp;
use crate::cli::{self, Cli, Command, Exit};
use crate::config::Sources;

fn say(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// An error line on stderr and its exit code.
fn fail(exit: Exit, message: &str) -> Exit {
    say(&format!("error: {message}\n"));
    exit
}

/// Start logging. `default` applies when `RUST_LOG` is not set.
fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false);
    let file = std::env::var_os("TINYCODE_LOG_FILE")
        .and_then(|path| crate::private::options().create(true).append(true).open(path).ok());
    match file {
        Some(file) => builder.with_writer(std::sync::Mutex::new(file)).init(),
        None => builder.with_writer(std::io::stderr).init(),
    }
}

/// Report every panic through the log, as other errors are, instead of the default hook's raw message on stderr
/// (which `tinycode run --json` and editors would show as garbage). Most panics are caught (the tool boundary turns
/// one into its call's error, the prompt handler into a failed turn) and their consequence is logged where they
/// are caught; this adds where it happened. Before logging starts, or on the main thread (the panic ends the
/// process), one `error:` line says so, as for any fatal error.
fn log_panics() {
    let main = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        let fatal = std::thread::current().id() == main;
        let backtrace = std::backtrace::Backtrace::capture();
        let backtrace =
            (backtrace.status() == std::backtrace::BacktraceStatus::Captured).then(|| backtrace.to_string());
        report_panic(&panic_text(info), backtrace.as_deref(), fatal);
    }));
}

/// A panic's message and where it happened, one line.
fn panic_text(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    match info.location() {
        Some(at) => format!("{message} (at {}:{})", at.file(), at.line()),
        None => message,
    }
}

/// Log a panic (with the backtrace `RUST_BACKTRACE` asked for); a line on stderr only when it ends the process or
/// nothing logs yet.
fn report_panic(text: &str, backtrace: Option<&str>, fatal: bool) {
    let logging = tracing::dispatcher::get_default(|d| !d.is::<tracing::subscriber::NoSubscriber>());
    if logging {
        tracing::error!(panic = %text, backtrace, fatal, "a panic");
    }
    if fatal || !logging {
        say(&format!("error: internal error: {text}\n"));
    }
}

/// The allocator is glibc's, with one arena and a fixed 128 KB mmap threshold (so large buffers go back to the
/// system when freed): measured against the default, two arenas, jemalloc and mimalloc in `benches/memory.py`
/// (figures in benches/README.md). Set before any thread starts; `MALLOC_ARENA_MAX` / `MALLOC_MMAP_THRESHOLD_`
/// in the environment still win.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for (variable, parameter, value) in [
        ("MALLOC_ARENA_MAX", libc::M_ARENA_MAX, 1),
        ("MALLOC_MMAP_THRESHOLD_", libc::M_MMAP_THRESHOLD, 128 * 1024),
    ] {
        if std::env::var_os(variable).is_none() {
            // SAFETY: `mallopt` only changes allocator settings; no thread allocates concurrently yet.
            unsafe { libc::mallopt(parameter, value) };
        }
    }
}

/// The process on Unix, from the C runtime's `main` (`src/main.rs`) to its exit: what Rust's runtime start does
/// that this process needs, then [`main`]. SIGPIPE is ignored (a write to a closed pipe is an error to handle, not
/// death; std still restores the default in every child it spawns), a closed standard stream is opened on
/// `/dev/null` (else the next file opened would take its number), a panic out of `main` exits with 101 after the
/// panic hook has run, and the exit flushes stdout. Left out, on purpose: the stack-overflow handler (an overflow
/// still ends the process, by SIGSEGV instead of a message) and the main thread's name in panic messages.
#[cfg(unix)]
pub fn start() -> std::ffi::c_int {
    open_standard_streams();
    // SAFETY: changes this process's disposition of one signal; no other thread exists yet.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = std::panic::catch_unwind(main).unwrap_or(101);
    std::process::exit(i32::from(code))
}

/// Open `/dev/null` on each of stdin, stdout and stderr that is closed, as Rust's runtime start does.
#[cfg(unix)]
fn open_standard_streams() {
    let mut streams = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
    // SAFETY: three valid `pollfd`s for the duration of the call, and a zero timeout.
    if unsafe { libc::poll(streams.as_mut_ptr(), 3, 0) } < 0 {
        return;
    }
    for stream in streams.iter().filter(|s| s.revents & libc::POLLNVAL != 0) {
        // SAFETY: a constant NUL-terminated path; the lowest free descriptor, this one, is the one opened.
        let opened = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        if opened != stream.fd {
            std::process::abort();
        }
    }
}

/// The whole process and its exit code, on every platform.
pub fn main() -> u8 {
    // The hidden supervisor mode every command runs under; it needs no runtime and must start fast.
    if let Some(code) = crate::shell::supervisor::run_if_requested() {
        return code;
    }
    log_panics();
    tune_allocator();
    // Help and version print to stdout and exit 0; usage errors print to stderr and exit 2.
    let cli = parse();
    // `tinycode acp`: stdin is read from now on, and the editor's `initialize` answered before the rest starts.
    let stdio = matches!(&cli.command, Command::Acp(args) if !args.setup).then(start_stdio);
    // Orphans of commands (daemons, `setsid`) are re-parented here rather than to init, so they can be killed.
    crate::shell::tree::become_subreaper();
    if let Some(executable) = supervisor_executable() {
        crate::shell::process::use_supervisor(executable);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return fail(Exit::Failed, &format!("cannot start the runtime: {e}")) as u8,
    };
    crate::shell::process::kill_children_on_panic();
    // Boxed: every command's future is in it, and on the stack it would be this frame's 24 KB.
    let exit = runtime.block_on(Box::pin(dispatch(cli, stdio)));
    // Nothing this process started may outlive it.
    crate::shell::process::kill_every_descendant();
    exit as u8
}

/// The command line. `tinycode acp` alone, the command editors run, is recognised without building the whole
/// parser (a third of a millisecond of every start); anything else goes through clap.
fn parse() -> Cli {
    let mut args = std::env::args_os().skip(1);
    if let (Some(first), None) = (args.next(), args.next())
        && first == "acp"
    {
        return Cli { command: Command::Acp(cli::AcpArgs { setup: false }) };
    }
    Cli::parse()
}

/// This very binary, even if it was replaced or deleted since it started.
fn supervisor_executable() -> Option<PathBuf> {
    if cfg!(target_os = "linux") { Some(PathBuf::from("/proc/self/exe")) } else { None }
}

async fn dispatch(cli: Cli, stdio: Option<Result<Stdio, Exit>>) -> Exit {
    match cli.command {
        // `--setup`: the terminal sign-in an editor runs (its configured command plus this argument).
        Command::Acp(args) if args.setup => setup().await,
        Command::Acp(_) => match stdio.unwrap_or_else(start_stdio) {
            Ok(stdio) => serve_stdio(stdio).await,
            Err(exit) => exit,
        },
        Command::Run(args) => run(args).await,
        Command::Sessions(args) => sessions(args).await,
        Command::Export(args) => export(args).await,
        Command::Trust(args) => trust(args),
        Command::Serve(args) => {
            init_logging("info,agent_client_protocol=error");
            match acp::serve::Options::try_from(&args) {
                Ok(options) => acp::serve::command(options).await,
                Err(e) => fail(Exit::Failed, &e),
            }
        }
        Command::Setup => setup().await,
        Command::Doctor(args) => doctor(args).await,
        Command::Completions(args) => {
            let mut out = Vec::new();
            cli::completions(args.shell, &mut out);
            print(&String::from_utf8_lossy(&out));
            Exit::Done
        }
    }
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

/// Said once on stderr when `tinycode acp` is started by hand in a terminal, which would otherwise look hung.
const WAITING: &str = "tinycode acp: waiting for an editor to speak ACP on stdin; editors start this command themselves (agent command `tinycode acp`, see editors/ in the source); try `tinycode run \"<prompt>\"` for a one-shot prompt; Ctrl-D quits\n";

/// The stdio transport of `tinycode acp` with the user's configuration and what started with it: started before
/// the async runtime, so the editor's `initialize` is answered first (see `acp::early`) and the session database
/// opens beside the rest of the start.
type Stdio = (acp::stdio::Transport<acp::stdio::Outgoing, acp::stdio::Incoming>, Sources, acp::Started);

/// How long the start waits, after answering `initialize`, for the editor's next line to be answered first.
const SECOND_LINE_GRACE: std::time::Duration = std::time::Duration::from_millis(1);

fn start_stdio() -> Result<Stdio, Exit> {
    let sources = Sources::from_process();
    let transport = acp::stdio::transport(Some(sources.clone()));
    // The editor's next line (its first `session/new`) is answered by the stdin reader as soon as it arrives; on a
    // machine with few cores the rest of the start would take the CPU that answer needs, so it goes first when it
    // comes at once. Nothing else waits meanwhile: the SDK, which serves every other request, is not started yet.
    if let Some(handover) = transport.as_ref().ok().and_then(|t| t.handover()) {
        handover.wait_second_line(SECOND_LINE_GRACE);
    }
    // The SDK logs every error response it sends at WARN; those are answers, not faults.
    init_logging("warn,agent_client_protocol=error");
    if std::io::stdin().is_terminal() {
        say(WAITING);
    }
    // The session database opens on its own thread from now on, beside the rest of the start.
    let tuning = crate::store::Tuning::from_var(sources.var(crate::store::BUSY_TIMEOUT_VAR));
    let store =
        crate::store::Store::open_in_background(crate::store::database_path(&sources.data_dir()), tuning);
    match transport {
        Ok(transport) => {
            let started = acp::Started { early: transport.handover(), store: Some(store) };
            Ok((transport, sources, started))
        }
        Err(e) => Err(fail(Exit::Failed, &format!("cannot start the stdio threads: {e}"))),
    }
}

async fn serve_stdio((transport, sources, started): Stdio) -> Exit {
    let serve = acp::serve(transport, sources, started);
    tokio::select! {
        result = serve => match result {
            Ok(()) => Exit::Done,
            Err(e) => {
                tracing::error!(error = %e, "ACP connection failed");
                Exit::Failed
            }
        },
        () = terminated() => {
            tracing::info!("SIGTERM: shutting down");
            Exit::Done
        }
    }
}

async fn run(args: cli::RunArgs) -> Exit {
    // Headless output is for people (or scripts with --json): errors are printed by the run itself.
    init_logging("off");
    let sources = Sources::from_process();
    let (resume, cwd) = match cli::run::stored_session(&sources, &args).await {
        Ok(found) => found,
        Err((exit, message)) => return fail(exit, &message),
    };
    let prompt = match cli::run::prompt_text(&args.prompt) {
        Ok(prompt) => prompt,
        Err(message) => return fail(Exit::Usage, &message),
    };
    let options = acp::headless::Options {
        prompt,
        cwd,
        yes: args.yes,
        json: args.json,
        model: args.model,
        mode: args.mode,
        resume,
    };
    acp::headless::run(sources, options).await
}

async fn open_store(data_dir: &Path) -> Result<Option<crate::store::Store>, Exit> {
    let database = crate::store::database_path(data_dir);
    cli::sessions::open_existing(&database).map_err(|e| fail(Exit::Failed, &e.to_string()))
}

async fn sessions(args: cli::SessionsArgs) -> Exit {
    let cwd = if args.all {
        None
    } else {
        match cli::run::absolute_dir(args.cwd) {
            Ok(cwd) => Some(cwd),
            Err(message) => return fail(Exit::Usage, &message),
        }
    };
    let store = match open_store(&Sources::from_process().data_dir()).await {
        Ok(store) => store,
        Err(exit) => return exit,
    };
    let rows = match &store {
        Some(store) => match cli::sessions::newest(store, cwd.as_deref(), args.limit).await {
            Ok(rows) => match cli::sessions::with_children(store, rows).await {
                Ok(listed) => listed,
                Err(e) => return fail(Exit::Failed, &e.to_string()),
            },
            Err(e) => return fail(Exit::Failed, &e.to_string()),
        },
        None => Vec::new(),
    };
    if rows.is_empty() {
        if !args.json {
            let place = cwd.map(|c| format!(" for {}", c.display())).unwrap_or_default();
            say(&format!("no sessions stored{place} (--all lists every project)\n"));
        }
        return Exit::Done;
    }
    print(&if args.json { cli::sessions::json_lines(&rows) } else { cli::sessions::table(&rows, args.all) });
    Exit::Done
}

async fn export(args: cli::ExportArgs) -> Exit {
    let missing = || {
        fail(Exit::Failed, &format!("no stored session {} (`tinycode sessions --all` lists them)", args.id))
    };
    let store = match open_store(&Sources::from_process().data_dir()).await {
        Ok(Some(store)) => store,
        Ok(None) => return missing(),
        Err(exit) => return exit,
    };
    let (row, messages) = match (store.session(&args.id).await, store.messages(&args.id).await) {
        (Ok(Some(row)), Ok(messages)) => (row, messages),
        (Ok(None), _) => return missing(),
        (Err(e), _) | (_, Err(e)) => return fail(Exit::Failed, &e.to_string()),
    };
    let entries = cli::export::entries(&messages);
    let document = match args.format() {
        cli::Format::Md => cli::export::markdown(&row, &entries),
        cli::Format::Html => cli::export::html(&row, &entries),
    };
    match &args.output {
        None => print(&document),
        Some(path) => {
            if let Err(e) = std::fs::write(path, document) {
                return fail(Exit::Failed, &format!("cannot write {}: {e}", path.display()));
            }
        }
    }
    Exit::Done
}

/// `tinycode trust [--revoke] [DIR]`: record (or withdraw) the user's trust in DIR's project settings as they are now.
fn trust(args: cli::TrustArgs) -> Exit {
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    match crate::config::trust::command(&Sources::from_process(), &dir, args.revoke) {
        Ok(text) => {
            print(&format!("{text}\n"));
            Exit::Done
        }
        Err(e) => fail(Exit::Failed, &e.to_string()),
    }
}

/// `tinycode setup`: the interactive sign-in (also what editors run as their terminal auth method).
async fn setup() -> Exit {
    exit_of(crate::setup::command(Sources::from_process()).await)
}

/// `tinycode doctor [--cwd DIR]`: the effective configuration and a check of every provider.
async fn doctor(args: cli::DoctorArgs) -> Exit {
    let cwd = args.cwd.unwrap_or_else(|| PathBuf::from("."));
    exit_of(crate::setup::doctor::command(Sources::from_process(), &cwd).await)
}

fn exit_of(code: u8) -> Exit {
    match code {
        0 => Exit::Done,
        2 => Exit::Usage,
        _ => Exit::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a subscriber on this thread was given, as text.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_caught_panic_is_logged_with_its_message_and_place_and_not_printed_raw() {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .without_time()
            .with_target(false)
            .finish();
        let previous = std::panic::take_hook();
        // The hook is the process's: a panic of this thread only is reported, everything else goes on as before.
        let this = std::thread::current().id();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().id() == this {
                report_panic(&panic_text(info), None, false);
            } else {
                previous(info);
            }
        }));
        let line = line!() + 2;
        let caught = tracing::subscriber::with_default(subscriber, || {
            std::panic::catch_unwind(|| panic!("byte index 2 is not a char boundary"))
        });
        let _ = std::panic::take_hook();
        assert!(caught.is_err());
        let logged = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            logged,
            format!(
                "ERROR a panic panic=byte index 2 is not a char boundary (at src/launch.rs:{line}) fatal=false\n"
            )
        );
    }
}
