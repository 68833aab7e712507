//! The notifier's poll side: every source fetched and recorded.
//!
//! A poll, per source: fetch (unless the source is backing off after errors)
//! and record what it lists in the store, which is the durable queue: what
//! is new, changed or due stays there until the courier (`courier.rs`)
//! delivers it, so a slow or failing chat never holds a poll. A failing
//! source is logged, reported and remembered for `hearth lms status`, and
//! backs off (doubling, up to [`MAX_BACKOFF`], or as long as a rate limit
//! asked); its earlier notices still go out from the store.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use tokio::sync::Notify;

use super::notice::NoticeSink;
use super::source::{self, LmsSource};
use super::store::SeenStore;
use super::{Clock, FileKeeper, LmsError, LmsUpcoming, SystemClock, http};
use crate::config::LmsConfig;
use crate::providers::Provider;
use crate::retry::RetryPolicy;

/// The longest a failing source is left alone.
pub const MAX_BACKOFF: Duration = Duration::from_secs(6 * 3600);

/// What one poll did for one source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceReport {
    pub source: String,
    /// Items the source listed (0 when it failed or was skipped).
    pub items: usize,
    pub new: usize,
    pub changed: usize,
    pub reminders: usize,
    /// Notices delivered.
    pub sent: usize,
    /// Notices the sink refused; they are tried again next poll.
    pub failed: usize,
    /// Past items a first poll recorded without a notice each.
    pub silenced: usize,
    /// Course files fetched and kept (new or changed ones).
    pub files: usize,
    /// Why the fetch failed or was skipped.
    pub error: Option<String>,
}

/// What one poll did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PollReport {
    pub sources: Vec<SourceReport>,
}

impl PollReport {
    pub fn sent(&self) -> usize {
        self.sources.iter().map(|s| s.sent).sum()
    }

    pub fn failed(&self) -> usize {
        self.sources.iter().map(|s| s.failed).sum()
    }

    pub fn source(&self, name: &str) -> Option<&SourceReport> {
        self.sources.iter().find(|s| s.source == name)
    }

    /// The report of `name`, added if the poll did not list it.
    pub(super) fn source_mut(&mut self, name: &str) -> &mut SourceReport {
        let at = match self.sources.iter().position(|s| s.source == name) {
            Some(at) => at,
            None => {
                self.sources.push(SourceReport {
                    source: name.to_string(),
                    ..SourceReport::default()
                });
                self.sources.len() - 1
            }
        };
        &mut self.sources[at]
    }
}

/// Consecutive failures of one source.
#[derive(Debug, Clone)]
struct Failing {
    failures: u32,
    until: DateTime<Utc>,
    last_error: String,
}

pub struct Notifier {
    pub(super) config: LmsConfig,
    sources: Vec<Arc<dyn LmsSource>>,
    pub(super) store: Arc<SeenStore>,
    pub(super) provider: Option<Arc<dyn Provider>>,
    pub(super) clock: Arc<dyn Clock>,
    backoff: Mutex<HashMap<String, Failing>>,
    /// One poll at a time.
    polling: tokio::sync::Mutex<()>,
    /// One delivery at a time, so an overlapping pass cannot send twice.
    pub(super) delivering: tokio::sync::Mutex<()>,
    /// Told after every poll, so the courier looks at the store.
    pub(super) queued: Arc<Notify>,
    /// Where the courses' files go, once the daemon has said.
    keeper: Mutex<Option<Arc<dyn FileKeeper>>>,
}

impl Notifier {
    /// A notifier for `config`'s sources, keeping its state in
    /// `data_dir/lms.sqlite3`. `provider` writes summaries when
    /// `config.summarise` is on.
    pub fn new(
        config: &LmsConfig,
        data_dir: &Path,
        provider: Option<Arc<dyn Provider>>,
    ) -> Result<Self, LmsError> {
        let store = Arc::new(SeenStore::open_in(data_dir)?);
        let client = http::client();
        let sources = config
            .sources
            .iter()
            .map(|s| source::from_config(s, client.clone(), config))
            .collect();
        Ok(Self {
            config: config.clone(),
            sources,
            store,
            provider,
            clock: Arc::new(SystemClock),
            backoff: Mutex::default(),
            polling: tokio::sync::Mutex::new(()),
            delivering: tokio::sync::Mutex::new(()),
            queued: Arc::new(Notify::new()),
            keeper: Mutex::default(),
        })
    }

    /// Replaces the clock (tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces the sources built from the config.
    pub fn with_sources(mut self, sources: Vec<Arc<dyn LmsSource>>) -> Self {
        self.sources = sources;
        self
    }

    /// Fetches the courses' files of the sources with `files` on into
    /// `keeper` from the next poll on.
    pub fn keep_files(&self, keeper: Arc<dyn FileKeeper>) {
        *self.keeper.lock().unwrap_or_else(|e| e.into_inner()) = Some(keeper);
    }

    pub(super) fn keeper(&self) -> Option<Arc<dyn FileKeeper>> {
        self.keeper
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The `lms_upcoming` tool over this notifier's store.
    pub fn upcoming_tool(&self) -> LmsUpcoming {
        LmsUpcoming::new(
            self.store.clone(),
            self.config.time_zone,
            self.clock.clone(),
        )
    }

    /// The agent's `lms_recent` tool over this notifier's store.
    pub fn recent_tool(&self) -> super::LmsRecent {
        super::LmsRecent::new(self.store.clone(), self.clock.clone())
    }

    /// How often the daemon should call [`Notifier::poll`].
    pub fn poll_interval(&self) -> Duration {
        self.config.poll_interval
    }

    /// Wakes when a poll has recorded something, for the delivery loop.
    pub fn queued_notices(&self) -> Arc<Notify> {
        self.queued.clone()
    }

    /// The configured source names, in order.
    pub fn source_names(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.name().to_string()).collect()
    }

    /// Where the notices go (`[lms] deliver`).
    pub fn target(&self) -> Option<crate::config::LmsTarget> {
        self.config.deliver.clone()
    }

    /// Now, by the notifier's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The store, for `hearth lms status` and what reads it beside the
    /// notifier (the deadlines).
    pub fn store(&self) -> &Arc<SeenStore> {
        &self.store
    }

    /// Polls every source once, then delivers what is due through `sink`:
    /// [`Notifier::poll`] and [`Notifier::deliver`] in one report. The
    /// daemon runs the two apart, so delivery never holds a poll.
    pub async fn poll_once(&self, sink: &dyn NoticeSink) -> PollReport {
        let mut report = self.poll().await;
        self.deliver(sink, &mut report).await;
        report
    }

    /// Fetches every source once and records what it lists, sending nothing:
    /// what is new, changed or due waits in the store for
    /// [`Notifier::deliver`]. Never fails: every problem is logged and lands
    /// in the report (and in `hearth lms status`).
    pub async fn poll(&self) -> PollReport {
        let _one_at_a_time = self.polling.lock().await;
        let mut report = PollReport::default();
        for source in &self.sources {
            report.sources.push(self.poll_source(source.as_ref()).await);
        }
        self.queued.notify_one();
        report
    }

    async fn poll_source(&self, source: &dyn LmsSource) -> SourceReport {
        let name = source.name().to_string();
        let mut report = SourceReport {
            source: name.clone(),
            ..SourceReport::default()
        };
        let now = self.clock.now();
        if let Some(skip) = self.backing_off(&name, now) {
            report.error = Some(skip);
            return report;
        }
        let mut notes = BTreeSet::new();
        let outcome = match source.poll(now).await {
            Ok(items) => match self
                .store
                .record(&name, &items, now, !self.config.announce_past)
            {
                Ok(recorded) => {
                    report.files = self.fetch_files(source, &items, &mut notes).await;
                    Ok((items.len(), recorded))
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        let stored = match outcome {
            Ok((listed, recorded)) => {
                report.items = listed;
                report.silenced = recorded.silenced;
                self.lock_backoff().remove(&name);
                let mut all = source.notes();
                all.extend(notes);
                self.store.polled(&name, now, None, &all)
            }
            Err(e) => {
                report.error = Some(self.failed(&name, &e, now));
                self.store.polled(&name, now, Some(&e.with_fix()), &[])
            }
        };
        if let Err(e) = stored {
            tracing::warn!(source = %name, "LMS store: {e}");
            report.error.get_or_insert(e.to_string());
        }
        report
    }

    fn lock_backoff(&self) -> std::sync::MutexGuard<'_, HashMap<String, Failing>> {
        self.backoff.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why `source` is skipped this poll, if it is.
    fn backing_off(&self, source: &str, now: DateTime<Utc>) -> Option<String> {
        let backoff = self.lock_backoff();
        let b = backoff.get(source)?;
        (now < b.until).then(|| {
            format!(
                "backing off after {} failure(s) until {}: {}",
                b.failures,
                b.until.to_rfc3339(),
                b.last_error
            )
        })
    }

    /// Logs a failed fetch and schedules the retry: the next poll after one
    /// failure, then skipping 1, 3, 7… polls (up to [`MAX_BACKOFF`]), or as
    /// long as a rate limit asked. The retry time falls half an interval
    /// before the poll that should retry, so a tick that comes a little
    /// early or late still does.
    fn failed(&self, source: &str, error: &LmsError, now: DateTime<Utc>) -> String {
        let message = error.to_string();
        tracing::warn!(source, "LMS poll failed: {message}");
        let mut backoff = self.lock_backoff();
        let failures = backoff.get(source).map_or(0, |b| b.failures) + 1;
        let interval = self.config.poll_interval;
        // Doubling in poll intervals, less half of one.
        let wait = match failures {
            1 => Duration::ZERO,
            n => RetryPolicy::new(interval, Duration::MAX)
                .after(n)
                .saturating_sub(interval / 2),
        };
        let wait = wait
            .max(error.retry_after().unwrap_or_default())
            .min(MAX_BACKOFF);
        backoff.insert(
            source.to_string(),
            Failing {
                failures,
                until: now + chrono::Duration::from_std(wait).unwrap_or_default(),
                last_error: message.clone(),
            },
        );
        message
    }
}
