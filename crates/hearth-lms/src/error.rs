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
    /// A body over what may be read of it.
    #[error("the response is larger than {} MiB", .max / 1_048_576)]
    TooLarge { max: u64 },
    /// The seen-store failed.
    #[error("LMS store {path}: {message}; fix: check that the data dir is writable")]
    Store { path: String, message: String },
}

impl LmsError {
    /// The message with what the user can do about it, for `hearth lms
    /// status`: the store and auth errors carry theirs already.
    pub fn with_fix(&self) -> String {
        let fix = match self {
            Self::Auth(_) | Self::Store { .. } => return self.to_string(),
            Self::RateLimited { .. } => "nothing; hearth waits as asked and tries again",
            Self::Http { status, .. } if *status >= 500 => {
                "nothing; the site is down and hearth tries again with a growing pause"
            }
            Self::Http { .. } => "check the source's url in the config",
            Self::Remote(_) => "ask the site's admin to enable the web service function",
            Self::Network(_) => "check the source's url and this machine's network",
            Self::TooLarge { .. } => {
                "raise the source's files_mb, or ask the site why it is so large"
            }
            Self::Malformed(_) => {
                "check that the url points at the feed or the site itself, not a login page"
            }
        };
        format!("{self}; fix: {fix}")
    }

    /// The same error with each of its texts passed through `f` (a
    /// scrubber).
    pub fn map_text(&self, f: impl Fn(&str) -> String) -> Self {
        match self {
            Self::Auth(t) => Self::Auth(f(t)),
            Self::RateLimited { retry_after } => Self::RateLimited {
                retry_after: *retry_after,
            },
            Self::Http { status, message } => Self::Http {
                status: *status,
                message: f(message),
            },
            Self::Remote(t) => Self::Remote(f(t)),
            Self::Network(t) => Self::Network(f(t)),
            Self::Malformed(t) => Self::Malformed(f(t)),
            Self::TooLarge { max } => Self::TooLarge { max: *max },
            Self::Store { path, message } => Self::Store {
                path: path.clone(),
                message: f(message),
            },
        }
    }

    /// The delay the site asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }
}
