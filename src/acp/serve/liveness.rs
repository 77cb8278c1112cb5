//! Silent peers of `tinycode serve`: a client that stops sending without closing (a suspended laptop, a dead
//! network) is pinged every `ping_every`, and when nothing at all has come from it for `dead_after` it is
//! declared gone, which ends its connection as a close would (its turns cancelled, their processes ended).
//!
//! Owns the clock of the last frame and the watchdog; sending the pings and ending the connection belong to the
//! connection ([`super::serve_socket`]).

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

/// How often a connection is pinged by default.
pub const PING_EVERY: Duration = Duration::from_secs(15);
/// How long a connection may stay silent (no frame of any kind, pongs included) by default.
pub const DEAD_AFTER: Duration = Duration::from_secs(45);

/// When to ping and when to give up on a silent peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    pub ping_every: Duration,
    pub dead_after: Duration,
}

impl Default for Liveness {
    fn default() -> Self {
        Self { ping_every: PING_EVERY, dead_after: DEAD_AFTER }
    }
}

impl Liveness {
    /// Both must be above zero and the pings more frequent than the deadline.
    pub fn check(&self) -> Result<(), String> {
        if self.ping_every.is_zero() || self.dead_after.is_zero() || self.ping_every >= self.dead_after {
            return Err(format!(
                "the ping interval ({} s) must be above zero and shorter than the ping timeout ({} s)",
                self.ping_every.as_secs_f64(),
                self.dead_after.as_secs_f64()
            ));
        }
        Ok(())
    }
}

/// When the last frame came from the peer.
#[derive(Debug)]
pub struct Seen(Mutex<Instant>);

impl Seen {
    pub fn now() -> Self {
        Self(Mutex::new(Instant::now()))
    }

    /// A frame came in.
    pub fn touch(&self) {
        *self.lock() = Instant::now();
    }

    fn last(&self) -> Instant {
        *self.lock()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Instant> {
        match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// Ask for a ping on `ping` every `ping_every`; return once nothing has come for `dead_after`.
pub async fn watch(liveness: Liveness, seen: &Seen, ping: mpsc::Sender<()>) {
    let mut next_ping = Instant::now() + liveness.ping_every;
    loop {
        let deadline = seen.last() + liveness.dead_after;
        tokio::time::sleep_until(next_ping.min(deadline)).await;
        let now = Instant::now();
        if now >= seen.last() + liveness.dead_after {
            return;
        }
        if now >= next_ping {
            // A full queue means a ping is already waiting to go out.
            let _ = ping.try_send(());
            next_ping = now + liveness.ping_every;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_never_answers_is_pinged_then_given_up_at_the_deadline() {
        let (seen, (tx, mut rx)) = (Seen::now(), mpsc::channel(8));
        let start = Instant::now();
        watch(Liveness::default(), &seen, tx).await;
        assert_eq!(start.elapsed(), DEAD_AFTER);
        let mut pings = 0;
        while rx.try_recv().is_ok() {
            pings += 1;
        }
        assert_eq!(pings, 2, "at 15 s and 30 s");
    }

    #[tokio::test(start_paused = true)]
    async fn every_frame_from_the_peer_moves_the_deadline() {
        let seen = std::sync::Arc::new(Seen::now());
        let (tx, _rx) = mpsc::channel(8);
        let start = Instant::now();
        let answering = {
            let seen = seen.clone();
            async move {
                for _ in 0..4 {
                    tokio::time::sleep(Duration::from_secs(40)).await;
                    seen.touch();
                }
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = watch(Liveness::default(), &seen, tx) => {}
            () = answering => {}
        }
        assert_eq!(start.elapsed(), Duration::from_secs(160) + DEAD_AFTER);
    }

    #[test]
    fn pings_must_come_before_the_deadline() {
        let secs = Duration::from_secs;
        assert_eq!(Liveness::default().check(), Ok(()));
        assert!(Liveness { ping_every: secs(45), dead_after: secs(45) }.check().is_err());
        assert!(Liveness { ping_every: Duration::ZERO, dead_after: secs(1) }.check().is_err());
    }
}
