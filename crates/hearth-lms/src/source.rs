//! The seam between the notifier and a course site: [`LmsSource`].
//!
//! A source fetches what its site currently lists and returns it normalised;
//! it keeps no state. What is new, changed or due is the notifier's business.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::files::Linking;
use super::scrubbed::Scrubbed;
use super::{
    CourseFile, LmsError, LmsItem, canvas::Canvas, feed::Feed, ical::Ical, moodle::Moodle,
};
use crate::config::{LmsConfig, LmsKind, LmsSourceConfig};
use futures::future::BoxFuture;

pub trait LmsSource: Send + Sync {
    /// The configured name; items carry it as their `source`.
    fn name(&self) -> &str;

    /// Everything the site lists now. `now` bounds time-window queries.
    fn poll(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>>;

    /// What the last successful poll had to leave out and why (a web-service
    /// function the site refuses, a course closed to the user), for
    /// `hearth lms status`.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// The bytes of a course file this source listed, at most `max`.
    fn download<'a>(
        &'a self,
        file: &'a CourseFile,
        max: u64,
    ) -> BoxFuture<'a, Result<Vec<u8>, LmsError>> {
        let _ = (file, max);
        Box::pin(async { Err(LmsError::Malformed("this source lists no files".into())) })
    }
}

/// The source a config entry describes. `lms` gives the time zone that
/// places iCal times without one, and how far recurring events expand.
pub fn from_config(
    config: &LmsSourceConfig,
    http: reqwest::Client,
    lms: &LmsConfig,
) -> Arc<dyn LmsSource> {
    let feed: Arc<dyn LmsSource> = match config.kind {
        LmsKind::Moodle => return scrubbed(Arc::new(Moodle::new(config.clone(), http)), config),
        LmsKind::Canvas => return scrubbed(Arc::new(Canvas::new(config.clone(), http)), config),
        LmsKind::Ical => Arc::new(Ical::new(
            config.clone(),
            http.clone(),
            lms.time_zone,
            lms.recurrence_horizon,
        )),
        LmsKind::Rss => Arc::new(Feed::new(config.clone(), http.clone())),
    };
    if config.files {
        scrubbed(Arc::new(Linking { inner: feed, http }), config)
    } else {
        scrubbed(feed, config)
    }
}

fn scrubbed(site: Arc<dyn LmsSource>, config: &LmsSourceConfig) -> Arc<dyn LmsSource> {
    Arc::new(Scrubbed::new(site, config))
}

/// One poll of the source named `name` in `lms`, as `hearth init` checks a
/// new source: how many items the site lists now, or why it cannot be read.
pub async fn check(lms: &LmsConfig, name: &str) -> Result<usize, LmsError> {
    let Some(config) = lms.sources.iter().find(|s| s.name == name) else {
        return Err(LmsError::Malformed(format!(
            "no source named {name} in the config"
        )));
    };
    let source = from_config(config, super::http::client(), lms);
    source.poll(Utc::now()).await.map(|items| items.len())
}
