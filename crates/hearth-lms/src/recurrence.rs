//! Recurring calendar events expanded into occurrences, with the `rrule`
//! crate: RRULE, EXDATE and RDATE, in the event's own time zone, so a weekly
//! 10:00 lecture stays at 10:00 across a daylight-saving change.
//!
//! Only the occurrences within a [`Window`] around now are produced: the
//! notifier cares about what is coming up, and a rule without an end would
//! otherwise never stop.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use rrule::{RRule, RRuleSet, Unvalidated};

/// The most occurrences one series yields within a window.
const MAX_OCCURRENCES: u16 = 500;

/// The stretch of time occurrences are produced for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

impl Window {
    /// From a day before `now` (so today's earlier lecture is still listed)
    /// to `horizon` after it.
    pub fn around(now: DateTime<Utc>, horizon: std::time::Duration) -> Self {
        Self {
            from: now - Duration::days(1),
            until: now + Duration::from_std(horizon).unwrap_or(Duration::days(14)),
        }
    }

    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        self.from <= t && t <= self.until
    }
}

/// A series as the calendar states it.
pub struct Series<'a> {
    pub start: DateTime<Utc>,
    /// The zone the rule counts in: the event's TZID, else the user's.
    pub zone: Tz,
    /// RRULE values (`FREQ=WEEKLY;COUNT=10`).
    pub rules: &'a [String],
    pub exdates: &'a [DateTime<Utc>],
    pub rdates: &'a [DateTime<Utc>],
}

/// A recurrence rule that could not be read or does not fit its event.
#[derive(Debug, thiserror::Error)]
#[error("RRULE `{rule}`: {source}")]
pub struct RuleError {
    pub rule: String,
    pub source: Box<rrule::RRuleError>,
}

/// The occurrence starts of `series` within `window`, in order. A rule the
/// crate cannot read is an error naming it.
pub fn occurrences(series: &Series<'_>, window: &Window) -> Result<Vec<DateTime<Utc>>, RuleError> {
    let tz = rrule::Tz::Tz(series.zone);
    let start = series.start.with_timezone(&tz);
    let mut set = RRuleSet::new(start);
    for rule in series.rules {
        let text = utc_until(rule, series.zone);
        let error = |source: rrule::RRuleError| RuleError {
            rule: rule.clone(),
            source: Box::new(source),
        };
        let parsed: RRule<Unvalidated> = text.parse().map_err(error)?;
        let valid = parsed.validate(start).map_err(error)?;
        set = set.rrule(valid);
    }
    for d in series.rdates {
        set = set.rdate(d.with_timezone(&tz));
    }
    for d in series.exdates {
        set = set.exdate(d.with_timezone(&tz));
    }
    let found = set
        .after(window.from.with_timezone(&tz))
        .before(window.until.with_timezone(&tz))
        .all(MAX_OCCURRENCES);
    Ok(found
        .dates
        .into_iter()
        .map(|d| d.with_timezone(&Utc))
        .collect())
}

/// The key that names one occurrence: its original start in UTC, as an
/// iCal RECURRENCE-ID would say it.
pub fn key(start: DateTime<Utc>) -> String {
    start.format("%Y%m%dT%H%M%SZ").to_string()
}

/// RFC 5545 lets UNTIL be a date or a local time; the crate wants UTC when
/// the start has a zone. A date means the end of that day.
fn utc_until(rule: &str, zone: Tz) -> String {
    rule.split(';')
        .map(|part| {
            let Some(value) = part
                .strip_prefix("UNTIL=")
                .or_else(|| part.strip_prefix("until="))
            else {
                return part.to_string();
            };
            if value.ends_with('Z') {
                return part.to_string();
            }
            let local = NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S")
                .ok()
                .or_else(|| {
                    NaiveDate::parse_from_str(value, "%Y%m%d")
                        .ok()
                        .and_then(|d| d.and_hms_opt(23, 59, 59))
                });
            match local.and_then(|l| zone.from_local_datetime(&l).latest()) {
                Some(t) => format!("UNTIL={}", key(t.with_timezone(&Utc))),
                None => part.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_weekly_rule_keeps_local_time_across_dst_and_skips_exdates() {
        // Mondays 10:00 Berlin from 17 March 2025; clocks go forward on 30 March.
        let rules = ["FREQ=WEEKLY;BYDAY=MO;UNTIL=20250414".to_string()];
        let exdates = [utc("2025-03-24T09:00:00Z")];
        let series = Series {
            start: utc("2025-03-17T09:00:00Z"),
            zone: chrono_tz::Europe::Berlin,
            rules: &rules,
            exdates: &exdates,
            rdates: &[],
        };
        let window = Window {
            from: utc("2025-03-01T00:00:00Z"),
            until: utc("2025-06-01T00:00:00Z"),
        };
        let got = occurrences(&series, &window).unwrap();
        assert_eq!(
            got,
            [
                utc("2025-03-17T09:00:00Z"),
                utc("2025-03-31T08:00:00Z"),
                utc("2025-04-07T08:00:00Z"),
                utc("2025-04-14T08:00:00Z"),
            ],
            "24 March is excluded; 10:00 CEST is 08:00 UTC; UNTIL a date includes that day"
        );
        let near = Window::around(
            utc("2025-04-02T12:00:00Z"),
            std::time::Duration::from_secs(7 * 86_400),
        );
        assert_eq!(
            occurrences(&series, &near).unwrap(),
            [utc("2025-04-07T08:00:00Z")]
        );
        assert_eq!(key(got[0]), "20250317T090000Z");
    }

    #[test]
    fn an_unreadable_rule_is_an_error_naming_it() {
        let rules = ["FREQ=SOMETIMES".to_string()];
        let series = Series {
            start: utc("2025-03-17T09:00:00Z"),
            zone: chrono_tz::UTC,
            rules: &rules,
            exdates: &[],
            rdates: &[],
        };
        let window = Window::around(
            utc("2025-03-17T00:00:00Z"),
            std::time::Duration::from_secs(86_400),
        );
        let e = occurrences(&series, &window).unwrap_err();
        assert!(e.rule.contains("FREQ=SOMETIMES"), "{e}");
        assert!(e.to_string().starts_with("RRULE `"), "{e}");
    }
}
