//! The morning brief's side of the daemon: the person's reminders (their
//! one-off jobs) for the brief and the calendar feed, and the loop that
//! queues the brief once its hour has passed.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::config::{BriefConfig, LmsTarget};
use crate::lms::{BriefExtras, Notifier};
use crate::scheduler::{Job, Payload, Schedule, Scheduler};

/// How often the loop looks whether the brief is due.
const LOOK: Duration = Duration::from_secs(60);
/// Characters of a job's prompt shown as its title.
const TITLE: usize = 80;

/// One reminder the person set: its job, when, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reminder {
    pub job: i64,
    pub at: DateTime<Utc>,
    pub what: String,
    /// When it last ran or was changed, where known.
    pub touched: Option<DateTime<Utc>>,
}

/// The one-off jobs that deliver to `person`, in `[from, until)`, soonest
/// first. Nobody else's: a job for another chat never shows.
pub fn reminders(
    jobs: &Scheduler,
    person: &LmsTarget,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Vec<Reminder> {
    let listed = jobs.list().unwrap_or_else(|e| {
        tracing::warn!("the reminders are left out: {e}");
        Vec::new()
    });
    let mut out: Vec<Reminder> = listed
        .into_iter()
        .filter(|j| !j.paused && j.delivery.channel == person.channel && j.delivery.to == person.to)
        .filter_map(|j| reminder(&j))
        .filter(|r| r.at >= from && r.at < until)
        .collect();
    out.sort_by_key(|r| (r.at, r.job));
    out
}

fn reminder(j: &Job) -> Option<Reminder> {
    let Schedule::At(at) = j.schedule else {
        return None;
    };
    let Payload::AgentPrompt { prompt } = &j.payload else {
        return None;
    };
    Some(Reminder {
        job: j.id,
        at,
        what: j
            .name
            .clone()
            .unwrap_or_else(|| crate::tools::cap(prompt, TITLE)),
        touched: j.last_run,
    })
}

/// What the brief at `now` adds from outside the LMS: `person`'s
/// reminders around today.
pub fn extras(
    jobs: Option<&Scheduler>,
    person: Option<&LmsTarget>,
    now: DateTime<Utc>,
) -> BriefExtras {
    let (Some(jobs), Some(person)) = (jobs, person) else {
        return BriefExtras::default();
    };
    let day = chrono::Duration::days(1);
    BriefExtras {
        reminders: reminders(jobs, person, now - day, now + day * 2)
            .into_iter()
            .map(|r| (r.at, r.what))
            .collect(),
    }
}

/// Queues the brief each day once its hour has passed, until `stop`.
pub async fn run(
    notifier: Arc<Notifier>,
    brief: BriefConfig,
    jobs: Option<Arc<Scheduler>>,
    person: Option<LmsTarget>,
    stop: CancellationToken,
) {
    loop {
        let extras = extras(jobs.as_deref(), person.as_ref(), notifier.now());
        match notifier.brief_if_due(&brief, &extras).await {
            Ok(Some(day)) => tracing::info!(%day, "the morning brief is queued"),
            Ok(None) => {}
            Err(e) => tracing::warn!("the morning brief: {e}"),
        }
        tokio::select! {
            _ = tokio::time::sleep(LOOK) => {}
            _ = stop.cancelled() => return,
        }
    }
}
