//! Child processes and everything they start: spawning `sh -c` as the leader of a new process group, under the
//! supervisor ([`super::supervisor`]) when one is installed (the real binary on Linux), a registry of every live
//! group this process created (so nothing is left behind on exit, SIGTERM or panic), polite signals, and killing
//! a command's whole tree (the walk in [`super::tree`], then the group) on cancel, timeout and close.
//!
//! Owns signals. It never signals a process group it did not create, nor a process outside a tree it started.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::environment::Environment;
use super::tree;

/// Process groups created by this process and not yet known to be gone.
static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// How long [`Group::finish`] gives a supervisor told to finish before its watchdog kills the tree itself.
const SUPERVISOR_PATIENCE: Duration = Duration::from_millis(200);

/// The executable that runs the supervisor mode, once installed.
static SUPERVISOR: OnceLock<PathBuf> = OnceLock::new();

fn groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    match GROUPS.lock() {
        Ok(groups) => groups,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Start every later command under the supervisor mode of `executable` (the tinycode binary). Linux only: the
/// supervisor relies on `PR_SET_CHILD_SUBREAPER` and `PR_SET_PDEATHSIG`; elsewhere commands keep running directly
/// in their process group. The first installation wins. Returns whether supervision is now in use.
pub fn use_supervisor(executable: PathBuf) -> bool {
    if cfg!(target_os = "linux") {
        let _ = SUPERVISOR.set(executable);
    }
    SUPERVISOR.get().is_some()
}

/// Send `signal` to every process of group `pgid`. Only groups in the registry are signalled.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 || !groups().contains(&pgid) {
        return false;
    }
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid addresses the process group.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Does group `pgid` still have a member (zombies count until reaped)?
pub fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

fn own_pid() -> i32 {
    std::process::id() as i32
}

/// Kill every group this process created, with the trees below their leaders (shutdown, panic).
pub fn kill_all() {
    let all: Vec<i32> = groups().iter().copied().collect();
    for pgid in all {
        // Walk only below a leader that is still our child: a pid we reaped may since name someone else's process.
        if tree::parent(pgid) == Some(own_pid()) {
            tree::kill_tree(pgid);
        }
        signal_group(pgid, libc::SIGKILL);
    }
}

/// Kill everything this process ever started, including orphans it adopted as a subreaper (at exit).
pub fn kill_every_descendant() {
    kill_all();
    tree::kill_descendants(own_pid());
}

/// Install a panic hook that kills every child group before the default hook runs, when the panic ends the
/// process: a panic on the calling thread (the main thread, which runs the connection). A panic anywhere else
/// ends only its own work (the tool boundary turns it into that call's error, tokio into a failed task), and
/// the groups that work owned are killed as it unwinds; every other session's commands keep running.
pub fn kill_children_on_panic() {
    let main = std::thread::current().id();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == main {
            kill_all();
        }
        previous(info);
    }));
}

/// Owns a command's process group and the tree below its leader: dropping it kills whatever is left.
#[derive(Debug)]
pub struct Group {
    /// The group leader's pid (the supervisor's, or the shell's when there is none), which is also the group id.
    pub pgid: i32,
    /// The leader is the supervisor: polite signals go to it and it passes them on.
    supervised: bool,
    /// The leader has been waited for; its pid may now name another process, so the tree is no longer walked.
    reaped: AtomicBool,
    /// A supervisor was told to finish (once is enough).
    finishing: AtomicBool,
}

impl Group {
    /// Record that the leader's exit status was collected (by [`Group::wait`] or by the caller).
    pub fn mark_reaped(&self) {
        self.reaped.store(true, Ordering::Release);
    }

    /// Wait for the leader `child` to exit, and record that it was reaped.
    pub async fn wait(&self, child: &mut tokio::process::Child) -> std::io::Result<std::process::ExitStatus> {
        let status = child.wait().await;
        self.mark_reaped();
        status
    }

    /// Ask politely (SIGTERM, SIGINT…): the supervisor passes the signal to every process below it; without one the
    /// group and the tree below the shell get it directly.
    pub fn signal(&self, signal: i32) -> bool {
        if !groups().contains(&self.pgid) {
            return false;
        }
        if self.supervised {
            // SAFETY: kill(2) on the supervisor, which this process started and has not reaped.
            return !self.reaped.load(Ordering::Acquire) && unsafe { libc::kill(self.pgid, signal) == 0 };
        }
        // The group, plus whatever below the shell left it (`setsid`), each signalled once.
        if !self.reaped.load(Ordering::Acquire) {
            for pid in tree::descendants(self.pgid) {
                if tree::group(pid).is_some_and(|g| g != self.pgid) {
                    // SAFETY: kill(2) on a process found below our own child.
                    unsafe { libc::kill(pid, signal) };
                }
            }
        }
        signal_group(self.pgid, signal)
    }

    /// SIGKILL the whole tree below the leader, then the leader. Under a supervisor: see [`Group::finish`]. Without
    /// one, the shell is stopped first (so it cannot react) and killed with its group.
    pub fn kill(&self) {
        if !self.reaped.load(Ordering::Acquire) && groups().contains(&self.pgid) {
            if self.supervised {
                self.finish();
                return;
            }
            tree::kill_tree(self.pgid);
        }
        signal_group(self.pgid, libc::SIGKILL);
    }

    /// End a supervised tree without waiting for it: one pass of SIGKILL over what is below the supervisor now (a
    /// process with SIGKILL pending never runs its own code again, nor forks), then the finish signal. The
    /// supervisor is the tree's reaper, so nothing can leave it: it kills what that pass could not see (forked
    /// meanwhile), reaps everything and exits by SIGKILL. Freezing and killing the tree from here as well, and
    /// waiting for each pass to take effect, was most of what a cancel cost (4 ms instead of well under 1 ms).
    /// In case the command stopped or killed its supervisor, a watchdog checks after [`SUPERVISOR_PATIENCE`] and
    /// then kills the tree from here; without a runtime to run it, the thorough kill happens at once.
    fn finish(&self) {
        if self.finishing.swap(true, Ordering::AcqRel) {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            tree::signal_descendants(self.pgid, libc::SIGKILL);
            // SAFETY: kill(2) on the supervisor, which this process started and has not reaped.
            unsafe { libc::kill(self.pgid, super::supervisor::FINISH_SIGNAL) };
        }
        let (pgid, started) = (self.pgid, tree::started(self.pgid));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(SUPERVISOR_PATIENCE).await;
                    let _ = tokio::task::spawn_blocking(move || finish_stalled(pgid, started)).await;
                });
            }
            Err(_) => finish_stalled(pgid, started),
        }
    }

    /// Wait up to `within` until no process of the group is alive any more (a killed process still runs until
    /// the kernel has scheduled its exit). Returns whether none is.
    pub async fn gone(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            // Reading /proc is file I/O: off the runtime's threads.
            let pgid = self.pgid;
            let live =
                tokio::task::spawn_blocking(move || tree::live_members(pgid)).await.unwrap_or_default();
            if live.is_empty() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// A polite signal, up to `grace` to take effect, then [`Group::kill`]. Returns true if killing was needed.
    pub async fn terminate(&self, grace: Duration) -> bool {
        self.signal(libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + grace;
        while tokio::time::Instant::now() < deadline {
            if !group_alive(self.pgid) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill();
        true
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
        groups().remove(&self.pgid);
    }
}

/// The watchdog of [`Group::finish`]: a supervisor still running (neither reaped nor a zombie), still this
/// process's child and started when it was (so its pid names no one else) has its tree killed from here, then
/// dies by SIGKILL itself.
fn finish_stalled(supervisor: i32, started: Option<u64>) {
    let same = started.is_some() && tree::started(supervisor) == started;
    if same && tree::alive(supervisor) && tree::parent(supervisor) == Some(own_pid()) {
        tracing::warn!(pid = supervisor, "a supervisor did not finish; killing its tree from the agent");
        tree::kill_tree(supervisor);
    }
}

/// Start `sh -c <command>` in `cwd` with exactly the environment `env`, as the leader of a new process group (or
/// under the supervisor, which leads the group), with piped output and no stdin. If the supervisor cannot be
/// started, the command runs directly (and a warning is logged).
pub fn spawn(
    command: &str,
    cwd: &Path,
    env: &Environment,
) -> std::io::Result<(tokio::process::Child, Group)> {
    let direct = || {
        let mut builder = tokio::process::Command::new("sh");
        builder.arg("-c").arg(command);
        builder
    };
    start_group(OsStr::new(command), direct, cwd, env, false)
}

/// Start `program` with `args` (no shell of the caller's) in `cwd` with exactly the environment `env`, with stdin,
/// stdout and stderr piped: a long-lived server the caller talks to (a language server, an MCP server). It runs
/// as commands do: under the supervisor when one is installed (`exec`'d by its shell, so the server is the
/// supervisor's child and everything it starts stays below the supervisor, `setsid` and double forks included),
/// else as the leader of a new process group. Dropping the [`Group`] kills all of it.
pub fn spawn_server(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &Environment,
) -> std::io::Result<(tokio::process::Child, Group)> {
    // A missing or unreadable program says so in the system's words, not as the supervisor's shell failing.
    std::fs::metadata(cwd.join(program))?;
    let direct = || {
        let mut builder = tokio::process::Command::new(program);
        builder.args(args);
        builder
    };
    start_group(&exec_line(program, args), direct, cwd, env, true)
}

/// `exec 'program' 'arg'…` for `sh -c`: every word single-quoted (a quote inside becomes `'\''`), byte for byte.
pub fn exec_line(program: &Path, args: &[String]) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    let mut line = b"exec".to_vec();
    let words =
        std::iter::once(program.as_os_str().as_encoded_bytes()).chain(args.iter().map(|a| a.as_bytes()));
    for word in words {
        line.extend_from_slice(b" '");
        for &byte in word {
            match byte {
                b'\'' => line.extend_from_slice(b"'\\''"),
                byte => line.push(byte),
            }
        }
        line.push(b'\'');
    }
    OsString::from_vec(line)
}

/// Start `shell_line` under the supervisor when one is installed, else `direct()`, as the leader of a new process
/// group registered here; stdin is a pipe when `piped_stdin`, else nothing.
fn start_group(
    shell_line: &OsStr,
    direct: impl FnOnce() -> tokio::process::Command,
    cwd: &Path,
    env: &Environment,
    piped_stdin: bool,
) -> std::io::Result<(tokio::process::Child, Group)> {
    let stdin_for = |piped: bool| if piped { Stdio::piped() } else { Stdio::null() };
    let supervised = SUPERVISOR.get().and_then(|executable| {
        let mut builder = tokio::process::Command::new(executable);
        builder.arg(super::supervisor::MODE).arg(own_pid().to_string()).arg(shell_line);
        start(builder, cwd, env, stdin_for(piped_stdin), false)
            .map_err(
                |e| tracing::warn!(error = %e, "cannot start the command under the supervisor; trying it directly"),
            )
            .ok()
    });
    let (child, supervised) = match supervised {
        Some(child) => (child, true),
        None => (start(direct(), cwd, env, stdin_for(piped_stdin), true)?, false),
    };
    let pgid = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .ok_or_else(|| std::io::Error::other("the command exited before it could be tracked"))?;
    groups().insert(pgid);
    Ok((child, Group { pgid, supervised, reaped: AtomicBool::new(false), finishing: AtomicBool::new(false) }))
}

/// Start `builder` as the leader of a new process group. `kill_on_drop`: a dropped child is killed; not for a
/// supervisor, which must outlive its [`Group`] long enough to kill and reap its tree (the runtime reaps it).
fn start(
    mut builder: tokio::process::Command,
    cwd: &Path,
    env: &Environment,
    stdin: Stdio,
    kill_on_drop: bool,
) -> std::io::Result<tokio::process::Child> {
    env.apply(&mut builder);
    builder
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(kill_on_drop)
        .spawn()
}

/// Track a process group this process created elsewhere (an MCP server), so exit and panic kill it too; dropping
/// the returned [`Group`] kills whatever is left of it.
pub fn track(pgid: i32) -> Group {
    groups().insert(pgid);
    Group { pgid, supervised: false, reaped: AtomicBool::new(false), finishing: AtomicBool::new(false) }
}

/// Exit status as (code, signal).
pub fn exit_parts(status: std::process::ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (status.code(), status.signal())
}

/// Is `pid` a live process (not gone, not a zombie)? Reads `/proc`.
pub fn running(pid: i32) -> bool {
    tree::alive(pid)
}

/// The number of a signal named like `SIGKILL` or `KILL`.
pub fn signal_number(name: &str) -> Option<i32> {
    let name = name.trim().trim_start_matches("SIG");
    [
        ("HUP", libc::SIGHUP),
        ("INT", libc::SIGINT),
        ("QUIT", libc::SIGQUIT),
        ("ABRT", libc::SIGABRT),
        ("KILL", libc::SIGKILL),
        ("SEGV", libc::SIGSEGV),
        ("PIPE", libc::SIGPIPE),
        ("ALRM", libc::SIGALRM),
        ("TERM", libc::SIGTERM),
    ]
    .into_iter()
    .find(|(n, _)| *n == name)
    .map(|(_, number)| number)
    .or_else(|| name.parse().ok())
}

/// The conventional name of a signal.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dropping_the_group_kills_grandchildren_too() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", marker.display());
        let (mut child, group) = spawn(&script, dir.path(), &Environment::default()).unwrap();
        let pid = loop {
            if let Ok(text) = std::fs::read_to_string(&marker)
                && let Ok(pid) = text.trim().parse::<i32>()
            {
                break pid;
            }
            tokio::task::yield_now().await;
        };
        let pgid = group.pgid;
        drop(group);
        let status = child.wait().await.unwrap();
        assert_eq!(exit_parts(status), (None, Some(libc::SIGKILL)));
        // Killed processes can linger as zombies until their new parent reaps them; they must not run.
        let gone = async {
            while running(pid) {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), gone).await.unwrap();
        assert!(!signal_group(pgid, 0), "the group left the registry");
    }

    #[tokio::test]
    async fn a_panic_off_the_main_thread_leaves_every_command_running() {
        let dir = tempfile::tempdir().unwrap();
        let (child, group) = spawn("sleep 30", dir.path(), &Environment::default()).unwrap();
        let pid = child.id().unwrap() as i32;
        // This test's thread plays the main thread; the panic below happens elsewhere, as in a tool.
        kill_children_on_panic();
        let crashed = std::thread::spawn(|| panic!("a tool crashed")).join();
        assert!(crashed.is_err());
        assert!(running(pid), "the panic killed a command it did not own");
        drop(group);
    }

    #[test]
    fn a_servers_exec_line_keeps_every_argument_as_one_word_through_sh() {
        let args = ["%s|".to_string(), "it's".into(), "a b".into(), "$HOME `x` \\".into(), String::new()];
        let line = exec_line(Path::new("/usr/bin/printf"), &args);
        let out = std::process::Command::new("sh").arg("-c").arg(&line).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "it's|a b|$HOME `x` \\||");
    }

    #[test]
    fn groups_not_created_here_are_never_signalled() {
        assert!(!signal_group(1, libc::SIGKILL));
        assert!(!signal_group(std::process::id() as i32, 0));
    }
}
