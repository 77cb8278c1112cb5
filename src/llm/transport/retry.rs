//! Retry policy shared by every provider (PROVIDERS.md §2.7): retry connection errors, 408, 409, 429 and 5xx;
//! honour `x-should-retry`, `retry-after-ms` and `retry-after` (when between 0 and 60 s); otherwise
//! exponential backoff with up to 25 % jitter, capped. Only before any output reached the user.
//!
//! Owns the timing decisions; does not send requests.

use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::config::RetryConfig;

/// The longest server-requested wait we honour; longer requests fall back to our own backoff.
const MAX_HONOURED_WAIT: Duration = Duration::from_secs(60);

/// Is a response with this status worth retrying? `x-should-retry` overrides the status.
pub fn is_retryable(status: u16, headers: &HeaderMap) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The wait the server asked for, if it is reasonable.
pub fn server_wait(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let wait = header("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|ms| ms / 1000.0)
        .or_else(|| header("retry-after").and_then(|v| v.parse::<f64>().ok()))?;
    let wait = Duration::try_from_secs_f64(wait).ok()?;
    (wait <= MAX_HONOURED_WAIT).then_some(wait)
}

/// Exponential backoff for retry number `attempt` (0-based): `initial * 2^attempt`, capped, minus 0–25 % jitter.
pub fn backoff(config: &RetryConfig, attempt: u32) -> Duration {
    let base = config.initial_backoff.saturating_mul(2u32.saturating_pow(attempt)).min(config.max_backoff);
    let jitter = (uuid::Uuid::new_v4().as_u128() % 1000) as f64 / 1000.0 * 0.25;
    base.mul_f64(1.0 - jitter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn rate_limits_server_errors_and_conflicts_are_retryable_unless_the_server_says_otherwise() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable(status, &HeaderMap::new()), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!is_retryable(status, &HeaderMap::new()), "{status}");
        }
        assert!(!is_retryable(503, &headers(&[("x-should-retry", "false")])));
        assert!(is_retryable(400, &headers(&[("x-should-retry", "true")])));
    }

    #[test]
    fn retry_after_ms_wins_over_retry_after_and_long_waits_are_ignored() {
        assert_eq!(server_wait(&headers(&[("retry-after", "2")])), Some(Duration::from_secs(2)));
        assert_eq!(
            server_wait(&headers(&[("retry-after-ms", "150"), ("retry-after", "2")])),
            Some(Duration::from_millis(150))
        );
        assert_eq!(server_wait(&headers(&[("retry-after", "0")])), Some(Duration::ZERO));
        assert_eq!(server_wait(&headers(&[("retry-after", "3600")])), None);
        assert_eq!(server_wait(&headers(&[("retry-after", "soon")])), None);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_at_most_a_quarter_of_jitter() {
        let config = RetryConfig {
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        };
        for (attempt, base_ms) in [(0, 500u64), (1, 1000), (2, 2000), (4, 8000), (10, 8000)] {
            let wait = backoff(&config, attempt);
            let base = Duration::from_millis(base_ms);
            assert!(wait <= base && wait >= base.mul_f64(0.75), "attempt {attempt}: {wait:?}");
        }
    }
}
