//! Times and durations as people and models write them.
//!
//! Durations: `90s`, `15m`, `2h`, `1d`, `1h30m`, `2h 15min` (`humantime`'s
//! reading; a bare number is seconds).
//! Times: RFC 3339 with an offset (`2025-06-02T09:00:00+09:00`), or a local
//! date and time in the job's zone (`2025-06-02 09:00`, `2025-06-02T09:00`),
//! or a time of day alone (`09:00`: the next such time).

use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

/// Why a duration or a time was not understood; each says what would be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error("an empty duration")]
    Empty,
    #[error("`{0}` is not a duration (try 90s, 15m, 2h, 1d, 1h30m)")]
    NotADuration(String),
    #[error("`{text}` is not a duration (a number must precede `{unit}`)")]
    NoNumber { text: String, unit: char },
    #[error("`{0}` is too long")]
    TooLong(String),
    #[error("`{0}` ends without a unit (s, m, h, d, w)")]
    NoUnit(String),
    #[error("{time} does not exist in {zone} (a clock change)")]
    Skipped { time: NaiveDateTime, zone: String },
    #[error("the date is out of range")]
    OutOfRange,
    #[error("`{0}` is not a time (try 2025-06-02 09:00, 2025-06-02T09:00:00+09:00, or 09:00)")]
    NotATime(String),
}

/// A duration such as `1h30m` or `2h 15min` (read by `humantime`); a bare
/// number is seconds, and a duration is whole seconds.
pub fn parse_duration(text: &str) -> Result<Duration, TimeError> {
    let t = text.trim().to_lowercase();
    if t.is_empty() {
        return Err(TimeError::Empty);
    }
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let d = humantime::parse_duration(&t).map_err(|e| match e {
        humantime::DurationError::Empty => TimeError::Empty,
        humantime::DurationError::NumberOverflow => TimeError::TooLong(text.to_string()),
        humantime::DurationError::UnknownUnit { unit, .. } if unit.is_empty() => {
            TimeError::NoUnit(text.to_string())
        }
        humantime::DurationError::NumberExpected(at) => TimeError::NoNumber {
            text: text.to_string(),
            unit: t[at..].chars().next().unwrap_or(' '),
        },
        _ => TimeError::NotADuration(text.to_string()),
    })?;
    if d.subsec_nanos() != 0 {
        return Err(TimeError::NotADuration(text.to_string()));
    }
    Ok(d)
}

/// `d` as `1h30m`-style text.
pub fn format_duration(d: Duration) -> String {
    let mut s = d.as_secs();
    if s == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
        if s >= size {
            out.push_str(&format!("{}{unit}", s / size));
            s %= size;
        }
    }
    out
}

/// An instant from `text`, read in `tz` unless it carries an offset; a
/// time of day alone is the next such time after `now`.
pub fn parse_at(text: &str, tz: Tz, now: DateTime<Utc>) -> Result<DateTime<Utc>, TimeError> {
    let t = text.trim();
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.with_timezone(&Utc));
    }
    let local = |naive: NaiveDateTime| -> Result<DateTime<Utc>, TimeError> {
        tz.from_local_datetime(&naive)
            .earliest()
            .map(|d| d.with_timezone(&Utc))
            .ok_or_else(|| TimeError::Skipped {
                time: naive,
                zone: tz.name().to_string(),
            })
    };
    for format in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(t, format) {
            return local(naive);
        }
    }
    for format in ["%H:%M", "%H:%M:%S"] {
        if let Ok(time) = NaiveTime::parse_from_str(t, format) {
            let today: NaiveDate = now.with_timezone(&tz).date_naive();
            let candidate = local(today.and_time(time))?;
            if candidate > now {
                return Ok(candidate);
            }
            let tomorrow = today.succ_opt().ok_or(TimeError::OutOfRange)?;
            return local(tomorrow.and_time(time));
        }
    }
    Err(TimeError::NotATime(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s").unwrap().as_secs(), 90);
        assert_eq!(parse_duration("1h30m").unwrap().as_secs(), 5_400);
        assert_eq!(parse_duration("2D").unwrap().as_secs(), 172_800);
        assert_eq!(parse_duration("45").unwrap().as_secs(), 45);
        assert_eq!(parse_duration("2h 15min").unwrap().as_secs(), 8_100);
        assert_eq!(parse_duration("1.5h").unwrap().as_secs(), 5_400);
        for bad in [
            "",
            "h",
            "5x",
            "3h5",
            "99999999999999999999w",
            "500ms",
            "0.5s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(matches!(
            parse_duration("h"),
            Err(TimeError::NoNumber { .. })
        ));
        assert!(matches!(parse_duration("3h5"), Err(TimeError::NoUnit(_))));
        assert!(matches!(
            parse_duration("99999999999999999999w"),
            Err(TimeError::TooLong(_))
        ));
        assert_eq!(format_duration(Duration::from_secs(5_400)), "1h30m");
    }

    #[test]
    fn times_in_a_zone() {
        let seoul = chrono_tz::Asia::Seoul;
        let now = Utc.with_ymd_and_hms(2025, 6, 1, 3, 0, 0).unwrap(); // 12:00 in Seoul
        let at = parse_at("2025-06-02 09:00", seoul, now).unwrap();
        assert_eq!(at, Utc.with_ymd_and_hms(2025, 6, 2, 0, 0, 0).unwrap());
        assert_eq!(parse_at("2025-06-02T09:00", seoul, now).unwrap(), at);
        let offset = parse_at("2025-06-02T09:00:00+00:00", seoul, now).unwrap();
        assert_eq!(offset, Utc.with_ymd_and_hms(2025, 6, 2, 9, 0, 0).unwrap());
        // 09:00 has passed today in Seoul: tomorrow's.
        assert_eq!(parse_at("09:00", seoul, now).unwrap(), at);
        // 15:00 is still ahead today.
        assert_eq!(
            parse_at("15:00", seoul, now).unwrap(),
            Utc.with_ymd_and_hms(2025, 6, 1, 6, 0, 0).unwrap()
        );
        assert!(parse_at("tomorrow-ish", seoul, now).is_err());
        // 02:30 does not exist in Berlin on the spring change.
        assert!(matches!(
            parse_at("2025-03-30 02:30", chrono_tz::Europe::Berlin, now),
            Err(TimeError::Skipped { .. })
        ));
    }
}
