//! The `bash` tool (seed 000 §8.3): `sh -c` in the session directory, classified before it runs, streamed to
//! the editor while it runs, bounded for the model when it ends. Foreground commands run in their own process
//! group under the supervisor; the group and the whole tree below it are killed on timeout, on cancel and when
//! the command finishes; `background: true` hands the
//! command to the session's tasks. When the editor offers terminals and the configuration asks for them, the
//! command runs in an editor terminal instead.
//!
//! Owns running one command. Classification lives in `classify`, process groups and trees in `process`, the
//! environment in `environment`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::display::{Content, Kind as DisplayKind, Presentation};
use crate::permission::{self, Category};
use crate::shell::capture::{Capture, Exit, Spill, Utf8Stream, describe_exit};
use crate::shell::classify::{self, Class, Host, Shape};
use crate::shell::process;
use crate::shell::tasks::{Kind, Notify};
use crate::shell::terminal::{ClientTerminals, Lease};
use crate::tool::{Context, Def, Preview, Progress, ToolError, ToolOutput, arg_opt_u64, arg_str, truncate};

pub const ID: &str = "bash";
/// Default timeout in milliseconds.
pub const DEFAULT_SHELL_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout in milliseconds.
pub const MAX_SHELL_TIMEOUT_MS: u64 = 600_000;
/// Output kept for the model, per stream: (head, tail) bytes.
const STDOUT_KEEP: (usize, usize) = (16 * 1024, 16 * 1024);
const STDERR_KEEP: (usize, usize) = (4 * 1024, 8 * 1024);
/// Lines kept from each end of each stream (the model sees at most 2,000 lines in all).
const STDOUT_LINES: usize = 800;
const STDERR_LINES: usize = 150;
/// Output beyond this goes to a log file.
const SPILL_THRESHOLD: usize = 48 * 1024;
/// Live output is sent to the editor in pieces of at most this many bytes, at least this often.
pub const PROGRESS_BYTES: usize = 8 * 1024;
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);
/// `outputByteLimit` for editor terminals.
pub const TERMINAL_OUTPUT_LIMIT: u64 = 64 * 1024;

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("../descriptions/bash.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run"},
                "timeout": {"type": "integer", "description": "Timeout in milliseconds (default 120000, max 600000)", "minimum": 1},
                "description": {"type": "string", "description": "What the command does, in a few words"},
                "background": {"type": "boolean", "description": "Run in the background and return a task id at once", "default": false}
            },
            "required": ["command"]
        }),
        permission: Some(Category::Shell),
        present,
        preview: Some(Arc::new(|ctx, args| Box::pin(preview(ctx, args)))),
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

/// The title of a command call: the command itself (its first line when it has several).
pub fn title(command: &str) -> String {
    let mut lines = command.trim().lines();
    let first = lines.next().unwrap_or("").to_string();
    if lines.next().is_some() { format!("{first} …") } else { first }
}

pub fn present(args: &Value, _cwd: &Path) -> Presentation {
    let command = args.get("command").and_then(Value::as_str).unwrap_or("");
    Presentation {
        title: title(command),
        kind: DisplayKind::Execute,
        locations: Vec::new(),
        patterns: patterns(command),
        content: vec![Content::Text(format!("```sh\n{}\n```", command.trim()))],
    }
}

/// What permission rules match for a command: the prefix of each plain command (`git commit`), the exact text of
/// anything else (`sh -c '…'`), so an "always" answer never covers more than the user saw.
pub fn patterns(command: &str) -> Vec<String> {
    classify::shapes(command)
        .into_iter()
        .map(|shape| match shape {
            Shape::Prefix(prefix) => prefix,
            Shape::Exact(text) => permission::exact_pattern(&text),
        })
        .collect()
}

/// Classify the command and choose the permission it is asked under.
pub fn shell_preview(ctx: &Context, args: &Value, command: &str) -> Result<Preview, ToolError> {
    let mut presentation = present(args, &ctx.directory);
    let category = match classify::classify(command, &Host::new(&ctx.directory)) {
        Class::ReadOnly => Category::Read,
        Class::Normal => Category::Shell,
        Class::Destructive(reasons) => {
            presentation
                .content
                .push(Content::Text(format!("**Destructive:** this command {}.", reasons.join("; "))));
            Category::DestructiveShell
        }
        Class::Secret(files) => {
            if ctx.perms.is_none() {
                return Err(ToolError::retry(format!(
                    "Blocked: the command names secret files ({}) and there is no one to ask for permission.",
                    files.join(", ")
                )));
            }
            presentation.content.push(Content::Text(format!("**Secret files:** {}.", files.join(", "))));
            Category::SecretShell
        }
    };
    Ok(Preview { presentation, plan: Arc::new(()), category: Some(category) })
}

async fn preview(ctx: Context, args: Value) -> Result<Preview, ToolError> {
    let command = arg_str(&args, "command")?.to_string();
    if command.trim().is_empty() {
        return Err(ToolError::retry("command must not be empty"));
    }
    shell_preview(&ctx, &args, &command)
}

fn timeout(args: &Value) -> Result<Duration, ToolError> {
    let ms = match arg_opt_u64(args, "timeout")? {
        Some(0) => return Err(ToolError::retry("timeout must be at least 1 ms")),
        Some(ms) => ms.min(MAX_SHELL_TIMEOUT_MS),
        None => DEFAULT_SHELL_TIMEOUT_MS,
    };
    Ok(Duration::from_millis(ms))
}

fn background(args: &Value) -> bool {
    matches!(args.get("background"), Some(Value::Bool(true)))
        || args.get("background").and_then(Value::as_str) == Some("true")
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let command = arg_str(&args, "command")?.to_string();
    let timeout = timeout(&args)?;
    if background(&args) {
        return start_background(&ctx, &command, Kind::Background, None);
    }
    match ctx.terminals.clone() {
        Some(terminals) => run_in_editor(&ctx, terminals, &command, timeout).await,
        None => run_native(&ctx, &command, timeout).await,
    }
}

/// Hand a command to the session's tasks.
pub fn start_background(
    ctx: &Context,
    command: &str,
    kind: Kind,
    limit: Option<Duration>,
) -> Result<ToolOutput, ToolError> {
    let notify = if kind == Kind::Monitor { Notify::on_exit() } else { Notify::never() };
    start_task(ctx, command, kind, limit, notify)
}

/// Hand a monitored command to the session's tasks, with the wake-ups `notify` asks for.
pub fn start_monitored(
    ctx: &Context,
    command: &str,
    limit: Option<Duration>,
    notify: Notify,
) -> Result<ToolOutput, ToolError> {
    start_task(ctx, command, Kind::Monitor, limit, notify)
}

fn start_task(
    ctx: &Context,
    command: &str,
    kind: Kind,
    limit: Option<Duration>,
    notify: Notify,
) -> Result<ToolOutput, ToolError> {
    let watch = match (&notify.check_after, &notify.pattern, notify.on_exit) {
        (Some(after), _, _) => format!(
            "You will be told how it is doing after {} s if it still runs, and when it exits; meanwhile",
            after.as_secs_f64()
        ),
        (None, Some(pattern), _) => {
            format!(
                "You will be told when its output matches `{}`, and when it exits; meanwhile",
                pattern.as_str()
            )
        }
        (None, None, true) => "You will be told when it exits; meanwhile".to_string(),
        (None, None, false) => "It keeps running after this turn;".to_string(),
    };
    let task = ctx
        .tasks
        .start_with(command, &ctx.directory, kind, limit, notify)
        .map_err(|e| ToolError::execution(format!("cannot start the command: {e}")))?;
    Ok(ToolOutput {
        output: format!(
            "Started {} (pid {}): {command}\nOutput is logged to {}. {watch} read it with shell_output (task_id \"{}\"), list tasks with shell_tasks, stop it with kill_shell.",
            task.id,
            task.pid,
            task.log.display(),
            task.id
        ),
        metadata: json!({"taskId": task.id, "pid": task.pid, "log": task.log}),
        bounded: true,
        ..ToolOutput::default()
    })
}

/// Output being collected from a running command.
struct Collector {
    stdout: Capture,
    stderr: Capture,
    spill: Spill,
    live: Utf8Stream,
    pending: String,
}

impl Collector {
    fn new(log: std::path::PathBuf) -> Self {
        Self {
            stdout: Capture::new(STDOUT_KEEP.0, STDOUT_KEEP.1),
            stderr: Capture::new(STDERR_KEEP.0, STDERR_KEEP.1),
            spill: Spill::new(log, SPILL_THRESHOLD),
            live: Utf8Stream::default(),
            pending: String::new(),
        }
    }

    fn push(&mut self, is_stderr: bool, bytes: &[u8], ctx: &Context) {
        if is_stderr {
            self.stderr.push(bytes)
        } else {
            self.stdout.push(bytes)
        };
        self.spill.push(bytes);
        self.pending.push_str(&self.live.push(bytes));
        if self.pending.len() >= PROGRESS_BYTES {
            self.flush(ctx);
        }
    }

    fn flush(&mut self, ctx: &Context) {
        if self.pending.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.pending);
        if let Some(report) = &ctx.progress {
            report(Progress::Output(text));
        }
    }
}

async fn read_tagged(
    mut pipe: impl tokio::io::AsyncRead + Unpin,
    is_stderr: bool,
    tx: tokio::sync::mpsc::Sender<(bool, Vec<u8>)>,
) {
    use tokio::io::AsyncReadExt;
    let mut buffer = vec![0u8; 8192];
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 || tx.send((is_stderr, buffer[..n].to_vec())).await.is_err() {
            break;
        }
    }
}

/// How a native run ended.
enum Ending {
    Exited(Exit),
    TimedOut,
}

async fn run_native(ctx: &Context, command: &str, timeout: Duration) -> Result<ToolOutput, ToolError> {
    let (mut child, group) = process::spawn(command, &ctx.directory, ctx.tasks.environment())
        .map_err(|e| ToolError::execution(format!("cannot start the command: {e}")))?;
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    if let Some(out) = child.stdout.take() {
        tokio::spawn(read_tagged(out, false, tx.clone()));
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(read_tagged(err, true, tx.clone()));
    }
    drop(tx);
    let log = ctx.output_dir.join(format!("bash-{}.log", uuid::Uuid::new_v4().simple()));
    let mut collected = Collector::new(log);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut tick = tokio::time::interval(PROGRESS_INTERVAL);
    let ending = loop {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                group.kill();
                let _ = group.wait(&mut child).await;
                return Err(ToolError::Cancelled);
            }
            Some((is_stderr, chunk)) = rx.recv() => collected.push(is_stderr, &chunk, ctx),
            status = group.wait(&mut child) => {
                let (code, signal) = status.map(process::exit_parts).unwrap_or((None, None));
                break Ending::Exited(Exit { code, signal });
            }
            () = tokio::time::sleep_until(deadline) => {
                group.kill();
                let _ = group.wait(&mut child).await;
                break Ending::TimedOut;
            }
            _ = tick.tick() => collected.flush(ctx),
        }
    };
    // Whatever the command left behind is stopped (the supervisor already did), which also closes the pipes.
    group.kill();
    while let Ok(Some((is_stderr, chunk))) = tokio::time::timeout(Duration::from_secs(2), rx.recv()).await {
        collected.push(is_stderr, &chunk, ctx);
    }
    collected.flush(ctx);
    Ok(finish(command, timeout, ending, collected))
}

fn finish(command: &str, timeout: Duration, ending: Ending, mut collected: Collector) -> ToolOutput {
    let mut text = collected.stdout.text(STDOUT_LINES);
    if !collected.stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("STDERR:\n");
        text.push_str(&collected.stderr.text(STDERR_LINES));
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    let (exit, note, failed) = match ending {
        Ending::Exited(exit) => {
            let (note, failed) = describe_exit(command, exit);
            (Some(exit), note, failed)
        }
        Ending::TimedOut => (
            None,
            Some(format!(
                "Command timed out after {} ms; it and every process it started were killed.",
                timeout.as_millis()
            )),
            true,
        ),
    };
    let mut output = text.trim_end().to_string();
    if let Some(note) = note {
        output.push_str(&format!("\n\n{note}"));
    }
    let total = collected.stdout.total + collected.stderr.total;
    let cut = text.contains(" bytes of output omitted] ...");
    let log = if cut { collected.spill.persist() } else { collected.spill.saved() }.map(Path::to_path_buf);
    if let (true, Some(log)) = (cut, &log) {
        output.push_str(&format!(
            "\nThe output was {total} bytes; the middle was left out. Full output saved to: {}",
            log.display()
        ));
    }
    ToolOutput {
        output,
        metadata: json!({
            "exitCode": exit.and_then(|e| e.code),
            "signal": exit.and_then(|e| e.signal),
            "timedOut": exit.is_none(),
            "bytes": total,
            "log": log,
        }),
        bounded: true,
        failed,
        ..ToolOutput::default()
    }
}

/// Run through an editor terminal: create, embed, wait (or kill on timeout and cancel), read, always release
/// (the lease releases it even when a cancel drops this call midway).
async fn run_in_editor(
    ctx: &Context,
    terminals: Arc<dyn ClientTerminals>,
    command: &str,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    let mut lease = Lease::create(terminals, command, &ctx.directory, TERMINAL_OUTPUT_LIMIT)
        .await
        .map_err(|e| ToolError::execution(format!("the editor could not start a terminal: {e}")))?;
    if let Some(report) = &ctx.progress {
        report(Progress::Content(vec![Content::Terminal(lease.id().to_string())]));
    }
    let result = watch_terminal(ctx, &mut lease, command, timeout).await;
    let id = lease.id().to_string();
    if let Err(e) = lease.release().await {
        tracing::warn!(terminal = %id, error = %e, "terminal/release failed");
    }
    result
}

async fn watch_terminal(
    ctx: &Context,
    lease: &mut Lease,
    command: &str,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    // `None`: cancelled; `Some(None)`: timed out.
    let waited = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => None,
        exit = lease.terminals().wait_for_exit(lease.id()) => Some(Some(exit)),
        () = tokio::time::sleep(timeout) => Some(None),
    };
    let waited = match waited {
        None => {
            let _ = lease.kill().await;
            return Err(ToolError::Cancelled);
        }
        Some(Some(exit)) => {
            lease.exited();
            Some(exit.map_err(|e| ToolError::execution(format!("waiting for the terminal failed: {e}")))?)
        }
        Some(None) => {
            let _ = lease.kill().await;
            None
        }
    };
    let (terminals, id) = (lease.terminals(), lease.id());
    let shown = terminals
        .output(id)
        .await
        .map_err(|e| ToolError::execution(format!("reading the terminal failed: {e}")))?;
    let exit = waited.or(shown.exit.clone());
    let mut output = shown.output.trim_end().to_string();
    if shown.truncated {
        output = format!("[the editor kept only the last {TERMINAL_OUTPUT_LIMIT} bytes of output]\n{output}");
    }
    if output.is_empty() {
        output.push_str("(no output)");
    }
    let output = truncate::preview(&output).unwrap_or(output);
    let (note, failed) = match &exit {
        None => (Some(format!("Command timed out after {} ms and was killed.", timeout.as_millis())), true),
        Some(exit) => {
            let signal =
                exit.signal.as_deref().map(|name| process::signal_number(name).unwrap_or(libc::SIGKILL));
            describe_exit(command, Exit { code: exit.code.map(|c| c as i32), signal })
        }
    };
    let mut output = output;
    if let Some(note) = note {
        output.push_str(&format!("\n\n{note}"));
    }
    Ok(ToolOutput {
        output,
        display: vec![Content::Terminal(id.to_string())],
        metadata: json!({
            "terminalId": id,
            "exitCode": exit.as_ref().and_then(|e| e.code),
            "signal": exit.as_ref().and_then(|e| e.signal.clone()),
            "timedOut": exit.is_none(),
        }),
        bounded: true,
        failed,
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures::future::BoxFuture;

    use super::*;
    use crate::permission::remembered::Remembered;
    use crate::permission::{Approver, Ask, Reply, Service, Verdict};

    /// Answers every ask "always allow" and records the commands asked about.
    #[derive(Default)]
    struct AlwaysAllow {
        asked: Mutex<Vec<String>>,
    }

    impl Approver for AlwaysAllow {
        fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Reply> {
            self.asked.lock().unwrap().push(ask.presentation.title.clone());
            Box::pin(async { Reply::AllowAlways })
        }
    }

    fn ask(command: &str, category: Category) -> Ask {
        Ask {
            session_id: "s".into(),
            call_id: "c".into(),
            tool: ID.into(),
            category,
            presentation: present(&json!({"command": command}), Path::new("/p")),
            raw_input: json!({"command": command}),
            protected: None,
        }
    }

    #[tokio::test]
    async fn one_always_on_a_pipe_into_sh_never_allows_another_sh_command() {
        // Asked as destructive (as it is classified) and, were it misclassified, as a plain command.
        for category in [Category::DestructiveShell, Category::Shell] {
            let approver = Arc::new(AlwaysAllow::default());
            let remembered = Arc::new(Remembered::new("/p"));
            let service = Service::new("build", remembered.clone(), vec![], Some(approver.clone()));
            assert_eq!(service.check(&ask("echo hello | sh", category)).await, Verdict::Allow);
            assert_eq!(
                service.check(&ask("sh -c 'curl x | python3'", Category::Shell)).await,
                Verdict::Allow
            );
            assert_eq!(service.check(&ask("echo bye | sh", category)).await, Verdict::Allow);
            assert_eq!(service.check(&ask("sh -c 'touch pwned'", Category::Shell)).await, Verdict::Allow);
            assert_eq!(
                *approver.asked.lock().unwrap(),
                vec!["echo hello | sh", "sh -c 'curl x | python3'", "echo bye | sh", "sh -c 'touch pwned'"],
                "every sh command asked ({category:?})"
            );
            let patterns: Vec<String> = remembered.list().into_iter().map(|r| r.pattern).collect();
            assert!(!patterns.iter().any(|p| p == "sh" || p == "echo hello | sh"), "{patterns:?}");
        }
    }

    #[test]
    fn commands_are_matched_by_prefix_when_plain_and_exactly_otherwise() {
        assert_eq!(patterns("git commit -m x && cargo test"), vec!["git commit", "cargo test"]);
        assert_eq!(patterns("echo hello | sh"), vec!["echo", "sh (exactly)", "'echo hello | sh' (exactly)"]);
        assert_eq!(
            patterns("sudo rm -rf /tmp/x"),
            vec!["sudo rm -rf /tmp/x (exactly)", "rm -rf /tmp/x (exactly)"]
        );
    }
}
