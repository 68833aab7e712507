//! When a failed send is tried again: 2 s after the first failure, then
//! doubling up to 5 minutes; a reply still undelivered a day after its
//! first failure is given up as failed, so nothing retries forever.

use std::time::Duration;

use crate::retry::RetryPolicy;

/// 2 s after the first failure, doubling up to 5 minutes.
pub const SENDS: RetryPolicy = RetryPolicy::new(Duration::from_secs(2), Duration::from_secs(300));
/// How long after its first failure a reply is still tried.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The wait after the `tries`-th failure (1 for the first).
pub fn wait_after(tries: u32) -> Duration {
    SENDS.after(tries)
}

/// Whether a reply that first failed at `first_failure` (Unix seconds) is
/// given up at `now`.
pub fn given_up(first_failure: i64, now: i64) -> bool {
    now.saturating_sub(first_failure) >= GIVE_UP_AFTER.as_secs() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_to_five_minutes_and_a_day_ends_it() {
        let waits: Vec<u64> = (1..=10).map(|t| wait_after(t).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(wait_after(u32::MAX).as_secs(), 300);
        assert!(!given_up(1_000, 1_000 + 86_399));
        assert!(given_up(1_000, 1_000 + 86_400));
    }
}
