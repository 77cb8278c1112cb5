//! Retry policy shared by every provider (PROVIDERS.md §2.7): retry connection errors, 408, 409, 429 and 5xx;
//! honour `x-should-retry`, `retry-after-ms` and `retry-after` (seconds or an HTTP date; a wait over 60 s is not
//! waited for: the request fails with the provider's wait in the message); otherwise exponential backoff with up
//! to 25 % jitter, capped. Only before any output reached the user.
//!
//! Owns the timing decisions; does not send requests.

use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::config::RetryConfig;

/// The longest server-requested wait tinycode waits for; a longer one ends the request with the wait in the message.
pub const MAX_HONOURED_WAIT: Duration = Duration::from_secs(60);

/// Is a response with this status worth retrying? `x-should-retry` overrides the status.
pub fn is_retryable(status: u16, headers: &HeaderMap) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The wait the server asked for (`retry-after-ms`, else `retry-after` in seconds or as an HTTP date).
pub fn server_wait(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = http_date(value)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of an HTTP date in its one current form, `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(text: &str) -> Option<u64> {
    let mut parts = text.split_whitespace();
    let (_weekday, day, month, year, time, zone) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if zone != "GMT" || parts.next().is_some() {
        return None;
    }
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let mut clock = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (clock.next()??, clock.next()??, clock.next()??);
    // Days from the civil date (proleptic Gregorian), as in H. Hinnant's algorithm.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3_600 + m * 60 + s).ok()
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
    fn retry_after_ms_wins_over_retry_after_which_may_be_seconds_or_an_http_date() {
        assert_eq!(server_wait(&headers(&[("retry-after", "2")])), Some(Duration::from_secs(2)));
        assert_eq!(
            server_wait(&headers(&[("retry-after-ms", "150"), ("retry-after", "2")])),
            Some(Duration::from_millis(150))
        );
        assert_eq!(server_wait(&headers(&[("retry-after", "0")])), Some(Duration::ZERO));
        assert_eq!(server_wait(&headers(&[("retry-after", "3600")])), Some(Duration::from_secs(3600)));
        assert_eq!(server_wait(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(
            server_wait(&headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")])),
            Some(Duration::ZERO)
        );
        assert_eq!(http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date("Sun, 06 Nov 1994 08:49:37 PST"), None);
        let later =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 120;
        let wait = server_wait(&headers(&[("retry-after", &format_http_date(later))])).unwrap();
        assert!((Duration::from_secs(118)..=Duration::from_secs(120)).contains(&wait), "{wait:?}");
    }

    /// An HTTP date for `secs` since the epoch (the inverse of `http_date`, for the test).
    fn format_http_date(secs: u64) -> String {
        let days = (secs / 86_400) as i64;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        const MONTHS: [&str; 12] =
            ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        let rest = secs % 86_400;
        format!(
            "Mon, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
            MONTHS[(month - 1) as usize],
            rest / 3600,
            rest / 60 % 60,
            rest % 60
        )
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
