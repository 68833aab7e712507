//! Context management: keeping a conversation inside the model's window.
//!
//! In order of cost, before each model call:
//! 1. old tool results (before the current turn) are cut to 2,000 chars;
//! 2. a proactive trim drops the oldest turns past a 400,000-char budget;
//! 3. when the history passes half of the context window (counted with the
//!    provider's tokenizer where it has one), the oldest turns are replaced
//!    by a model-written summary that keeps every identifier;
//! 4. when the provider still reports a context overflow, the oldest third
//!    of the history is dropped and the call retried once.
//!
//! The current turn (the user's message and its tool rounds) is never cut.

mod compress;
mod identifiers;
mod window;

pub use compress::compress;
pub use identifiers::identifiers;
pub use window::{Window, drop_oldest_third, trim_budget, trim_old_tool_results};

/// The limits context management works to.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextLimits {
    /// Characters of the whole prompt before the oldest turns go.
    pub char_budget: usize,
    /// Characters kept of a tool result from an earlier turn.
    pub old_tool_result_chars: usize,
    /// Fraction of the context window the history may fill before the
    /// oldest turns are summarised.
    pub compress_at: f32,
}

impl Default for ContextLimits {
    fn default() -> Self {
        Self {
            char_budget: 400_000,
            old_tool_result_chars: 2_000,
            compress_at: 0.5,
        }
    }
}

/// What management did to a prompt, for logs and for the caller to persist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextReport {
    pub tool_results_cut: usize,
    pub messages_dropped: usize,
    pub compressed: bool,
}

impl ContextReport {
    /// The history changed in a way the caller should store (a summary or
    /// dropped turns), not only in the cuts that are redone each turn.
    pub fn rewrote_history(&self) -> bool {
        self.compressed || self.messages_dropped > 0
    }
}

#[cfg(test)]
mod tests;
