//! `[scheduler]`: cron jobs, reminders and timed LMS polls.

use std::fmt::Write;

use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScheduler {
    pub enabled: Option<bool>,
    pub timezone: Option<String>,
    pub max_jobs: Option<usize>,
    pub max_jobs_per_person: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfig {
    /// Off: no jobs run and the cron tools are not offered.
    pub enabled: bool,
    /// The time zone of jobs that name none (an IANA name).
    pub timezone: chrono_tz::Tz,
    /// Jobs kept at most; adding more is refused.
    pub max_jobs: usize,
    /// Jobs one person (a sender in a channel) may keep, so that one
    /// person's reminders cannot use up everyone's room.
    pub max_jobs_per_person: usize,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            timezone: chrono_tz::UTC,
            max_jobs: 100,
            max_jobs_per_person: 25,
        }
    }
}

impl SchedulerConfig {
    pub(super) fn from_raw(raw: Option<RawScheduler>) -> Result<Self, ConfigError> {
        let r = raw.unwrap_or_default();
        let d = Self::default();
        let timezone = match r.timezone.as_deref() {
            None => d.timezone,
            Some(name) => name.parse().map_err(|_| {
                ConfigError::invalid(
                    "scheduler.timezone",
                    format!("`{name}` is not an IANA time zone (try \"Europe/Berlin\", \"Asia/Seoul\", \"UTC\")"),
                )
            })?,
        };
        let c = Self {
            enabled: r.enabled.unwrap_or(d.enabled),
            timezone,
            max_jobs: r.max_jobs.unwrap_or(d.max_jobs),
            max_jobs_per_person: r.max_jobs_per_person.unwrap_or(d.max_jobs_per_person),
        };
        if !(1..=10_000).contains(&c.max_jobs) {
            return Err(ConfigError::invalid(
                "scheduler.max_jobs",
                "must be between 1 and 10000",
            ));
        }
        if !(1..=10_000).contains(&c.max_jobs_per_person) {
            return Err(ConfigError::invalid(
                "scheduler.max_jobs_per_person",
                "must be between 1 and 10000",
            ));
        }
        Ok(c)
    }

    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "[scheduler]\nenabled = {}\ntimezone = \"{}\"\nmax_jobs = {}\nmax_jobs_per_person = {}\n",
            self.enabled,
            self.timezone.name(),
            self.max_jobs,
            self.max_jobs_per_person
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_zones_are_checked() {
        let c = SchedulerConfig::from_raw(Some(RawScheduler {
            timezone: Some("Asia/Seoul".into()),
            ..RawScheduler::default()
        }))
        .unwrap();
        assert_eq!(c.timezone, chrono_tz::Asia::Seoul);
        let e = SchedulerConfig::from_raw(Some(RawScheduler {
            timezone: Some("Mars/Olympus".into()),
            ..RawScheduler::default()
        }))
        .unwrap_err()
        .to_string();
        assert!(e.contains("scheduler.timezone"), "{e}");
    }
}
