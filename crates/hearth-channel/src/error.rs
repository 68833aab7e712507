//! The error a channel reports to the dispatcher.

use std::time::Duration;

/// Why a channel operation failed. The supervisor restarts a listener on any
/// of these; senders may wait out `RateLimited` and try again.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// The platform could not be reached (connection, timeout, 5xx).
    #[error("network error: {0}")]
    Network(String),
    /// The platform asked us to slow down.
    #[error("rate limited, retry after {}s", retry_after.as_secs())]
    RateLimited { retry_after: Duration },
    /// The platform refused the request (bad token, unknown chat, bad markup).
    #[error("rejected: {0}")]
    Rejected(String),
    /// The channel does not offer this operation.
    #[error("{0} is not supported by this channel")]
    Unsupported(&'static str),
    /// Anything else, said plainly.
    #[error("{0}")]
    Other(String),
}

impl ChannelError {
    /// Whether trying the same call later may succeed: the platform was
    /// unreachable or asked us to wait. A refusal (unknown chat, blocked
    /// bot, bad request) will not change by itself.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Network(_) | Self::RateLimited { .. })
    }
}
