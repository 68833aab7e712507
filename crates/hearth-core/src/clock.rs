//! Wall-clock time behind a trait, so tests can set it.
//!
//! The scheduler and the LMS notifier compare calendar times (due dates,
//! cron times), which tokio's paused time does not move. [`SystemClock`] is
//! the real one; [`ManualClock`] moves only when told; [`TestClock`] follows
//! tokio's (pausable) clock, so every timer that fires moves it too, and
//! [`TestClock::jump`] moves it alone, as a daemon that was down sees.

use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The real wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self(Mutex::new(start))
    }

    pub fn set(&self, to: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = to;
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Wall-clock time that follows tokio's (pausable) clock from a start.
#[derive(Debug)]
pub struct TestClock {
    start_wall: DateTime<Utc>,
    start: tokio::time::Instant,
    jumped: Mutex<Duration>,
}

impl TestClock {
    /// A clock that reads `start` now.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            start_wall: start,
            start: tokio::time::Instant::now(),
            jumped: Mutex::new(Duration::zero()),
        }
    }

    /// Moves wall-clock time forward without any timer firing.
    pub fn jump(&self, by: Duration) {
        *self.jumped.lock().unwrap_or_else(|e| e.into_inner()) += by;
    }
}

impl Clock for TestClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = Duration::from_std(self.start.elapsed()).unwrap_or_else(|_| Duration::zero());
        self.start_wall + elapsed + *self.jumped.lock().unwrap_or_else(|e| e.into_inner())
    }
}
