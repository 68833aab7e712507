//! Wall-clock time, behind a trait so tests can move it.
//!
//! The scheduler sleeps with tokio timers and asks a [`Clock`] what time it
//! is. Tokio's paused time does not move `chrono::Utc::now()`, so
//! [`TestClock`] derives wall-clock time from tokio's clock instead: with
//! `tokio::time::pause`, every timer that fires moves it too, and
//! [`TestClock::jump`] moves it alone, as a daemon that was down sees.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

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

/// Wall-clock time that follows tokio's (pausable) clock from a start.
#[derive(Debug)]
pub struct TestClock {
    start_wall: DateTime<Utc>,
    start: tokio::time::Instant,
    jumped: Mutex<chrono::Duration>,
}

impl TestClock {
    /// A clock that reads `start` now.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            start_wall: start,
            start: tokio::time::Instant::now(),
            jumped: Mutex::new(chrono::Duration::zero()),
        }
    }

    /// Moves wall-clock time forward without any timer firing.
    pub fn jump(&self, by: chrono::Duration) {
        *self.jumped.lock().unwrap_or_else(|e| e.into_inner()) += by;
    }
}

impl Clock for TestClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = chrono::Duration::from_std(self.start.elapsed())
            .unwrap_or_else(|_| chrono::Duration::zero());
        self.start_wall + elapsed + *self.jumped.lock().unwrap_or_else(|e| e.into_inner())
    }
}
