//! The one retry policy: a wait that starts at `first` and doubles after
//! each failure in a row, never past `most`. A listener that keeps failing,
//! a reply that cannot be delivered, an LMS source that is down, notices a
//! chat refuses and a cloud API that is busy all wait this way; each place
//! names its own figures, and [`Backoff`] counts the failures in a row.

use std::time::Duration;

/// A doubling wait, `first` after the first failure, at most `most`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub first: Duration,
    pub most: Duration,
}

impl RetryPolicy {
    pub const fn new(first: Duration, most: Duration) -> Self {
        Self { first, most }
    }

    /// The wait after the `failures`-th failure in a row (1 for the first;
    /// 0 counts as 1): `first`, twice it, four times, … up to `most`.
    pub fn after(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.first
            .checked_mul(1 << doublings)
            .map_or(self.most, |wait| wait.min(self.most))
    }

    /// A fresh count of failures under this policy.
    pub fn backoff(self) -> Backoff {
        Backoff {
            policy: self,
            failures: 0,
        }
    }
}

/// Failures in a row under a [`RetryPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    policy: RetryPolicy,
    failures: u32,
}

impl Backoff {
    /// Counts one more failure; the wait before the next try.
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.policy.after(self.failures)
    }

    /// A success: the next failure waits `first` again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECS: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn doubles_from_first_to_most() {
        let p = RetryPolicy::new(SECS(2), SECS(60));
        let waits: Vec<u64> = (1..=7).map(|f| p.after(f).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(p.after(0), SECS(2));
    }

    #[test]
    fn never_overflows_however_many_failures() {
        let p = RetryPolicy::new(SECS(10), SECS(600));
        assert_eq!(p.after(u32::MAX), SECS(600));
        let huge = RetryPolicy::new(Duration::MAX / 2, Duration::MAX);
        assert_eq!(huge.after(40), Duration::MAX);
    }

    #[test]
    fn a_backoff_counts_failures_and_a_success_starts_it_over() {
        let mut b = RetryPolicy::new(SECS(2), SECS(5)).backoff();
        assert_eq!(
            [b.failed(), b.failed(), b.failed()],
            [SECS(2), SECS(4), SECS(5)]
        );
        assert_eq!(b.failures(), 3);
        b.reset();
        assert_eq!(b.failed(), SECS(2));
    }
}
