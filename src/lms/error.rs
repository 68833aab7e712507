//! Why a source could not be polled, typed so the notifier can choose the
//! backoff: a rate limit carries the delay the site asked for.

use std::time::Duration;

#[derive(Debug, Clone, thiserror::Error)]
pub enum LmsError {
    /// The token was refused (401/403, Moodle `invalidtoken`).
    #[error("authentication failed: {0}; fix: renew the source's token")]
    Auth(String),
    /// 429 or an equivalent; `retry_after` when the site said.
    #[error("rate limited{}", .retry_after.map(|d| format!(" (retry after {} s)", d.as_secs())).unwrap_or_default())]
    RateLimited { retry_after: Option<Duration> },
    /// Any other HTTP failure status.
    #[error("HTTP {status}: {message}")]
    Http { status: u16, message: String },
    /// The site answered with an error of its own (Moodle `exception`).
    #[error("the site reported an error: {0}")]
    Remote(String),
    /// Connection refused, DNS, timeout.
    #[error("network error: {0}")]
    Network(String),
    /// A payload that is not what the protocol promises.
    #[error("malformed payload: {0}")]
    Malformed(String),
    /// The seen-store failed.
    #[error("LMS store {path}: {message}; fix: check that the data dir is writable")]
    Store { path: String, message: String },
}

impl LmsError {
    /// The delay the site asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }
}
