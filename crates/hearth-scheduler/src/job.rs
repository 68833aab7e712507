//! A scheduled job: when it runs, what it does, where the result goes.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// When a job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// A cron expression (5 fields, or 6 with seconds), read in the job's
    /// time zone.
    Cron(String),
    /// Once, at this instant; the job is removed when it fires.
    At(DateTime<Utc>),
    /// Repeatedly, this long apart, from when it was added.
    Every(Duration),
}

/// The shortest interval an `every` job may have.
pub const MIN_INTERVAL: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("`{expression}` is not a cron expression: {reason}")]
    BadCron { expression: String, reason: String },
    #[error("`{expression}` never runs again")]
    NeverRuns { expression: String },
    #[error("that time ({0}) has already passed")]
    InThePast(String),
    #[error("an interval must be at least {} seconds", MIN_INTERVAL.as_secs())]
    TooShort,
}

impl Schedule {
    /// Parses and checks a cron expression.
    pub fn cron(expression: &str) -> Result<Self, ScheduleError> {
        let expression = expression.trim();
        croner::Cron::from_str(expression).map_err(|e| ScheduleError::BadCron {
            expression: expression.to_string(),
            reason: e.to_string(),
        })?;
        Ok(Self::Cron(expression.to_string()))
    }

    /// The first run strictly after `after`, or `None` when it never runs
    /// again (a one-shot whose time has passed).
    pub fn next_after(
        &self,
        after: DateTime<Utc>,
        tz: Tz,
    ) -> Result<Option<DateTime<Utc>>, ScheduleError> {
        match self {
            Self::Cron(expression) => {
                let cron =
                    croner::Cron::from_str(expression).map_err(|e| ScheduleError::BadCron {
                        expression: expression.clone(),
                        reason: e.to_string(),
                    })?;
                match cron.find_next_occurrence(&after.with_timezone(&tz), false) {
                    Ok(t) => Ok(Some(t.with_timezone(&Utc))),
                    Err(_) => Ok(None),
                }
            }
            Self::At(t) => Ok((*t > after).then_some(*t)),
            Self::Every(d) => {
                let d = chrono::Duration::from_std(*d).map_err(|_| ScheduleError::TooShort)?;
                Ok(Some(after + d))
            }
        }
    }

    /// The run after one that was due at `due` and ran at `now`: the first
    /// scheduled time after `now`, so runs missed meanwhile are not made up
    /// one by one. Intervals stay on their grid (`due + k × interval`).
    pub fn following(
        &self,
        due: DateTime<Utc>,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> Result<Option<DateTime<Utc>>, ScheduleError> {
        match self {
            Self::Every(d) => {
                let step = d.as_secs().max(1) as i64;
                let behind = (now - due).num_seconds().max(0);
                let steps = behind / step + 1;
                Ok(Some(due + chrono::Duration::seconds(steps * step)))
            }
            // A one-shot that fired has no next run, whatever its precision
            // (the store keeps whole seconds; `now` may be a fraction before).
            Self::At(_) => Ok(None),
            Self::Cron(_) => self.next_after(now, tz),
        }
    }

    /// How it is stored and shown: its kind and its text.
    pub fn parts(&self) -> (&'static str, String) {
        match self {
            Self::Cron(e) => ("cron", e.clone()),
            Self::At(t) => ("at", t.to_rfc3339()),
            Self::Every(d) => ("every", d.as_secs().to_string()),
        }
    }

    pub fn from_parts(kind: &str, spec: &str) -> Option<Self> {
        match kind {
            "cron" => Self::cron(spec).ok(),
            "at" => DateTime::parse_from_rfc3339(spec)
                .ok()
                .map(|t| Self::At(t.with_timezone(&Utc))),
            "every" => spec
                .parse()
                .ok()
                .map(|s| Self::Every(Duration::from_secs(s))),
            _ => None,
        }
    }

    /// A short human description.
    pub fn describe(&self, tz: Tz) -> String {
        match self {
            Self::Cron(e) => format!("cron `{e}` ({})", tz.name()),
            Self::At(t) => format!(
                "once at {}",
                t.with_timezone(&tz).format("%Y-%m-%d %H:%M %Z")
            ),
            Self::Every(d) => format!("every {}", super::parse::format_duration(*d)),
        }
    }
}

/// What a job does when it fires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Payload {
    /// Run this prompt through the agent and send the reply.
    AgentPrompt { prompt: String },
    /// Poll the LMS (one source by name, or all of them).
    LmsPoll { source: Option<String> },
}

impl Payload {
    pub fn describe(&self) -> String {
        match self {
            Self::AgentPrompt { prompt } => format!("prompt: {prompt}"),
            Self::LmsPoll { source: None } => "LMS poll (all sources)".to_string(),
            Self::LmsPoll { source: Some(s) } => format!("LMS poll ({s})"),
        }
    }
}

/// Where a job's result is delivered, and for whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// A channel name (`"telegram"`, `"cli"`).
    pub channel: String,
    /// The chat (a `ChannelMessage::reply_target`).
    pub to: String,
    pub thread: Option<String>,
    /// Who set the job (a sender id in that chat): it runs with their
    /// memory and workspace. `None` (a job the command line added): the
    /// chat's own person, as in a private chat.
    pub owner: Option<String>,
}

impl Delivery {
    /// The sender the job's turns run as.
    pub fn owner(&self) -> &str {
        self.owner.as_deref().unwrap_or(&self.to)
    }
}

/// A job to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    pub name: Option<String>,
    pub schedule: Schedule,
    pub timezone: Tz,
    pub payload: Payload,
    pub delivery: Delivery,
}

/// A stored job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: i64,
    pub name: Option<String>,
    pub schedule: Schedule,
    pub timezone: Tz,
    pub payload: Payload,
    pub delivery: Delivery,
    pub next_run: DateTime<Utc>,
    pub last_run: Option<DateTime<Utc>>,
    /// Why the last run failed, if it did.
    pub last_error: Option<String>,
    /// Paused: never due until resumed.
    pub paused: bool,
}

impl Job {
    /// One line for listings.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "#{} {} → {}:{} next {}",
            self.id,
            self.schedule.describe(self.timezone),
            self.delivery.channel,
            self.delivery.to,
            self.next_run
                .with_timezone(&self.timezone)
                .format("%Y-%m-%d %H:%M %Z"),
        );
        if let Some(n) = &self.name {
            s.push_str(&format!(" [{n}]"));
        }
        if self.paused {
            s.push_str(" (paused)");
        }
        s.push_str(&format!(" — {}", self.payload.describe()));
        if let Some(e) = &self.last_error {
            s.push_str(&format!(" (last run failed: {e})"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    #[test]
    fn cron_follows_its_time_zone() {
        let s = Schedule::cron("0 9 * * *").unwrap();
        // 09:00 in Seoul is 00:00 UTC.
        let next = s
            .next_after(utc(2025, 3, 1, 1, 0), chrono_tz::Asia::Seoul)
            .unwrap();
        assert_eq!(next, Some(utc(2025, 3, 2, 0, 0)));
        assert!(Schedule::cron("61 * * * *").is_err());
        assert!(Schedule::cron("every day").is_err());
    }

    #[test]
    fn following_skips_missed_runs() {
        let tz = chrono_tz::UTC;
        let hourly = Schedule::cron("0 * * * *").unwrap();
        let due = utc(2025, 1, 1, 9, 0);
        let now = utc(2025, 1, 1, 14, 30);
        assert_eq!(
            hourly.following(due, now, tz).unwrap(),
            Some(utc(2025, 1, 1, 15, 0))
        );
        let every = Schedule::Every(Duration::from_secs(3600));
        assert_eq!(
            every.following(due, now, tz).unwrap(),
            Some(utc(2025, 1, 1, 15, 0))
        );
        assert_eq!(
            every.following(due, due, tz).unwrap(),
            Some(utc(2025, 1, 1, 10, 0))
        );
        let once = Schedule::At(due);
        assert_eq!(once.following(due, now, tz).unwrap(), None);
    }

    #[test]
    fn parts_round_trip() {
        for s in [
            Schedule::cron("*/5 * * * *").unwrap(),
            Schedule::At(utc(2030, 5, 6, 7, 8)),
            Schedule::Every(Duration::from_secs(900)),
        ] {
            let (kind, spec) = s.parts();
            assert_eq!(Schedule::from_parts(kind, &spec), Some(s));
        }
        assert_eq!(Schedule::from_parts("weekly", "x"), None);
    }
}
