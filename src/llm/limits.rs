//! Limits on one streamed model response, whatever its wire format: the idle timer (any byte resets it; a stream
//! that carries only SSE comments, the keep-alives some providers send every half second, is given up on after
//! twice the idle timeout without data), the overall deadline of a response (retries included), and the output cap.
//!
//! Owns the timing and size decisions and the words that explain them. Reads nothing from the network itself.

use std::time::Duration;

use tokio::time::Instant;

use crate::config::Config;

/// The output cap when `max_output_tokens` is not set. Not sent to the provider (models differ in what they
/// accept, and o-series models reject `max_tokens` outright): tinycode stops reading instead.
pub const DEFAULT_OUTPUT_TOKENS: u64 = 32_000;
/// How streamed output is counted against the cap: bytes of text, reasoning and tool arguments per token.
pub const BYTES_PER_TOKEN: u64 = 4;

/// `12 s`, or `400 ms` when not a whole number of seconds.
pub fn describe(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration >= Duration::from_secs(1) {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// The limits for every response of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest silence (no byte at all).
    pub idle: Duration,
    /// Longest time a whole response may take, retries included.
    pub deadline: Duration,
    /// The output cap in (estimated) tokens.
    pub output_tokens: u64,
}

impl Limits {
    /// From the configuration. A configured `max_output_tokens` is sent to the provider, which stops there; the
    /// cap enforced here is then twice that (our byte-based count is only an estimate), for servers that ignore it.
    pub fn new(config: &Config) -> Self {
        Self {
            idle: config.stream_idle_timeout,
            deadline: config.response_timeout,
            output_tokens: config
                .max_output_tokens
                .map(|m| 2 * u64::from(m))
                .unwrap_or(DEFAULT_OUTPUT_TOKENS),
        }
    }

    /// Longest stretch with keep-alive comments but no data.
    pub fn comment_only(&self) -> Duration {
        self.idle.saturating_mul(2)
    }

    /// Has `bytes` of output gone past the cap?
    pub fn over_cap(&self, bytes: u64) -> bool {
        bytes > self.output_tokens.saturating_mul(BYTES_PER_TOKEN)
    }
}

/// Why a stream was given up on before it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stall {
    /// Not a byte for this long.
    Silent(Duration),
    /// Only SSE comments for this long.
    CommentsOnly(Duration),
}

impl std::fmt::Display for Stall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stall::Silent(d) => write!(f, "the model sent no data for {}", describe(*d)),
            Stall::CommentsOnly(d) => {
                write!(f, "the model sent only keep-alive comments and no data for {}", describe(*d))
            }
        }
    }
}

/// What a chunk of the stream carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Activity {
    /// Anything but comments and blank lines (a `data:` line, or part of one).
    pub data: bool,
}

/// The liveness of one stream: when it last sent anything, and when it last sent data.
#[derive(Debug, Clone, Copy)]
pub struct Liveness {
    limits: Limits,
    last_byte: Instant,
    last_data: Instant,
}

impl Liveness {
    /// A stream whose response headers arrived at `now`.
    pub fn new(limits: Limits, now: Instant) -> Self {
        Self { limits, last_byte: now, last_data: now }
    }

    /// Record a chunk received at `now`.
    pub fn record(&mut self, now: Instant, activity: Activity) {
        self.last_byte = now;
        if activity.data {
            self.last_data = now;
        }
    }

    /// When the stream stalls unless something arrives first.
    pub fn stalls_at(&self) -> Instant {
        (self.last_byte + self.limits.idle).min(self.last_data + self.limits.comment_only())
    }

    /// The stall, if the stream has stalled by `now`.
    pub fn stalled(&self, now: Instant) -> Option<Stall> {
        if now >= self.last_byte + self.limits.idle {
            return Some(Stall::Silent(self.limits.idle));
        }
        (now >= self.last_data + self.limits.comment_only())
            .then_some(Stall::CommentsOnly(self.limits.comment_only()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits { idle: Duration::from_secs(300), deadline: Duration::from_secs(600), output_tokens: 100 }
    }

    #[test]
    fn comments_keep_a_stream_alive_for_twice_the_idle_timeout_and_no_longer() {
        let start = Instant::now();
        let mut live = Liveness::new(limits(), start);
        let comment = Activity { data: false };
        for half_seconds in 1..1200 {
            let now = start + Duration::from_millis(500 * half_seconds);
            assert_eq!(live.stalled(now), None, "{half_seconds}");
            live.record(now, comment);
        }
        let end = start + Duration::from_secs(600);
        assert_eq!(live.stalls_at(), end);
        assert_eq!(live.stalled(end), Some(Stall::CommentsOnly(Duration::from_secs(600))));
        assert_eq!(
            live.stalled(end).unwrap().to_string(),
            "the model sent only keep-alive comments and no data for 600 s"
        );
    }

    #[test]
    fn data_resets_both_timers_and_silence_stalls_after_the_idle_timeout() {
        let start = Instant::now();
        let mut live = Liveness::new(limits(), start);
        live.record(start + Duration::from_secs(250), Activity { data: true });
        assert_eq!(live.stalls_at(), start + Duration::from_secs(550));
        assert_eq!(live.stalled(start + Duration::from_secs(549)), None);
        let stall = live.stalled(start + Duration::from_secs(550)).unwrap();
        assert_eq!(stall.to_string(), "the model sent no data for 300 s");
    }

    #[test]
    fn the_output_cap_counts_four_bytes_a_token_and_durations_read_naturally() {
        assert!(!limits().over_cap(400));
        assert!(limits().over_cap(401));
        assert_eq!(describe(Duration::from_secs(600)), "600 s");
        assert_eq!(describe(Duration::from_millis(400)), "400 ms");
        assert_eq!(describe(Duration::from_millis(1500)), "1500 ms");
    }
}
