//! `[brief]`: one message in the morning with what is due, what is on the
//! calendar and what changed, sent where the LMS notices go (`[lms]
//! deliver`). On by default where LMS sources are configured.

use std::fmt::Write;

use chrono::{NaiveTime, Weekday};
use serde::Deserialize;

use super::ConfigError;
use super::render::quote;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBrief {
    pub enabled: Option<bool>,
    pub at: Option<String>,
    pub days: Option<Vec<String>>,
    pub ahead_days: Option<u32>,
    pub quiet_when_empty: Option<bool>,
    pub calendar: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefConfig {
    /// `None`: on where LMS sources are configured.
    pub enabled: Option<bool>,
    /// The local time of day (`[lms] time_zone`) it is sent at.
    pub at: NaiveTime,
    /// The weekdays it is sent on.
    pub days: Vec<Weekday>,
    /// Due dates of this many days after today are listed too.
    pub ahead_days: u32,
    /// A day with nothing to tell sends nothing.
    pub quiet_when_empty: bool,
    /// The person's own calendar, read for today's events: an address
    /// that gives it as iCalendar (a CalDAV collection such as Radicale's,
    /// a calendar's secret iCal address); credentials in the URL go as
    /// HTTP basic auth.
    pub calendar: Option<String>,
}

impl Default for BriefConfig {
    fn default() -> Self {
        Self {
            enabled: None,
            at: NaiveTime::from_hms_opt(7, 30, 0).unwrap_or_default(),
            days: ALL.to_vec(),
            ahead_days: 3,
            quiet_when_empty: true,
            calendar: None,
        }
    }
}

const ALL: [Weekday; 7] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
    Weekday::Sat,
    Weekday::Sun,
];

impl BriefConfig {
    /// Whether the brief is sent, given whether LMS sources are configured.
    pub fn on(&self, lms_sources: bool) -> bool {
        self.enabled.unwrap_or(lms_sources)
    }

    pub(super) fn from_raw(raw: Option<RawBrief>) -> Result<Self, ConfigError> {
        let r = raw.unwrap_or_default();
        let d = Self::default();
        let at = match r.at.as_deref().map(str::trim) {
            None => d.at,
            Some(text) => NaiveTime::parse_from_str(text, "%H:%M").map_err(|_| {
                ConfigError::invalid("brief.at", format!("`{text}` is not a time like \"07:30\""))
            })?,
        };
        let days = match r.days {
            None => d.days,
            Some(days) => days
                .iter()
                .map(|day| {
                    day.trim().parse::<Weekday>().map_err(|_| {
                        ConfigError::invalid(
                            "brief.days",
                            format!("`{day}` is not a weekday (mon, tue, …)"),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let ahead_days = r.ahead_days.unwrap_or(d.ahead_days);
        if ahead_days > 14 {
            return Err(ConfigError::invalid(
                "brief.ahead_days",
                "must be between 0 and 14",
            ));
        }
        if let Some(url) = &r.calendar {
            match reqwest::Url::parse(url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => {
                    return Err(ConfigError::invalid(
                        "brief.calendar",
                        "is not an http(s) URL",
                    ));
                }
            }
        }
        Ok(Self {
            enabled: r.enabled,
            at,
            days,
            ahead_days,
            quiet_when_empty: r.quiet_when_empty.unwrap_or(d.quiet_when_empty),
            calendar: r.calendar.filter(|c| !c.trim().is_empty()),
        })
    }

    pub(super) fn render(&self, out: &mut String) {
        let days: Vec<String> = self
            .days
            .iter()
            .map(|d| quote(&d.to_string().to_lowercase()))
            .collect();
        let _ = writeln!(
            out,
            "[brief]\n{}at = \"{}\"\ndays = [{}]\nahead_days = {}\nquiet_when_empty = {}\n{}",
            match self.enabled {
                Some(on) => format!("enabled = {on}\n"),
                None => "# enabled: on where LMS sources are configured\n".to_string(),
            },
            self.at.format("%H:%M"),
            days.join(", "),
            self.ahead_days,
            self.quiet_when_empty,
            match &self.calendar {
                Some(url) => format!("calendar = {}\n", quote(&super::mask_url(url))),
                None => "# calendar: not set\n".to_string(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_days_are_read_and_bad_ones_named() {
        let c = BriefConfig::from_raw(Some(RawBrief {
            at: Some("06:45".into()),
            days: Some(vec!["mon".into(), "Fri".into()]),
            ..RawBrief::default()
        }))
        .unwrap();
        assert_eq!(c.at, NaiveTime::from_hms_opt(6, 45, 0).unwrap());
        assert_eq!(c.days, [Weekday::Mon, Weekday::Fri]);
        assert!(c.on(true) && !c.on(false));
        for (bad, key) in [
            (
                RawBrief {
                    at: Some("7am".into()),
                    ..RawBrief::default()
                },
                "brief.at",
            ),
            (
                RawBrief {
                    days: Some(vec!["someday".into()]),
                    ..RawBrief::default()
                },
                "brief.days",
            ),
            (
                RawBrief {
                    ahead_days: Some(40),
                    ..RawBrief::default()
                },
                "brief.ahead_days",
            ),
            (
                RawBrief {
                    calendar: Some("file:///etc/passwd".into()),
                    ..RawBrief::default()
                },
                "brief.calendar",
            ),
        ] {
            let e = BriefConfig::from_raw(Some(bad)).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }
}
