//! The hidden `tinycode __supervise <agent-pid> <command>` mode (Linux). The agent starts every command through
//! it. The supervisor makes itself a child subreaper (so daemons that double-fork or call `setsid` stay below it),
//! asks the kernel for [`PARENT_DEATH_SIGNAL`] when the agent dies (`PR_SET_PDEATHSIG`), runs `sh -c <command>` in
//! its own process group (which the agent created for it), and forwards polite signals (TERM, INT, HUP, QUIT) to
//! every process below it. When the command exits, or the agent dies or asks it to finish, it kills everything
//! still below it, reaps it, and exits the way the command did: the same exit code, or death by the same signal.
//!
//! Owns the supervisor process. It runs before any async runtime exists and uses blocking system calls only.

use std::ffi::OsStr;

/// The first argument that selects this mode. Not shown in `--help`.
pub const MODE: &str = "__supervise";

/// What the agent sends to have the supervisor kill everything below it and die by SIGKILL itself (cancel,
/// timeout, stop). The agent kills the tree too; the supervisor stays alive meanwhile to reap what dies, so no
/// zombie is handed to the agent.
#[cfg(target_os = "linux")]
pub const FINISH_SIGNAL: i32 = libc::SIGUSR1;

/// What the kernel sends the supervisor when its parent dies. It is also sent when only the agent *thread* that
/// started the supervisor ends, so the supervisor acts on it only once its parent process really changed.
#[cfg(target_os = "linux")]
pub const PARENT_DEATH_SIGNAL: i32 = libc::SIGUSR2;

fn complain(message: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("tinycode supervisor: {message}\n").as_bytes());
}

/// Run as a supervisor when the arguments ask for it and return the exit code; `None` for every other mode.
/// A command killed by a signal makes the supervisor die of the same signal, so this does not return then.
pub fn run_if_requested() -> Option<u8> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(MODE)) {
        return None;
    }
    let parent = args.next().and_then(|p| p.to_str().and_then(|p| p.parse::<i32>().ok()));
    let (Some(parent), Some(command), None) = (parent, args.next(), args.next()) else {
        complain(&format!("usage: tinycode {MODE} <agent-pid> <command>"));
        return Some(2);
    };
    Some(supervise(parent, &command))
}

#[cfg(not(target_os = "linux"))]
fn supervise(_parent: i32, _command: &OsStr) -> u8 {
    complain("supervision needs Linux");
    2
}

#[cfg(target_os = "linux")]
use linux::supervise;

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsStr;
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};

    use super::{FINISH_SIGNAL, PARENT_DEATH_SIGNAL, complain};
    use crate::shell::tree;

    /// Signals passed on to every process below the supervisor.
    const POLITE: [i32; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];
    /// How often the supervisor checks its parent even without a signal.
    const PARENT_CHECK: Duration = Duration::from_secs(1);
    /// How long [`clear_out`] waits for a child's SIGCHLD before it walks the tree again.
    const CHILD_EXIT_CHECK: Duration = Duration::from_millis(20);

    fn signal_set(signals: &[i32]) -> libc::sigset_t {
        // SAFETY: sigemptyset initialises the set before sigaddset uses it; both only write to it.
        unsafe {
            let mut set = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&mut set);
            for signal in signals {
                libc::sigaddset(&mut set, *signal);
            }
            set
        }
    }

    /// The next signal from `set` (which must be blocked), or `None` after `timeout`.
    fn next_signal(set: &libc::sigset_t, timeout: Duration) -> Option<i32> {
        let timeout = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        // SAFETY: the set and timeout are valid for the call; a null siginfo pointer is allowed.
        let signal = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &timeout) };
        (signal > 0).then_some(signal)
    }

    fn parent_changed(parent: i32) -> bool {
        // SAFETY: getppid cannot fail.
        unsafe { libc::getppid() != parent }
    }

    /// Reap every child that has exited; returns the command's wait status once it is among them.
    fn reap(command: i32) -> Option<i32> {
        let mut found = None;
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a valid integer.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return found;
            }
            if pid == command {
                found = Some(status);
            }
        }
    }

    /// Kill everything below this process and reap it all (orphans come here: this process is their reaper).
    /// As a subreaper nothing can leave the tree below it, so no freeze is needed: each pass SIGKILLs what it sees
    /// (a process with SIGKILL pending cannot fork again) and reaps what died, and the tree is empty once no child
    /// is left. Between passes it waits for a SIGCHLD (blocked here, so it stays pending), not a fixed sleep.
    /// Without the subreaper switch, orphans could slip out between passes: then the tree is frozen first.
    fn clear_out(subreaper: bool) {
        // SAFETY: getpid cannot fail.
        let me = unsafe { libc::getpid() };
        let deadline = Instant::now() + tree::KILL_PATIENCE;
        let child_exits = signal_set(&[libc::SIGCHLD]);
        loop {
            if subreaper {
                tree::signal_descendants(me, libc::SIGKILL);
            } else {
                tree::kill_descendants(me);
            }
            if reap_all() {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            next_signal(&child_exits, left.min(CHILD_EXIT_CHECK));
        }
    }

    /// Reap every child that has exited; returns whether no child is left at all.
    fn reap_all() -> bool {
        loop {
            let mut status = 0;
            // SAFETY: as in `reap`.
            match unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } {
                0 => return false,
                pid if pid < 0 => return true,
                _ => {}
            }
        }
    }

    /// Exit the way the command did: its exit code, or death by its signal (without a core dump).
    fn mirror(status: i32) -> u8 {
        if libc::WIFEXITED(status) {
            return libc::WEXITSTATUS(status) as u8;
        }
        if !libc::WIFSIGNALED(status) {
            return 1;
        }
        let signal = libc::WTERMSIG(status);
        let only = signal_set(&[signal]);
        let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: plain system calls on valid arguments; the signal is delivered when it is unblocked.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
        }
        (128 + signal) as u8
    }

    pub fn supervise(parent: i32, command: &OsStr) -> u8 {
        let watched = signal_set(&[
            libc::SIGCHLD,
            PARENT_DEATH_SIGNAL,
            FINISH_SIGNAL,
            POLITE[0],
            POLITE[1],
            POLITE[2],
            POLITE[3],
        ]);
        // SAFETY: blocking signals and prctl take plain values; the set is valid.
        unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, &watched, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_PDEATHSIG, PARENT_DEATH_SIGNAL as libc::c_ulong, 0, 0, 0);
        }
        let subreaper = tree::become_subreaper();
        if parent_changed(parent) {
            return 1; // The agent died before the kernel could be told to watch it: start nothing.
        }
        let mut shell = std::process::Command::new("sh");
        shell.arg("-c").arg(command);
        // SAFETY: the hook runs in the forked child before exec and only calls pthread_sigmask, which is
        // async-signal-safe. The command must not inherit the signals this process blocked.
        unsafe {
            shell.pre_exec(|| {
                let none = signal_set(&[]);
                libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                Ok(())
            });
        }
        let child = match shell.spawn() {
            Ok(child) => child.id() as i32,
            Err(e) => {
                complain(&format!("cannot start sh: {e}"));
                return 127;
            }
        };
        // SAFETY: getpid cannot fail.
        let me = unsafe { libc::getpid() };
        let status = loop {
            match next_signal(&watched, PARENT_CHECK) {
                Some(FINISH_SIGNAL) => {
                    clear_out(subreaper);
                    // The wait status of a death by a signal is the signal's number.
                    return mirror(libc::SIGKILL);
                }
                Some(signal) if POLITE.contains(&signal) => {
                    tree::signal_descendants(me, signal);
                }
                _ => {}
            }
            if parent_changed(parent) {
                clear_out(subreaper);
                return 1;
            }
            if let Some(status) = reap(child) {
                break status;
            }
        };
        clear_out(subreaper);
        mirror(status)
    }
}
