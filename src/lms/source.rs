//! The seam between the notifier and a course site: [`LmsSource`].
//!
//! A source fetches what its site currently lists and returns it normalised;
//! it keeps no state. What is new, changed or due is the notifier's business.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::{LmsError, LmsItem, canvas::Canvas, feed::Feed, ical::Ical, moodle::Moodle};
use crate::config::{LmsKind, LmsSourceConfig};
use futures::future::BoxFuture;

pub trait LmsSource: Send + Sync {
    /// The configured name; items carry it as their `source`.
    fn name(&self) -> &str;

    /// Everything the site lists now. `now` bounds time-window queries.
    fn poll(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>>;
}

/// The source a config entry describes. `time_zone` places iCal times that
/// carry no zone.
pub fn from_config(
    config: &LmsSourceConfig,
    http: reqwest::Client,
    time_zone: chrono_tz::Tz,
) -> Arc<dyn LmsSource> {
    match config.kind {
        LmsKind::Moodle => Arc::new(Moodle::new(config.clone(), http)),
        LmsKind::Canvas => Arc::new(Canvas::new(config.clone(), http)),
        LmsKind::Ical => Arc::new(Ical::new(config.clone(), http, time_zone)),
        LmsKind::Rss => Arc::new(Feed::new(config.clone(), http)),
    }
}
