//! hearth-scheduler: cron jobs, one-shot reminders and intervals, kept in
//! SQLite and fired through a [`JobSink`] the daemon provides.
//!
//! - [`job`]: what a job is (schedule, time zone, payload, delivery).
//! - [`parse`]: times and durations as people and models write them.
//! - [`store`]: jobs in `scheduler.sqlite3`, surviving restarts.
//! - [`clock`]: wall-clock time behind a trait, movable in tests.
//! - [`runner`]: [`Scheduler`]: fire due jobs, sleep until the next.
//! - [`tools`]: `cron_add`, `cron_list`, `cron_remove`.

pub mod job;
pub mod parse;
mod runner;
mod store;
mod tools;

// The floors below, under the names this crate's paths use.
use hearth_config as config;
use hearth_core::{clock, retry};
use hearth_store::storage;
#[cfg(test)]
use hearth_tools::security;

pub use crate::clock::{Clock, SystemClock, TestClock};
pub use job::{Delivery, Job, NewJob, Payload, Schedule, ScheduleError};
pub use runner::{FireError, Holder, JobSink, Scheduler, SchedulerError};
pub use store::{FILE, JobStore, StoreError};
pub use tools::{CronAdd, CronList, CronRemove, cron_tools};

#[cfg(test)]
mod tests;
