//! The time budget of one message: `message_timeout_secs × min(max_tool_iterations, 4)`.

use std::time::Duration;

/// Rounds counted towards the budget at most.
pub const BUDGET_ROUNDS_CAP: u32 = 4;

pub fn message_budget(message_timeout_secs: u64, max_tool_iterations: u32) -> Duration {
    let rounds = max_tool_iterations.clamp(1, BUDGET_ROUNDS_CAP) as u64;
    Duration::from_secs(message_timeout_secs.saturating_mul(rounds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_at_four_rounds() {
        assert_eq!(message_budget(300, 10), Duration::from_secs(1200));
        assert_eq!(message_budget(300, 2), Duration::from_secs(600));
        assert_eq!(message_budget(10, 0), Duration::from_secs(10));
    }
}
