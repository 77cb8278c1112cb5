//! The descendants of a process and how to end them all: the tree is read from `/proc` (each thread's `children`
//! file, or every process's parent when the kernel lacks those files), frozen with SIGSTOP pass after pass so
//! nothing can fork away, then killed; and the child-subreaper switch that keeps orphans (double-forked and
//! `setsid` daemons) inside the tree. On other systems there is no walk: callers fall back to process groups.
//!
//! Owns reading the process tree. It signals only processes found below the root it is given.

use std::time::{Duration, Instant};

/// How long [`kill_descendants`] keeps at it before giving up on processes that will not die (uninterruptible
/// sleep); what is left then is reported, not waited for.
pub const KILL_PATIENCE: Duration = Duration::from_secs(2);

/// The scheduling state of `pid` (`R`, `S`, `D`, `T`, `Z`…), or `None` when it is gone.
pub fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the parenthesised command name, which may itself contain spaces and parentheses.
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).and_then(|s| s.chars().next())
}

/// The parent of `pid` as `/proc` reports it.
pub fn parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// The process group of `pid`.
pub fn group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(2)?.parse().ok()
}

/// When `pid` started (clock ticks after boot): with the pid, it names one process, even after the pid is reused.
pub fn started(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// Is `pid` alive (neither gone nor a zombie)?
pub fn alive(pid: i32) -> bool {
    !matches!(state(pid), None | Some('Z' | 'X' | 'x'))
}

/// The direct children of `pid`, from the `children` file of each of its threads.
#[cfg(target_os = "linux")]
fn children(pid: i32) -> Option<Vec<i32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut found = Vec::new();
    for task in tasks.flatten() {
        let text = std::fs::read_to_string(task.path().join("children")).ok()?;
        found.extend(text.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
    }
    Some(found)
}

/// Every process's parent, for kernels built without the `children` files.
#[cfg(target_os = "linux")]
fn parents() -> Vec<(i32, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter_map(|pid| parent(pid).map(|ppid| (pid, ppid)))
        .collect()
}

/// The processes of group `pgid` that are still alive (neither gone nor zombies).
#[cfg(target_os = "linux")]
pub fn live_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| group(*pid) == Some(pgid) && alive(*pid))
        .collect()
}

/// Without `/proc`, no member can be found.
#[cfg(not(target_os = "linux"))]
pub fn live_members(_pgid: i32) -> Vec<i32> {
    Vec::new()
}

/// Every process below `root` (not `root` itself), parents before their children.
#[cfg(target_os = "linux")]
pub fn descendants(root: i32) -> Vec<i32> {
    static CHILDREN_FILES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let has_children_files =
        *CHILDREN_FILES.get_or_init(|| std::path::Path::new("/proc/thread-self/children").exists());
    let table = if has_children_files { Vec::new() } else { parents() };
    let mut found = Vec::new();
    let mut next = 0;
    let mut current = root;
    loop {
        let kids = if has_children_files {
            children(current).unwrap_or_default()
        } else {
            table.iter().filter(|(_, ppid)| *ppid == current).map(|(pid, _)| *pid).collect()
        };
        for pid in kids {
            if pid != root && !found.contains(&pid) {
                found.push(pid);
            }
        }
        let Some(&pid) = found.get(next) else { return found };
        current = pid;
        next += 1;
    }
}

/// Without `/proc` there is no tree to walk.
#[cfg(not(target_os = "linux"))]
pub fn descendants(_root: i32) -> Vec<i32> {
    Vec::new()
}

fn signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions; `pid` is positive, so one process is addressed.
    unsafe { libc::kill(pid, signal) };
}

/// SIGKILL every process below `root`, leaving `root` alone. The tree is frozen first (SIGSTOP until every member
/// is stopped), so a process cannot fork a child the walk has not seen, and orphans cannot slip out between passes
/// when `root` is not a subreaper. Returns the processes still alive after [`KILL_PATIENCE`] (normally none).
pub fn kill_descendants(root: i32) -> Vec<i32> {
    let deadline = Instant::now() + KILL_PATIENCE;
    let frozen = freeze(root, deadline);
    kill_until_gone(root, frozen, deadline)
}

/// [`kill_descendants`], with `root` stopped first and killed last, so it sees nothing of its children dying and
/// ends by SIGKILL. For a root this process started and has not reaped.
pub fn kill_tree(root: i32) -> Vec<i32> {
    signal(root, libc::SIGSTOP);
    let left = kill_descendants(root);
    signal(root, libc::SIGKILL);
    left
}

/// The pause between two looks at a tree that was just signalled: none at first (the CPU is offered to the
/// signalled processes, which must run to stop or die), then doubling from [`FIRST_PAUSE`] to [`LONGEST_PAUSE`].
/// A fixed 1 ms sleep per look (the kernel rounds it up further) was most of what a cancel cost.
struct Backoff {
    pause: Duration,
}

/// The first real sleep of a [`Backoff`].
const FIRST_PAUSE: Duration = Duration::from_micros(50);
/// The longest sleep of a [`Backoff`] (a process in uninterruptible sleep may take long to act on a signal).
const LONGEST_PAUSE: Duration = Duration::from_millis(2);

impl Backoff {
    fn new() -> Backoff {
        Backoff { pause: Duration::ZERO }
    }

    fn wait(&mut self) {
        if self.pause.is_zero() {
            std::thread::yield_now();
            self.pause = FIRST_PAUSE;
        } else {
            std::thread::sleep(self.pause);
            self.pause = (self.pause * 2).min(LONGEST_PAUSE);
        }
    }
}

/// SIGSTOP everything below `root` until nothing there is still running; returns what was stopped.
fn freeze(root: i32, deadline: Instant) -> Vec<i32> {
    let mut frozen = Vec::new();
    let mut backoff = Backoff::new();
    loop {
        let loose: Vec<i32> = descendants(root)
            .into_iter()
            .filter(|pid| matches!(state(*pid), Some(s) if !matches!(s, 'Z' | 'X' | 'x' | 'T' | 't')))
            .collect();
        if loose.is_empty() || Instant::now() >= deadline {
            return frozen;
        }
        for pid in loose {
            signal(pid, libc::SIGSTOP);
            if !frozen.contains(&pid) {
                frozen.push(pid);
            }
        }
        backoff.wait();
    }
}

/// SIGKILL everything below `root` (and what was `frozen`) pass after pass until none of it is alive.
fn kill_until_gone(root: i32, mut frozen: Vec<i32>, deadline: Instant) -> Vec<i32> {
    let mut backoff = Backoff::new();
    loop {
        let live: Vec<i32> =
            descendants(root).into_iter().chain(frozen.drain(..)).filter(|p| alive(*p)).collect();
        if live.is_empty() {
            return live;
        }
        for pid in &live {
            signal(*pid, libc::SIGKILL);
        }
        if Instant::now() >= deadline {
            tracing::warn!(root, left = ?live, "processes did not die after SIGKILL");
            return live;
        }
        backoff.wait();
    }
}

/// Send `sig` to every process below `root` (a polite request such as SIGTERM: nothing is frozen).
pub fn signal_descendants(root: i32, sig: i32) -> usize {
    let all = descendants(root);
    for pid in &all {
        signal(*pid, sig);
    }
    all.len()
}

/// Make this process the reaper of its orphaned descendants (Linux `PR_SET_CHILD_SUBREAPER`), so a daemon that
/// double-forks or calls `setsid` stays in the tree [`kill_descendants`] walks. Returns whether it took effect.
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes plain integers.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    /// A shell that runs `script` and then blocks reading its stdin, so killing its children does not end it.
    fn spawn(script: &str) -> std::process::Child {
        let script = format!("{script}\nread line");
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(script).stdin(std::process::Stdio::piped());
        command.spawn().unwrap()
    }

    fn wait_for_pids(path: &std::path::Path, count: usize) -> Vec<i32> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let pids: Vec<i32> = text.split_whitespace().filter_map(|p| p.parse().ok()).collect();
            if pids.len() >= count {
                return pids;
            }
            assert!(Instant::now() < deadline, "the script did not write {count} pids");
            std::thread::yield_now();
        }
    }

    #[test]
    fn the_walk_finds_grandchildren_and_the_kill_leaves_the_root_alone() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let script = format!(
            "sh -c 'sleep 30 & echo $! >> {p}; wait' & echo $! >> {p}; sleep 30 &",
            p = pids.display()
        );
        let mut root = spawn(&script);
        let root_pid = root.id() as i32;
        let written = wait_for_pids(&pids, 2);
        let below = descendants(root_pid);
        for pid in &written {
            assert!(below.contains(pid), "{pid} is below the root: {below:?}");
        }
        assert_eq!(kill_descendants(root_pid), Vec::<i32>::new());
        // SIGKILL is delivered at once, but the exit itself can take a moment on a loaded machine.
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        for pid in written {
            while alive(pid) && Instant::now() < deadline {
                std::thread::yield_now();
            }
            assert!(!alive(pid), "{pid} was killed");
        }
        assert!(alive(root_pid), "the root itself is left alone");
        root.kill().unwrap();
        root.wait().unwrap();
    }

    #[test]
    fn state_and_parent_read_names_with_spaces_and_parentheses() {
        assert_eq!(parent(std::process::id() as i32), Some(unsafe { libc::getppid() }));
        let mine = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert_eq!(
            started(std::process::id() as i32).map(|t| t.to_string()),
            mine.split(' ').nth(21).map(String::from)
        );
        assert_eq!(started(i32::MAX), None);
        assert!(matches!(state(std::process::id() as i32), Some('R' | 'S')));
        assert_eq!(state(i32::MAX), None);
        assert!(!alive(i32::MAX));
    }
}
