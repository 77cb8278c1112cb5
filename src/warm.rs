//! Start-up work done beside the first requests: a thread of its own that does what `initialize` needs first and
//! then runs at a lower CPU priority, so on a machine with few cores it takes what the first answers leave rather
//! than holding them up. Whatever such a
//! thread has not finished when it is needed is built by the one who needs it (the callers use `OnceLock`s).
//!
//! Owns these helper threads. Must not be used for work whose result something waits on before answering.

/// How much lower than the process the helpers run (the `nice` scale: 19 is the lowest priority).
const NICER_BY: libc::c_int = 10;

/// Run `urgent` and then, at a lower priority, `later` on a new thread named `name`. `urgent` is what the first
/// answer needs (at the process's priority: the answer would wait for a thread that gets no CPU); `later` is what
/// only later requests need. Returns `false` (both dropped unrun) when no thread can be started: the callers'
/// lazy paths then do the work on first use.
pub fn spawn(
    name: &str,
    urgent: impl FnOnce() + Send + 'static,
    later: impl FnOnce() + Send + 'static,
) -> bool {
    let started = std::thread::Builder::new().name(name.to_string()).spawn(move || {
        urgent();
        lower_priority();
        later();
    });
    if let Err(e) = &started {
        tracing::debug!(thread = name, error = %e, "start-up work left for first use");
    }
    started.is_ok()
}

/// Lower the calling thread's priority (on Linux, where a thread has a `nice` value of its own). A thread can
/// only lower its own priority, never raise it back: only threads that end after their work call this.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on the calling thread's own id; no memory is shared with them.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        let Ok(tid) = libc::id_t::try_from(tid) else { return };
        // SAFETY: as above; a failure only leaves the priority as it was.
        let current = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
        // SAFETY: as above.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, (current + NICER_BY).min(19)) };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_work_runs_on_a_named_thread_at_a_lower_priority() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mine = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        assert!(super::spawn(
            "tinycode-test-warm",
            || {},
            move || {
                let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
                let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
                tx.send((std::thread::current().name().map(str::to_string), nice)).unwrap();
            }
        ));
        let (name, nice) = rx.recv().unwrap();
        assert_eq!(name.as_deref(), Some("tinycode-test-warm"));
        #[cfg(target_os = "linux")]
        assert_eq!(nice, (mine + super::NICER_BY).min(19));
    }
}
