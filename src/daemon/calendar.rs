//! The calendar feed the gateway serves (`/cal/<secret>.ics`): the LMS's
//! dated items and the one-off jobs set for the person the LMS tells
//! (`[lms] deliver`), from `lms.sqlite3` and the job store. Nothing of
//! anyone else's, and nothing but dates, titles and links.

use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::channels::gateway::{CalendarError, CalendarFeed};
use crate::config::{LmsConfig, LmsTarget};
use crate::daemon::brief::reminders;
use crate::lms::{FeedEvent, LmsError, SeenStore, feed_uid, ics};
use crate::scheduler::Scheduler;

/// The feed's name in a calendar app.
pub const NAME: &str = "hearth: deadlines";
/// How far ahead the person's reminders are listed.
const AHEAD_DAYS: i64 = 183;

pub struct DeadlineFeed {
    store: SeenStore,
    jobs: Option<Arc<Scheduler>>,
    person: Option<LmsTarget>,
    time_zone: chrono_tz::Tz,
}

impl DeadlineFeed {
    /// The feed of `lms.sqlite3` in `data_dir`, for `lms`'s person.
    pub fn open(
        data_dir: &Path,
        lms: &LmsConfig,
        jobs: Option<Arc<Scheduler>>,
    ) -> Result<Self, LmsError> {
        Ok(Self {
            store: SeenStore::open_in(data_dir)?,
            jobs,
            person: lms.deliver.clone(),
            time_zone: lms.time_zone,
        })
    }

    /// Every event of the feed at `now`, soonest first.
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
}

impl CalendarFeed for DeadlineFeed {
    fn feed(&self, secret: &str) -> Result<Option<String>, CalendarError> {
        let err = |e: LmsError| CalendarError(e.to_string());
        if !self.store.feed_allows(secret).map_err(err)? {
            return Ok(None);
        }
        self.text(Utc::now()).map(Some).map_err(err)
    }
}
