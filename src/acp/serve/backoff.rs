//! The accept loop of `tinycode serve` and how it waits after a failed `accept`: when file descriptors (or
//! kernel memory) run out, `accept` fails at once every time it is called, so the loop sleeps, doubling the wait
//! up to a cap, and warns once per window with the number of failures it kept quiet about. A success resets it.
//!
//! Owns the loop and its pacing only; what is done with an accepted stream belongs to the caller.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The first wait after a failed accept.
pub const FIRST_WAIT: Duration = Duration::from_millis(10);
/// The longest wait between two attempts.
pub const MAX_WAIT: Duration = Duration::from_secs(1);
/// At most one warning per window.
pub const WARN_WINDOW: Duration = Duration::from_secs(60);

/// The pacing after failed accepts.
#[derive(Debug, Default)]
pub struct Backoff {
    /// The wait after the next failure (zero: none failed since the last success).
    wait: Duration,
    /// When the last warning was given.
    warned: Option<Instant>,
    /// Failures since the last warning that were not warned about.
    quiet: u64,
}

impl Backoff {
    /// An accept failed at `now`: how long to wait before the next attempt, and the warning to give, if any.
    pub fn failed(&mut self, error: &std::io::Error, now: Instant) -> (Duration, Option<String>) {
        self.wait = if self.wait.is_zero() { FIRST_WAIT } else { (self.wait * 2).min(MAX_WAIT) };
        let due = self.warned.is_none_or(|at| now.duration_since(at) >= WARN_WINDOW);
        if !due {
            self.quiet += 1;
            return (self.wait, None);
        }
        let mut warning = format!("cannot accept connections: {error}");
        if exhausted(error) {
            warning
                .push_str(" (out of file descriptors or memory: retrying with a growing wait of up to 1 s)");
        }
        if self.quiet > 0 {
            warning.push_str(&format!("; {} more failed since the last warning", self.quiet));
        }
        self.warned = Some(now);
        self.quiet = 0;
        (self.wait, Some(warning))
    }

    /// An accept succeeded: the next failure starts from the first wait again.
    pub fn succeeded(&mut self) {
        self.wait = Duration::ZERO;
    }
}

/// EMFILE, ENFILE, ENOBUFS, ENOMEM: the process or the system ran out of something a connection needs.
pub fn exhausted(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}

/// Accept with `next` until `stop` fires, handing each stream to `serve` and each warning to `warn`.
pub async fn accept_loop<S, F, Fut>(
    mut next: F,
    stop: &CancellationToken,
    mut warn: impl FnMut(&str),
    mut serve: impl FnMut(S, SocketAddr),
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::io::Result<(S, SocketAddr)>>,
{
    let mut backoff = Backoff::default();
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = next() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff.succeeded();
                serve(stream, peer);
            }
            Err(e) => {
                let (wait, warning) = backoff.failed(&e, Instant::now());
                if let Some(warning) = warning {
                    warn(&warning);
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn emfile() -> std::io::Error {
        std::io::Error::from_raw_os_error(libc::EMFILE)
    }

    /// Run the loop against an accept that always fails with `error`, `attempts` times; the offsets of the
    /// attempts from the first, in milliseconds, and the warnings.
    async fn failing(attempts: usize) -> (Vec<u128>, Vec<String>) {
        let stop = CancellationToken::new();
        let times = Arc::new(Mutex::new(Vec::new()));
        let mut warnings = Vec::new();
        let next = || {
            let (times, stop) = (times.clone(), stop.clone());
            async move {
                let mut times = times.lock().unwrap();
                times.push(Instant::now());
                if times.len() == attempts {
                    stop.cancel();
                }
                Err::<((), SocketAddr), _>(emfile())
            }
        };
        accept_loop(next, &stop, |w| warnings.push(w.to_string()), |(), _| {}).await;
        let times = times.lock().unwrap();
        (times.iter().map(|t| t.duration_since(times[0]).as_millis()).collect(), warnings)
    }

    #[tokio::test(start_paused = true)]
    async fn an_accept_that_keeps_failing_waits_longer_each_time_up_to_a_second_and_warns_once() {
        let (offsets, warnings) = failing(12).await;
        assert_eq!(offsets, [0, 10, 30, 70, 150, 310, 630, 1270, 2270, 3270, 4270, 5270]);
        assert_eq!(
            warnings,
            [format!(
                "cannot accept connections: {} (out of file descriptors or memory: retrying with a growing wait of up to 1 s)",
                emfile()
            )]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_warning_a_minute_at_most_counting_the_failures_it_kept_quiet() {
        // 0..1270 ms, then one attempt a second: the attempt at 60.27 s is the first past the window.
        let (offsets, warnings) = failing(70).await;
        assert_eq!((offsets[65], offsets[66]), (59_270, 60_270));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[1].ends_with("; 65 more failed since the last warning"), "{}", warnings[1]);
    }

    #[test]
    fn a_success_starts_the_wait_again_from_the_first() {
        let mut backoff = Backoff::default();
        let now = Instant::now();
        assert_eq!(backoff.failed(&emfile(), now).0, FIRST_WAIT);
        assert_eq!(backoff.failed(&emfile(), now).0, FIRST_WAIT * 2);
        backoff.succeeded();
        assert_eq!(backoff.failed(&emfile(), now), (FIRST_WAIT, None), "still inside the warning window");
        let other = std::io::Error::from_raw_os_error(libc::ECONNABORTED);
        assert!(!exhausted(&other) && exhausted(&emfile()));
    }
}
