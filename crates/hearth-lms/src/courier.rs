//! The notifier's delivery side: what the store holds, sent through a
//! [`NoticeSink`].
//!
//! A pass goes source by source: outbox lines first, then every pending item
//! (new or changed), then the reminders that came due. Only a confirmed
//! delivery marks anything as sent, so a refused notice stays queued for the
//! next pass, across restarts too. After [`GIVE_UP_AFTER`] refusals in a row
//! the channel is taken to be down and the pass ends; the caller tries again
//! later. Polls never wait for a pass: they only write to the store.

use std::time::Duration;

use super::notice::{self, Notice, NoticeKind, NoticeSink};
use super::notifier::{Notifier, PollReport, SourceReport};
use super::store::Pending;
use super::{ItemKind, LmsError, LmsItem, summary};

/// Refusals in a row that end a delivery pass.
pub const GIVE_UP_AFTER: usize = 3;

/// Refusals in a row within one pass.
struct Refusals(usize);

impl Notifier {
    /// Delivers what the store holds for every source through `sink`, adding
    /// what was sent and refused to `report`. One pass at a time.
    pub async fn deliver(&self, sink: &dyn NoticeSink, report: &mut PollReport) {
        let _one_at_a_time = self.delivering.lock().await;
        let mut refusals = Refusals(0);
        let mut names = self.source_names();
        // The morning brief waits in the outbox like a source's line.
        if self.store.queued(super::BRIEF).is_ok_and(|q| !q.is_empty()) {
            names.push(super::BRIEF.to_string());
        }
        for name in names {
            let r = report.source_mut(&name);
            if let Err(e) = self.deliver_source(&name, sink, r, &mut refusals).await {
                tracing::warn!(source = %name, "LMS store: {e}");
                r.error.get_or_insert(e.to_string());
            }
            if refusals.0 >= GIVE_UP_AFTER {
                tracing::warn!("LMS notices: {GIVE_UP_AFTER} refused in a row; the rest wait");
                break;
            }
        }
    }

    async fn deliver_source(
        &self,
        source: &str,
        sink: &dyn NoticeSink,
        report: &mut SourceReport,
        refusals: &mut Refusals,
    ) -> Result<(), LmsError> {
        for line in self.store.queued(source)? {
            let mut item = LmsItem::new(source, "", ItemKind::News, line.text.clone());
            item.source = line.source;
            let notice = Notice {
                kind: NoticeKind::Source,
                item,
                text: line.text,
                target: self.config.deliver.clone(),
            };
            if self.send(sink, &notice, report, refusals).await {
                self.store.unqueue(line.seq)?;
            }
        }
        for Pending { item, previous } in self.store.pending(source)? {
            if let (Some(series), None) = (&item.series, &previous)
                && self.store.series_told(source, series)?
            {
                // A later occurrence of a series the user was told about:
                // recorded, and left to its reminders.
                self.store.mark_notified(&item)?;
                continue;
            }
            let kind = if previous.is_some() {
                report.changed += 1;
                NoticeKind::Changed
            } else {
                report.new += 1;
                NoticeKind::New
            };
            let notice = self.notice(kind, item, previous.as_ref()).await;
            if self.send(sink, &notice, report, refusals).await {
                self.store.mark_notified(&notice.item)?;
                // The notice showed the due date: reminders already open are moot.
                let open = self.open_windows(&notice.item);
                self.store
                    .mark_reminded(&notice.item, &open, self.clock.now())?;
            }
        }
        let Some(longest) = self.config.remind_before.first().copied() else {
            return Ok(());
        };
        for item in self.store.due_within(source, self.clock.now(), longest)? {
            if item.done {
                continue;
            }
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
            if self.send(sink, &notice, report, refusals).await {
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
        let scores = self
            .config
            .sources
            .iter()
            .any(|s| s.name == item.source && s.scores);
        let mut text = notice::plain(&kind, &item, previous, self.config.time_zone, scores);
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

    /// Sends one notice: true once the sink accepted it. Once the pass has
    /// given up, nothing more is tried.
    async fn send(
        &self,
        sink: &dyn NoticeSink,
        notice: &Notice,
        report: &mut SourceReport,
        refusals: &mut Refusals,
    ) -> bool {
        if refusals.0 >= GIVE_UP_AFTER {
            return false;
        }
        match sink.deliver(notice).await {
            Ok(()) => {
                report.sent += 1;
                refusals.0 = 0;
                true
            }
            Err(e) => {
                tracing::warn!(source = %notice.item.source, item = %notice.item.id, "LMS notice not delivered, will retry: {e}");
                report.failed += 1;
                refusals.0 += 1;
                false
            }
        }
    }
}
