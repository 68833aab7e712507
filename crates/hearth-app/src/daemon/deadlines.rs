//! The person's deadlines as calendar events: the LMS's dated items and
//! the one-off jobs set for the person the LMS tells (`[lms] deliver`),
//! from `lms.sqlite3` and the job store; nothing of anyone else's, nothing
//! but dates, titles and links. The gateway serves them as a feed
//! (`/cal/<secret>.ics`); with `[lms] caldav` they are written into the
//! person's CalDAV calendar after every poll.

use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::brief::reminders;
use crate::config::{LmsConfig, LmsTarget};
use crate::lms::{FeedEvent, LmsError, Published, SeenStore, feed_uid, ics, publish_to_caldav};
use crate::scheduler::Scheduler;

/// The calendar's name in a calendar app.
pub const NAME: &str = "hearth: deadlines";
/// How far ahead the person's reminders are listed.
const AHEAD_DAYS: i64 = 183;

pub struct Deadlines {
    store: Arc<SeenStore>,
    jobs: Option<Arc<Scheduler>>,
    person: Option<LmsTarget>,
    time_zone: chrono_tz::Tz,
    caldav: Option<String>,
}

impl Deadlines {
    /// The deadlines of `lms.sqlite3` in `data_dir`, for `lms`'s person.
    pub fn open(
        data_dir: &Path,
        lms: &LmsConfig,
        jobs: Option<Arc<Scheduler>>,
    ) -> Result<Self, LmsError> {
        Ok(Self::over(
            Arc::new(SeenStore::open_in(data_dir)?),
            lms,
            jobs,
        ))
    }

    /// The deadlines of `store` (the notifier's, where it runs).
    pub fn over(store: Arc<SeenStore>, lms: &LmsConfig, jobs: Option<Arc<Scheduler>>) -> Self {
        Self {
            store,
            jobs,
            person: lms.deliver.clone(),
            time_zone: lms.time_zone,
            caldav: lms.caldav.clone(),
        }
    }

    /// Every event at `now`, soonest first.
    pub fn events(&self, now: DateTime<Utc>) -> Result<Vec<FeedEvent>, LmsError> {
        let mut events = self.store.feed_events(now)?;
        events.extend(self.job_events(now));
        events.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| a.uid.cmp(&b.uid)));
        Ok(events)
    }

    /// The person's one-off jobs still to come (a reminder they asked for).
    fn job_events(&self, now: DateTime<Utc>) -> Vec<FeedEvent> {
        let (Some(jobs), Some(person)) = (&self.jobs, &self.person) else {
            return Vec::new();
        };
        let until = now + chrono::Duration::days(AHEAD_DAYS);
        reminders(jobs, person, now, until)
            .into_iter()
            .map(|r| FeedEvent {
                uid: feed_uid(&["job", &r.job.to_string()]),
                summary: format!("Reminder: {}", r.what),
                start: r.at,
                all_day: false,
                description: None,
                url: None,
                modified: r.touched.unwrap_or(now),
            })
            .collect()
    }

    /// The feed's text at `now`.
    pub fn text(&self, now: DateTime<Utc>) -> Result<String, LmsError> {
        Ok(ics(&self.events(now)?, NAME, self.time_zone, now))
    }

    /// Whether `secret` opens the feed.
    pub fn allows(&self, secret: &str) -> Result<bool, LmsError> {
        self.store.feed_allows(secret)
    }

    /// Writes the events into `[lms] caldav`, if set: `None` without one.
    pub async fn publish(&self, now: DateTime<Utc>) -> Result<Option<Published>, LmsError> {
        let Some(url) = &self.caldav else {
            return Ok(None);
        };
        let events = self.events(now)?;
        publish_to_caldav(&self.store, &events, url, NAME, (self.time_zone, now))
            .await
            .map(Some)
    }
}
