//! Wall-clock time as the project writes it: milliseconds since the epoch, calendar dates and ISO 8601 (UTC).
//!
//! Owns formatting only.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_millis() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// (year, month, day) of a day count since the epoch (Howard Hinnant's civil-from-days).
pub fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The day count since the epoch of a (year, month, day) (Howard Hinnant's days-from-civil).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A calendar date `YYYY-MM-DD` (UTC).
pub fn date(time: SystemTime) -> String {
    let days = time.duration_since(UNIX_EPOCH).map(|d| d.as_secs() / 86_400).unwrap_or(0) as i64;
    let (year, month, day) = civil(days);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the epoch.
pub fn iso8601(millis: i64) -> String {
    let (secs, ms) = (millis.div_euclid(1_000), millis.rem_euclid(1_000));
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_computed_in_the_proleptic_gregorian_calendar() {
        assert_eq!(date(UNIX_EPOCH), "1970-01-01");
        assert_eq!(date(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29");
        assert_eq!(date(UNIX_EPOCH + Duration::from_secs(1_795_996_800)), "2026-11-30");
    }

    #[test]
    fn days_from_civil_inverts_civil() {
        for days in [-800_000, -1, 0, 59, 60, 10_957, 20_422, 2_932_896] {
            let (y, m, d) = civil(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn timestamps_are_iso_8601_in_utc_with_milliseconds() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_795_996_800_000 + 3_723_045), "2026-11-30T01:02:03.045Z");
    }
}
