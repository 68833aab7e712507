//! The notifier: one poll of every source, turned into delivered notices.
//!
//! A poll, per source: fetch (unless the source is backing off after errors),
//! record what it lists, deliver every pending item (new or changed), then
//! the reminders that came due. Only a confirmed delivery marks anything as
//! sent. A failing source is logged and reported, backs off (doubling, up to
//! [`MAX_BACKOFF`], or as long as a rate limit asked), and still has its
//! earlier pending notices and reminders delivered from the store.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::notice::{self, Notice, NoticeKind, NoticeSink};
use super::source::{self, LmsSource};
use super::store::{Pending, SeenStore};
use super::{Clock, LmsError, LmsItem, LmsUpcoming, SystemClock, http, summary};
use crate::config::LmsConfig;
use crate::providers::Provider;

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
}

/// Consecutive failures of one source.
#[derive(Debug, Clone)]
struct Backoff {
    failures: u32,
    until: DateTime<Utc>,
    last_error: String,
}

pub struct Notifier {
    config: LmsConfig,
    sources: Vec<Arc<dyn LmsSource>>,
    store: Arc<SeenStore>,
    provider: Option<Arc<dyn Provider>>,
    clock: Arc<dyn Clock>,
    backoff: Mutex<HashMap<String, Backoff>>,
    /// One poll at a time, so an overlapping tick cannot send twice.
    polling: tokio::sync::Mutex<()>,
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
            .map(|s| source::from_config(s, client.clone(), config.time_zone))
            .collect();
        Ok(Self {
            config: config.clone(),
            sources,
            store,
            provider,
            clock: Arc::new(SystemClock),
            backoff: Mutex::default(),
            polling: tokio::sync::Mutex::new(()),
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

    /// The `lms_upcoming` tool over this notifier's store.
    pub fn upcoming_tool(&self) -> LmsUpcoming {
        LmsUpcoming::new(
            self.store.clone(),
            self.config.time_zone,
            self.clock.clone(),
        )
    }

    /// How often the daemon should call [`Notifier::poll_once`].
    pub fn poll_interval(&self) -> Duration {
        self.config.poll_interval
    }

    /// Polls every source once and delivers what is due through `sink`.
    /// Never fails: every problem is logged and lands in the report.
    pub async fn poll_once(&self, sink: &dyn NoticeSink) -> PollReport {
        let _one_at_a_time = self.polling.lock().await;
        let mut report = PollReport::default();
        for source in &self.sources {
            report
                .sources
                .push(self.poll_source(source.as_ref(), sink).await);
        }
        report
    }

    async fn poll_source(&self, source: &dyn LmsSource, sink: &dyn NoticeSink) -> SourceReport {
        let name = source.name().to_string();
        let mut report = SourceReport {
            source: name.clone(),
            ..SourceReport::default()
        };
        let now = self.clock.now();
        match self.backing_off(&name, now) {
            Some(skip) => report.error = Some(skip),
            None => match source.poll(now).await {
                Ok(items) => match self.store.record(&name, &items, now) {
                    Ok(()) => {
                        report.items = items.len();
                        self.lock_backoff().remove(&name);
                    }
                    Err(e) => report.error = Some(self.failed(&name, &e, now)),
                },
                Err(e) => report.error = Some(self.failed(&name, &e, now)),
            },
        }
        if let Err(e) = self.deliver_pending(&name, sink, &mut report).await {
            tracing::warn!(source = %name, "LMS store: {e}");
            report.error.get_or_insert(e.to_string());
        }
        if let Err(e) = self.deliver_reminders(&name, sink, &mut report).await {
            tracing::warn!(source = %name, "LMS store: {e}");
            report.error.get_or_insert(e.to_string());
        }
        report
    }

    fn lock_backoff(&self) -> std::sync::MutexGuard<'_, HashMap<String, Backoff>> {
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
        let skipped = 2u32.saturating_pow(failures - 1).saturating_sub(1);
        let interval = self.config.poll_interval;
        let wait = match skipped {
            0 => Duration::ZERO,
            n => interval.saturating_mul(n) + interval / 2,
        };
        let wait = wait
            .max(error.retry_after().unwrap_or_default())
            .min(MAX_BACKOFF);
        backoff.insert(
            source.to_string(),
            Backoff {
                failures,
                until: now + chrono::Duration::from_std(wait).unwrap_or_default(),
                last_error: message.clone(),
            },
        );
        message
    }

    async fn deliver_pending(
        &self,
        source: &str,
        sink: &dyn NoticeSink,
        report: &mut SourceReport,
    ) -> Result<(), LmsError> {
        for Pending { item, previous } in self.store.pending(source)? {
            let kind = if previous.is_some() {
                report.changed += 1;
                NoticeKind::Changed
            } else {
                report.new += 1;
                NoticeKind::New
            };
            let notice = self.notice(kind, item, previous.as_ref()).await;
            if self.send(sink, &notice, report).await {
                self.store.mark_notified(&notice.item)?;
                // The notice showed the due date: reminders already open are moot.
                let open = self.open_windows(&notice.item);
                self.store
                    .mark_reminded(&notice.item, &open, self.clock.now())?;
            }
        }
        Ok(())
    }

    async fn deliver_reminders(
        &self,
        source: &str,
        sink: &dyn NoticeSink,
        report: &mut SourceReport,
    ) -> Result<(), LmsError> {
        let Some(longest) = self.config.remind_before.first().copied() else {
            return Ok(());
        };
        for item in self.store.due_within(source, self.clock.now(), longest)? {
            let open = self.open_windows(&item);
            // The closest open window speaks; the longer ones it supersedes.
            let Some(before) = open.last().copied() else {
                continue;
            };
            if self.store.reminded(&item, before)? {
                continue;
            }
            report.reminders += 1;
            let notice = self
                .notice(NoticeKind::Reminder { before }, item, None)
                .await;
            if self.send(sink, &notice, report).await {
                self.store
                    .mark_reminded(&notice.item, &open, self.clock.now())?;
            }
        }
        Ok(())
    }

    /// The reminder spans whose window has opened for `item`, longest first.
    fn open_windows(&self, item: &LmsItem) -> Vec<Duration> {
        let Some(due) = item.due else {
            return Vec::new();
        };
        let left = (due - self.clock.now()).to_std().unwrap_or_default();
        self.config
            .remind_before
            .iter()
            .copied()
            .filter(|b| left <= *b)
            .collect()
    }

    async fn notice(&self, kind: NoticeKind, item: LmsItem, previous: Option<&LmsItem>) -> Notice {
        let mut text = notice::plain(&kind, &item, previous, self.config.time_zone);
        let wants_summary = self.config.summarise && !matches!(kind, NoticeKind::Reminder { .. });
        if let (true, Some(provider)) = (wants_summary, &self.provider)
            && let Some(line) = summary::summarise(
                provider.as_ref(),
                &text,
                item.detail.as_deref(),
                self.config.summary_timeout,
            )
            .await
        {
            text = format!("{text}\n\n{line}");
        }
        Notice {
            kind,
            item,
            text,
            target: self.config.deliver.clone(),
        }
    }

    async fn send(
        &self,
        sink: &dyn NoticeSink,
        notice: &Notice,
        report: &mut SourceReport,
    ) -> bool {
        match sink.deliver(notice).await {
            Ok(()) => {
                report.sent += 1;
                true
            }
            Err(e) => {
                tracing::warn!(source = %notice.item.source, item = %notice.item.id, "LMS notice not delivered, will retry: {e}");
                report.failed += 1;
                false
            }
        }
    }
}
