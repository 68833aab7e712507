//! The scheduler: fires due jobs through a [`JobSink`] and sleeps until the
//! next one.
//!
//! A due job is rescheduled *before* it fires (at most once per due time,
//! even if the daemon dies while it runs) to the first scheduled time after
//! now, so a job missed while the daemon was down runs once at start, not
//! once per missed tick. A one-shot is removed as it fires. Each fire runs
//! in its own task: a slow agent prompt does not hold up other jobs.
//!
//! A prompt whose reply could not be delivered (the platform is down) is
//! tried again after 1, 2, 4 and 8 minutes, but never past the job's next
//! regular run: a reminder is late rather than lost. (LMS polls need no
//! retry: a notice not delivered is offered again by the next poll.)

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::job::{Job, NewJob, Payload, Schedule, ScheduleError};
use super::store::{JobStore, StoreError};
use crate::clock::Clock;
use crate::config::SchedulerConfig;
use crate::retry::RetryPolicy;
use futures::future::BoxFuture;

/// Where fired jobs go. The daemon implements it: an agent prompt runs
/// through the pipeline and its reply is sent to the job's delivery target;
/// an LMS poll runs the notifier.
pub trait JobSink: Send + Sync {
    fn fire<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Result<(), FireError>>;
}

/// Why a fired job did not complete; its text is stored as the job's last result.
#[derive(Debug, thiserror::Error)]
pub enum FireError {
    /// What the job needs is not configured.
    #[error("{0}")]
    NotConfigured(&'static str),
    /// The job's reply did not reach its chat.
    #[error(transparent)]
    Delivery(Box<dyn std::error::Error + Send + Sync>),
    /// These sources of a poll failed: each source's name and error.
    #[error("{}", .0.iter().map(|(source, error)| format!("{source}: {error}")).collect::<Vec<_>>().join("; "))]
    Sources(Vec<(String, String)>),
}

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error("there are already {0} jobs, the most `[scheduler] max_jobs` allows; remove one first")]
    Full(usize),
    #[error(
        "you already have {0} jobs, the most one person may keep (`[scheduler] max_jobs_per_person`); remove one of yours first"
    )]
    FullForPerson(usize),
    #[error("{0}")]
    Invalid(String),
}

/// Whose share of `[scheduler] max_jobs_per_person` a new job counts
/// against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// The person it runs as.
    Owner,
    /// Everyone on its channel together: they share one credential.
    Channel,
}

/// The longest sleep: the wall clock is checked at least this often, so a
/// clock change, a suspend or a job added by the command line is noticed.
const MAX_SLEEP: Duration = Duration::from_secs(60);

/// Waits before each retry of a failed prompt job: 1, 2, 4 and 8 minutes.
const RETRIES: RetryPolicy = RetryPolicy::new(Duration::from_secs(60), Duration::from_secs(480));
/// How many times a failed prompt job is tried again.
const RETRY_TIMES: u32 = 4;

pub struct Scheduler {
    store: Arc<JobStore>,
    clock: Arc<dyn Clock>,
    config: SchedulerConfig,
    wake: Notify,
}

impl Scheduler {
    /// Opens the job database at `path`.
    pub fn open(
        path: &Path,
        config: SchedulerConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, SchedulerError> {
        Ok(Self {
            store: Arc::new(JobStore::open(path)?),
            clock,
            config,
            wake: Notify::new(),
        })
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Adds a job; refused when its schedule never runs (a time that has
    /// passed) or the job limit is reached.
    pub fn add(&self, job: NewJob) -> Result<Job, SchedulerError> {
        self.add_held(job, Holder::Owner)
    }

    /// [`Self::add`], counting the job against `holder`'s share.
    pub fn add_held(&self, job: NewJob, holder: Holder) -> Result<Job, SchedulerError> {
        if let Schedule::Every(d) = &job.schedule
            && *d < super::job::MIN_INTERVAL
        {
            return Err(ScheduleError::TooShort.into());
        }
        if job.delivery.channel.trim().is_empty() || job.delivery.to.trim().is_empty() {
            return Err(SchedulerError::Invalid(
                "a job needs a delivery channel and chat".into(),
            ));
        }
        let count = self.store.count()?;
        if count >= self.config.max_jobs {
            return Err(SchedulerError::Full(count));
        }
        let owned = match holder {
            Holder::Owner => self
                .store
                .count_owned(&job.delivery.channel, Some(job.delivery.owner()))?,
            Holder::Channel => self.store.count_owned(&job.delivery.channel, None)?,
        };
        if owned >= self.config.max_jobs_per_person {
            return Err(SchedulerError::FullForPerson(owned));
        }
        let now = self.clock.now();
        let next =
            job.schedule
                .next_after(now, job.timezone)?
                .ok_or_else(|| match &job.schedule {
                    Schedule::At(t) => ScheduleError::InThePast(t.to_rfc3339()),
                    other => ScheduleError::NeverRuns {
                        expression: other.parts().1,
                    },
                })?;
        let id = self.store.insert(
            job.name.as_deref(),
            &job.schedule,
            job.timezone,
            &job.payload,
            &job.delivery,
            next,
            now,
        )?;
        self.wake.notify_one();
        self.store
            .get(id)?
            .ok_or_else(|| SchedulerError::Invalid("the job vanished as it was added".into()))
    }

    pub fn list(&self) -> Result<Vec<Job>, SchedulerError> {
        Ok(self.store.list()?)
    }

    pub fn get(&self, id: i64) -> Result<Option<Job>, SchedulerError> {
        Ok(self.store.get(id)?)
    }

    /// Pauses job `id`: it stays, and never runs until resumed. The job as
    /// it is now, or `None` when there is no such job.
    pub fn pause(&self, id: i64) -> Result<Option<Job>, SchedulerError> {
        let Some(job) = self.store.get(id)? else {
            return Ok(None);
        };
        self.store.set_paused(id, true, job.next_run)?;
        Ok(self.store.get(id)?)
    }

    /// Resumes job `id`. Runs missed while it was paused are skipped: it
    /// next runs at its first time after now, and a one-shot whose time
    /// passed runs now.
    pub fn resume(&self, id: i64) -> Result<Option<Job>, SchedulerError> {
        let Some(job) = self.store.get(id)? else {
            return Ok(None);
        };
        let now = self.clock.now();
        let next = if job.next_run >= now {
            job.next_run
        } else {
            job.schedule
                .next_after(now, job.timezone)
                .ok()
                .flatten()
                .unwrap_or(now)
        };
        self.store.set_paused(id, false, next)?;
        self.wake.notify_one();
        Ok(self.store.get(id)?)
    }

    pub fn remove(&self, id: i64) -> Result<bool, SchedulerError> {
        let removed = self.store.remove(id)?;
        self.wake.notify_one();
        Ok(removed)
    }

    /// Fires every job due now (each in its own task) and reschedules it;
    /// the fired jobs.
    pub fn tick(&self, sink: &Arc<dyn JobSink>) -> Vec<Job> {
        let now = self.clock.now();
        let due = match self.store.due(now) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!("cannot read scheduled jobs: {e}");
                return Vec::new();
            }
        };
        let mut fired = Vec::new();
        for job in due {
            let mut next_run = None;
            let advanced = match job.schedule.following(job.next_run, now, job.timezone) {
                Ok(Some(next)) => {
                    next_run = Some(next);
                    self.store.reschedule(job.id, next, now)
                }
                Ok(None) => self.store.remove(job.id).map(|_| ()),
                Err(e) => {
                    tracing::warn!(job = job.id, "job has a bad schedule, removing it: {e}");
                    self.store.remove(job.id).map(|_| ())
                }
            };
            if let Err(e) = advanced {
                // Not rescheduled: firing now would fire it again next tick.
                tracing::warn!(job = job.id, "cannot reschedule a due job: {e}");
                continue;
            }
            let sink = Arc::clone(sink);
            let store = Arc::clone(&self.store);
            let clock = Arc::clone(&self.clock);
            let running = job.clone();
            tokio::spawn(async move {
                let result = fire_with_retries(&*sink, &running, next_run, &*clock).await;
                // A one-shot is gone already; nothing to record then.
                let _ =
                    store.record_result(running.id, result.err().map(|e| e.to_string()).as_deref());
            });
            fired.push(job);
        }
        fired
    }

    /// Runs jobs until `shutdown` is cancelled.
    pub async fn run(&self, sink: Arc<dyn JobSink>, shutdown: CancellationToken) {
        loop {
            self.tick(&sink);
            let wait = self.until_next();
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// How long to sleep: until the soonest job, at least a moment (a job
    /// that could not be rescheduled must not spin the loop) and at most
    /// [`MAX_SLEEP`].
    fn until_next(&self) -> Duration {
        let now = self.clock.now();
        match self.store.earliest() {
            Ok(Some(next)) => (next - now)
                .to_std()
                .unwrap_or(Duration::ZERO)
                .clamp(Duration::from_millis(500), MAX_SLEEP),
            Ok(None) => MAX_SLEEP,
            Err(e) => {
                tracing::warn!("cannot read scheduled jobs: {e}");
                MAX_SLEEP
            }
        }
    }
}

/// Fires `job`; a failed prompt is tried again while the retries end
/// before `next_run` (the job's next regular run, `None` for a one-shot).
async fn fire_with_retries(
    sink: &dyn JobSink,
    job: &Job,
    next_run: Option<DateTime<Utc>>,
    clock: &dyn Clock,
) -> Result<(), FireError> {
    let mut result = sink.fire(job).await;
    let retriable = matches!(job.payload, Payload::AgentPrompt { .. });
    for attempt in 1..=RETRY_TIMES {
        let Err(e) = &result else { break };
        let delay = RETRIES.after(attempt);
        let retry_at = clock.now() + chrono::Duration::from_std(delay).unwrap_or_default();
        if !retriable || next_run.is_some_and(|next| retry_at >= next) {
            break;
        }
        tracing::warn!(
            job = job.id,
            attempt,
            "scheduled job failed, trying again in {} s: {e}",
            delay.as_secs()
        );
        tokio::time::sleep(delay).await;
        result = sink.fire(job).await;
    }
    if let Err(e) = &result {
        tracing::warn!(job = job.id, "scheduled job failed: {e}");
    }
    result
}
