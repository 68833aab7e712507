//! The dispatch loop: takes messages off the bus and runs each in its own
//! task, at most `channels × 4` (8..64) at once.
//!
//! A message from a sender whose previous message is still running (same
//! channel and scope) cancels it when the channel's policy says
//! `interrupt_on_new_message`, waits for it to end, then starts; without
//! that policy it queues behind it. `/stop` cancels at once. On shutdown
//! the bus is closed (listeners stop); messages already on it that the
//! inbox recorded stay there for the next start, the others are still run;
//! what is running gets one bounded wait, the shutdown grace. What is left
//! then is cancelled, and its record left open: the next start answers it.
//! Messages taken up after a restart (late ones) queue behind each other
//! instead of interrupting.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::tracker::{CancelReason, Run, Tracker, scope_key};
use crate::channels::commands::{self, Command};
use crate::channels::{ChannelMessage, SendMessage};
use crate::inbox::{Inbound, State};
use crate::pipeline::{Outcome, Runtime};

/// The in-flight limit for this many channels.
pub fn in_flight_limit(channels: usize) -> usize {
    (channels.saturating_mul(4)).clamp(8, 64)
}

/// How one message ended, for observers (tests, the bench).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub message_id: String,
    pub channel: String,
    pub sender: String,
    pub outcome: Outcome,
}

pub struct Dispatcher {
    runtime: Arc<Runtime>,
    limit: usize,
    grace: Duration,
    reports: Option<mpsc::UnboundedSender<Report>>,
}

impl Dispatcher {
    /// A dispatcher with the limit for the runtime's channels and the
    /// configured shutdown grace.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        let limit = in_flight_limit(runtime.channels().count());
        let grace = Duration::from_secs(runtime.config().daemon.shutdown_grace_secs);
        Self {
            runtime,
            limit,
            grace,
            reports: None,
        }
    }

    /// Sends a [`Report`] for every message taken off the bus.
    pub fn with_reports(mut self, reports: mpsc::UnboundedSender<Report>) -> Self {
        self.reports = Some(reports);
        self
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Runs until `shutdown` is cancelled or the bus closes, then drains.
    pub async fn run(self, mut bus: mpsc::Receiver<Inbound>, shutdown: CancellationToken) {
        let semaphore = Arc::new(Semaphore::new(self.limit));
        let tracker = Arc::new(Tracker::default());
        let abort = CancellationToken::new();
        let mut tasks = JoinSet::new();
        // Set at shutdown: the bus is closed, and what is already on it
        // without a record (so never offered again) is still answered
        // until this deadline.
        let mut draining: Option<Instant> = None;
        loop {
            while tasks.try_join_next().is_some() {}
            let message = match draining {
                None => tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => {
                        bus.close();
                        draining = Some(Instant::now() + self.grace);
                        continue;
                    }
                    m = bus.recv() => match m {
                        Some(m) => m,
                        None => break,
                    },
                },
                Some(_) => match bus.recv().await {
                    // Recorded: answered at the next start.
                    Some(m) if m.recorded => continue,
                    Some(m) => m,
                    None => break,
                },
            };
            self.runtime.reload_if_changed();
            let inbound = message;
            let message = inbound.message.clone();
            let key = scope_key(&message);
            if commands::parse(&message.content) == Some(Command::Stop) {
                self.stop(&inbound, &tracker, &key).await;
                continue;
            }
            let interrupt = !inbound.late
                && self
                    .runtime
                    .channel(&message.channel)
                    .is_none_or(|c| c.policy().interrupt_on_new_message);
            let (run, previous) = tracker.begin(&key, &abort);
            if interrupt && let Some(previous) = &previous {
                previous.cancel(CancelReason::Superseded);
            }
            let permit = self
                .permit(&semaphore, &mut bus, &shutdown, &mut draining)
                .await;
            let Some(permit) = permit else {
                // Past the shutdown grace: reported, not started (a
                // recorded one is answered at the next start).
                tracker.end(&key, &run);
                self.runtime.unanswered(&message).await;
                report(
                    &self.reports,
                    &self.runtime,
                    &message,
                    Outcome::Cancelled,
                    None,
                );
                continue;
            };
            let answer = Answer {
                runtime: self.runtime.clone(),
                tracker: tracker.clone(),
                reports: self.reports.clone(),
                key,
                run,
                previous,
            };
            tasks.spawn(answer.run(inbound, permit));
        }
        drop(bus);
        let deadline = draining.unwrap_or_else(|| Instant::now() + self.grace);
        finish(tasks, deadline, abort).await;
    }

    /// A place among the replies in flight; `None` once the shutdown grace
    /// (`draining`, set here if the shutdown comes meanwhile) has passed.
    async fn permit(
        &self,
        semaphore: &Arc<Semaphore>,
        bus: &mut mpsc::Receiver<Inbound>,
        shutdown: &CancellationToken,
        draining: &mut Option<Instant>,
    ) -> Option<OwnedSemaphorePermit> {
        let acquire = semaphore.clone().acquire_owned();
        tokio::pin!(acquire);
        loop {
            match *draining {
                None => tokio::select! {
                    p = &mut acquire => return p.ok(),
                    _ = shutdown.cancelled() => {
                        bus.close();
                        *draining = Some(Instant::now() + self.grace);
                    }
                },
                Some(deadline) => {
                    return tokio::time::timeout_at(deadline, &mut acquire)
                        .await
                        .ok()
                        .and_then(Result::ok);
                }
            }
        }
    }

    /// `/stop`: cancels what runs in the message's scope, and says so.
    async fn stop(&self, inbound: &Inbound, tracker: &Tracker, key: &str) {
        let message = &inbound.message;
        let text = if tracker.stop(key) {
            "Stopped."
        } else {
            "Nothing is running."
        };
        let reply = SendMessage::reply_to(message, text);
        let outcome = match self.runtime.deliver(&message.channel, reply).await {
            Ok(_) => Outcome::Command,
            Err(e) => Outcome::Undelivered(e.to_string()),
        };
        if inbound.recorded {
            self.runtime.inbox().finish(message, State::Answered, None);
        }
        report(&self.reports, &self.runtime, message, outcome, None);
    }
}

/// One message being answered, once it has its turn.
struct Answer {
    runtime: Arc<Runtime>,
    tracker: Arc<Tracker>,
    reports: Option<mpsc::UnboundedSender<Report>>,
    key: String,
    run: Run,
    /// The run it interrupts (or waits for) in the same scope.
    previous: Option<Run>,
}

impl Answer {
    /// Runs the pipeline after the previous run in its scope has ended,
    /// and reports how it ended.
    async fn run(self, inbound: Inbound, permit: OwnedSemaphorePermit) {
        let Self {
            runtime,
            tracker,
            reports,
            key,
            run,
            previous,
        } = self;
        let message = inbound.message.clone();
        let _permit = permit;
        if let Some(previous) = previous {
            previous.done.cancelled().await;
        }
        runtime.status().started();
        let began = Instant::now();
        let recorded = inbound.recorded;
        let outcome = runtime.process(inbound, run.cancel.clone()).await;
        let outcome = match (outcome, run.reason()) {
            (Outcome::Cancelled, Some(CancelReason::Superseded)) => {
                if recorded {
                    runtime.inbox().finish(&message, State::Superseded, None);
                }
                Outcome::Superseded
            }
            (Outcome::Cancelled, Some(CancelReason::Stopped)) => {
                runtime.note_stopped(&message);
                if recorded {
                    runtime
                        .inbox()
                        .finish(&message, State::Cancelled, Some("stopped"));
                }
                Outcome::Cancelled
            }
            // Cancelled by the shutdown: the record stays open.
            (o, _) => o,
        };
        if outcome.sent_nothing() {
            runtime.unanswered(&message).await;
        }
        runtime.status().finished();
        tracker.end(&key, &run);
        report(&reports, &runtime, &message, outcome, Some(began.elapsed()));
    }
}

/// Waits for the replies still running until `deadline`, then cancels
/// what is left (`abort`) and waits for it to end.
async fn finish(mut tasks: JoinSet<()>, deadline: Instant, abort: CancellationToken) {
    let drained = tokio::time::timeout_at(deadline, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = tasks.len(),
            "replies still running after the shutdown grace; cancelling them"
        );
        abort.cancel();
        while tasks.join_next().await.is_some() {}
    }
}

fn report(
    reports: &Option<mpsc::UnboundedSender<Report>>,
    runtime: &Runtime,
    message: &ChannelMessage,
    outcome: Outcome,
    took: Option<Duration>,
) {
    tracing::debug!(id = message.id, ?outcome, "message handled");
    let metrics = runtime.metrics();
    metrics.message(
        &message.channel,
        outcome.label(),
        took.map(|t| t.as_secs_f64()),
    );
    if matches!(outcome, Outcome::Undelivered(_)) {
        metrics.channel_error(&message.channel, "send");
    }
    if let Some(tx) = reports {
        let _ = tx.send(Report {
            message_id: message.id.clone(),
            channel: message.channel.clone(),
            sender: message.sender.clone(),
            outcome,
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn limit_is_four_per_channel_within_8_and_64() {
        assert_eq!(super::in_flight_limit(0), 8);
        assert_eq!(super::in_flight_limit(1), 8);
        assert_eq!(super::in_flight_limit(3), 12);
        assert_eq!(super::in_flight_limit(40), 64);
    }
}
