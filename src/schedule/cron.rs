//! Cron expressions: five fields (minute, hour, day of month, month, day of week) in local time, each `*`, a
//! number or name (`jan`–`dec`, `sun`–`sat`; 7 is Sunday too), a range `a-b`, a step `*/n`, `a-b/n` or `a/n`, or
//! a comma list of those. As in Vixie cron, when both day fields are restricted a day matching either one
//! fires. The next firing is searched day by day (at most [`SEARCH_DAYS`] days ahead) and converted from local
//! time with the C library, so a time skipped by a daylight-saving change fires at the first minute after it.
//!
//! Owns parsing and the next-match search. Must not know jobs or sessions.

use crate::clock::{civil, days_from_civil};

/// How far ahead the next firing is searched (four years and a day, so 29 February is found); an expression
/// that matches nothing sooner is refused.
pub const SEARCH_DAYS: i64 = 4 * 366 + 1;

const MONTHS: [&str; 12] =
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// A calendar minute in some time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
}

/// The time zone expressions are read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// The machine's local time (the C library's `TZ` rules).
    Local,
    Utc,
}

impl Zone {
    /// The calendar minute holding `secs` (seconds since the epoch).
    pub fn civil(self, secs: i64) -> Civil {
        match self {
            Zone::Utc => utc_civil(secs),
            Zone::Local => local_civil(secs).unwrap_or_else(|| utc_civil(secs)),
        }
    }

    /// Seconds since the epoch of a calendar minute; a minute skipped by a clock change moves forward.
    pub fn epoch(self, c: Civil) -> Option<i64> {
        match self {
            Zone::Utc => Some(
                days_from_civil(c.year, i64::from(c.month), i64::from(c.day)) * 86_400
                    + i64::from(c.hour) * 3_600
                    + i64::from(c.minute) * 60,
            ),
            Zone::Local => local_epoch(c),
        }
    }
}

fn utc_civil(secs: i64) -> Civil {
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil(days);
    Civil {
        year,
        month: month as u32,
        day: day as u32,
        hour: (rest / 3_600) as u32,
        minute: (rest % 3_600 / 60) as u32,
    }
}

fn local_civil(secs: i64) -> Option<Civil> {
    let time = libc::time_t::try_from(secs).ok()?;
    // SAFETY: `tm` is plain data that `localtime_r` fills; both pointers are valid for the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&time, &mut tm).is_null() {
            return None;
        }
        tm
    };
    Some(Civil {
        year: i64::from(tm.tm_year) + 1900,
        month: u32::try_from(tm.tm_mon + 1).ok()?,
        day: u32::try_from(tm.tm_mday).ok()?,
        hour: u32::try_from(tm.tm_hour).ok()?,
        minute: u32::try_from(tm.tm_min).ok()?,
    })
}

// `time_t` is narrower than `i64` on some targets.
#[allow(clippy::useless_conversion)]
fn local_epoch(c: Civil) -> Option<i64> {
    // SAFETY: `tm` is plain data owned here; `mktime` only reads and normalises it.
    let secs = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tm.tm_year = i32::try_from(c.year - 1900).ok()?;
        tm.tm_mon = i32::try_from(c.month).ok()? - 1;
        tm.tm_mday = i32::try_from(c.day).ok()?;
        tm.tm_hour = i32::try_from(c.hour).ok()?;
        tm.tm_min = i32::try_from(c.minute).ok()?;
        tm.tm_isdst = -1;
        libc::mktime(&mut tm)
    };
    (secs != -1).then_some(i64::from(secs))
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    /// The day-of-month / day-of-week field starts with `*` (then only the other one restricts the day).
    any_day: bool,
    any_weekday: bool,
}

/// One field's bounds and names.
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
    /// The first name's number.
    first_name: u32,
}

const FIELDS: [Field; 5] = [
    Field { name: "minute", min: 0, max: 59, names: &[], first_name: 0 },
    Field { name: "hour", min: 0, max: 23, names: &[], first_name: 0 },
    Field { name: "day of month", min: 1, max: 31, names: &[], first_name: 0 },
    Field { name: "month", min: 1, max: 12, names: &MONTHS, first_name: 1 },
    Field { name: "day of week", min: 0, max: 7, names: &WEEKDAYS, first_name: 0 },
];

impl Field {
    fn value(&self, text: &str) -> Result<u32, String> {
        let lower = text.to_ascii_lowercase();
        if let Some(i) = self.names.iter().position(|n| *n == lower) {
            return Ok(i as u32 + self.first_name);
        }
        let n: u32 = text.parse().map_err(|_| format!("`{text}` is not a valid {}", self.name))?;
        if n < self.min || n > self.max {
            return Err(format!("{} {n} is out of range {}-{}", self.name, self.min, self.max));
        }
        Ok(n)
    }

    /// The set of values one comma-separated item covers, as bits.
    fn item(&self, item: &str) -> Result<u64, String> {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 =
                    step.parse().ok().filter(|s| (1..=self.max).contains(s)).ok_or_else(|| {
                        format!(
                            "step `{step}` in the {} field must be a number from 1 to {}",
                            self.name, self.max
                        )
                    })?;
                (range, Some(step))
            }
            None => (item, None),
        };
        let (low, high) = match range {
            "*" => (self.min, self.max),
            _ => match range.split_once('-') {
                Some((a, b)) => {
                    let (low, high) = (self.value(a)?, self.value(b)?);
                    if low > high {
                        return Err(format!("range `{range}` in the {} field runs backwards", self.name));
                    }
                    (low, high)
                }
                // `a/n` means from a to the end, every n.
                None if step.is_some() => (self.value(range)?, self.max),
                None => {
                    let value = self.value(range)?;
                    (value, value)
                }
            },
        };
        Ok((low..=high).step_by(step.unwrap_or(1) as usize).fold(0u64, |bits, v| bits | (1 << v)))
    }

    fn parse(&self, text: &str) -> Result<u64, String> {
        text.split(',').try_fold(0u64, |bits, item| {
            if item.is_empty() {
                return Err(format!("the {} field `{text}` has an empty item", self.name));
            }
            Ok(bits | self.item(item)?)
        })
    }
}

impl Cron {
    /// Parse a 5-field expression; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Cron, String> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "a cron expression has 5 fields (minute hour day-of-month month day-of-week), `{text}` has {}",
                fields.len()
            ));
        }
        let mut bits = [0u64; 5];
        for (i, field) in FIELDS.iter().enumerate() {
            bits[i] = field.parse(fields[i])?;
        }
        // Sunday is 0 and 7.
        let weekdays = ((bits[4] | (bits[4] >> 7)) & 0x7f) as u8;
        Ok(Cron {
            minutes: bits[0],
            hours: bits[1] as u32,
            days: bits[2] as u32,
            months: bits[3] as u16,
            weekdays,
            any_day: fields[2].starts_with('*'),
            any_weekday: fields[4].starts_with('*'),
        })
    }

    fn day_matches(&self, days_since_epoch: i64, day: u32) -> bool {
        let weekday = (days_since_epoch + 4).rem_euclid(7) as u32;
        let (dom, dow) = (self.days & (1 << day) != 0, self.weekdays & (1 << weekday) != 0);
        if self.any_day || self.any_weekday { dom && dow } else { dom || dow }
    }

    /// The first firing strictly after `after` (seconds since the epoch), in seconds, within [`SEARCH_DAYS`].
    pub fn next_after(&self, after: i64, zone: Zone) -> Option<i64> {
        let start = zone.civil(after.div_euclid(60) * 60 + 60);
        let first_day = days_from_civil(start.year, i64::from(start.month), i64::from(start.day));
        for offset in 0..=SEARCH_DAYS {
            let days = first_day + offset;
            let (year, month, day) = civil(days);
            let (month, day) = (month as u32, day as u32);
            if self.months & (1 << month) == 0 || !self.day_matches(days, day) {
                continue;
            }
            let from_hour = if offset == 0 { start.hour } else { 0 };
            for hour in (from_hour..24).filter(|h| self.hours & (1 << h) != 0) {
                let from_minute = if offset == 0 && hour == start.hour { start.minute } else { 0 };
                for minute in (from_minute..60).filter(|m| self.minutes & (1 << m) != 0) {
                    let at = zone.epoch(Civil { year, month, day, hour, minute })?;
                    if at > after {
                        return Some(at);
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seconds of a UTC calendar minute.
    fn utc(year: i64, month: u32, day: u32, hour: u32, minute: u32) -> i64 {
        Zone::Utc.epoch(Civil { year, month, day, hour, minute }).unwrap()
    }

    fn show(secs: i64) -> String {
        let c = Zone::Utc.civil(secs);
        format!("{:04}-{:02}-{:02} {:02}:{:02}", c.year, c.month, c.day, c.hour, c.minute)
    }

    #[test]
    fn next_firings_follow_the_table() {
        // 2026-12-01 07:30 UTC is a Tuesday.
        let after = utc(2026, 12, 1, 7, 30);
        let table = [
            ("* * * * *", "2026-12-01 07:31"),
            ("*/15 * * * *", "2026-12-01 07:45"),
            ("0 * * * *", "2026-12-01 08:00"),
            ("30 7 * * *", "2026-12-02 07:30"),
            ("0 9 * * 1-5", "2026-12-01 09:00"),
            ("0 9 * * mon", "2026-12-07 09:00"),
            ("0 9 * * 0", "2026-12-06 09:00"),
            ("0 9 * * 7", "2026-12-06 09:00"),
            ("0 9 * * SAT,sun", "2026-12-05 09:00"),
            ("0 0 1 * *", "2027-01-01 00:00"),
            ("0 0 1 jan *", "2027-01-01 00:00"),
            ("0 0 29 feb *", "2028-02-29 00:00"),
            ("5-10/2 8 * * *", "2026-12-01 08:05"),
            ("40/10 7 * * *", "2026-12-01 07:40"),
            ("0,30 7,8 * * *", "2026-12-01 08:00"),
            // Both day fields restricted: either one fires (the 15th, or any Friday).
            ("0 12 15 * fri", "2026-12-04 12:00"),
            // A day-of-month step starting with `*` restricts together with the weekday.
            ("0 12 */2 * fri", "2026-12-11 12:00"),
            ("0 0 31 * *", "2026-12-31 00:00"),
            ("59 23 31 12 *", "2026-12-31 23:59"),
        ];
        for (expression, expected) in table {
            let cron = Cron::parse(expression).unwrap_or_else(|e| panic!("{expression}: {e}"));
            let next = cron.next_after(after, Zone::Utc).map(show);
            assert_eq!(next.as_deref(), Some(expected), "{expression}");
        }
        assert_eq!(Cron::parse("0 0 30 2 *").unwrap().next_after(after, Zone::Utc), None, "30 February");
        assert_eq!(
            Cron::parse("30 7 * * *").unwrap().next_after(utc(2026, 12, 1, 7, 29) + 59, Zone::Utc).map(show),
            Some("2026-12-01 07:30".into()),
            "a firing in the same minute but later in it still counts"
        );
    }

    #[test]
    fn bad_expressions_are_refused_with_the_reason() {
        let table = [
            (
                "* * * *",
                "a cron expression has 5 fields (minute hour day-of-month month day-of-week), `* * * *` has 4",
            ),
            ("60 * * * *", "minute 60 is out of range 0-59"),
            ("* 24 * * *", "hour 24 is out of range 0-23"),
            ("* * 0 * *", "day of month 0 is out of range 1-31"),
            ("* * * 13 *", "month 13 is out of range 1-12"),
            ("* * * * 8", "day of week 8 is out of range 0-7"),
            ("*/0 * * * *", "step `0` in the minute field must be a number from 1 to 59"),
            ("10-5 * * * *", "range `10-5` in the minute field runs backwards"),
            ("1,,2 * * * *", "the minute field `1,,2` has an empty item"),
            ("* * * foo *", "`foo` is not a valid month"),
            (
                "@daily",
                "a cron expression has 5 fields (minute hour day-of-month month day-of-week), `@daily` has 1",
            ),
        ];
        for (expression, error) in table {
            assert_eq!(Cron::parse(expression).unwrap_err(), error, "{expression}");
        }
    }

    #[test]
    fn local_time_round_trips_through_the_c_library() {
        let now = 1_795_996_800;
        let minute = now / 60 * 60;
        assert_eq!(Zone::Local.epoch(Zone::Local.civil(minute)), Some(minute));
    }
}
