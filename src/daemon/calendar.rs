//! The calendar feed the gateway serves (`/cal/<secret>.ics`): the
//! person's deadlines ([`Deadlines`]) behind the feed's secret.

use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::channels::gateway::{CalendarError, CalendarFeed};
use crate::config::LmsConfig;
use crate::daemon::deadlines::Deadlines;
use crate::lms::LmsError;
use crate::scheduler::Scheduler;

pub struct DeadlineFeed(Arc<Deadlines>);

impl DeadlineFeed {
    /// The feed of `deadlines` (the services', over the notifier's store).
    pub fn of(deadlines: Arc<Deadlines>) -> Self {
        Self(deadlines)
    }

    /// The feed of `lms.sqlite3` in `data_dir`, for `lms`'s person.
    pub fn open(
        data_dir: &Path,
        lms: &LmsConfig,
        jobs: Option<Arc<Scheduler>>,
    ) -> Result<Self, LmsError> {
        Deadlines::open(data_dir, lms, jobs).map(|d| Self(Arc::new(d)))
    }

    /// The feed's text at `now`.
    pub fn text(&self, now: DateTime<Utc>) -> Result<String, LmsError> {
        self.0.text(now)
    }
}

impl CalendarFeed for DeadlineFeed {
    fn feed(&self, secret: &str) -> Result<Option<String>, CalendarError> {
        let err = |e: LmsError| CalendarError(e.to_string());
        if !self.0.allows(secret).map_err(err)? {
            return Ok(None);
        }
        self.0.text(Utc::now()).map(Some).map_err(err)
    }
}
