//! Child processes in process groups of their own: spawning `sh -c` so that the whole group (grandchildren
//! included) can be signalled, a registry of every live group this process created (so nothing is left behind
//! on exit, SIGTERM or panic), and SIGTERM-poll-SIGKILL termination.
//!
//! Owns signals. It never signals a process group it did not create.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

/// Process groups created by this process and not yet known to be gone.
static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    match GROUPS.lock() {
        Ok(groups) => groups,
        Err(poisoned) => poisoned.into_inner(),
    }
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

/// Kill every group this process created (shutdown, panic).
pub fn kill_all() {
    let all: Vec<i32> = groups().iter().copied().collect();
    for pgid in all {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// Install a panic hook that kills every child group before the default hook runs.
pub fn kill_children_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        kill_all();
        previous(info);
    }));
}

/// Owns a process group: dropping it kills whatever is left of the group.
#[derive(Debug)]
pub struct Group {
    pub pgid: i32,
}

impl Group {
    pub fn kill(&self) {
        signal_group(self.pgid, libc::SIGKILL);
    }

    /// SIGTERM, then poll for up to `grace`, then SIGKILL. Returns true if SIGKILL was needed.
    pub async fn terminate(&self, grace: Duration) -> bool {
        signal_group(self.pgid, libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + grace;
        while tokio::time::Instant::now() < deadline {
            if !group_alive(self.pgid) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        signal_group(self.pgid, libc::SIGKILL)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
        groups().remove(&self.pgid);
    }
}

/// Environment that keeps commands from waiting for a terminal or a pager.
const QUIET_ENV: [(&str, &str); 5] = [
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
];

/// Start `sh -c <command>` in `cwd` as the leader of a new process group, with piped output and no stdin.
pub fn spawn(command: &str, cwd: &Path) -> std::io::Result<(tokio::process::Child, Group)> {
    let mut builder = tokio::process::Command::new("sh");
    builder
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for (name, value) in QUIET_ENV {
        builder.env(name, value);
    }
    let child = builder.spawn()?;
    let pgid = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .ok_or_else(|| std::io::Error::other("the command exited before it could be tracked"))?;
    groups().insert(pgid);
    Ok((child, Group { pgid }))
}

/// Track a process group this process created elsewhere (an MCP server), so exit and panic kill it too; dropping
/// the returned [`Group`] kills whatever is left of it.
pub fn track(pgid: i32) -> Group {
    groups().insert(pgid);
    Group { pgid }
}

/// Exit status as (code, signal).
pub fn exit_parts(status: std::process::ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (status.code(), status.signal())
}

/// Is `pid` a live process (not gone, not a zombie)? Reads `/proc`.
pub fn running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state follows the parenthesised command name, which may itself contain spaces.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, None | Some("Z") | Some("X"))
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
        let (mut child, group) = spawn(&script, dir.path()).unwrap();
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

    #[test]
    fn groups_not_created_here_are_never_signalled() {
        assert!(!signal_group(1, libc::SIGKILL));
        assert!(!signal_group(std::process::id() as i32, 0));
    }
}
