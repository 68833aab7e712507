//! Telegram's failures, sorted into what the dispatcher decides on.

use std::time::Duration;

use teloxide::{ApiError, DownloadError, RequestError};

use hearth_channel::ChannelError;

/// Why the channel could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TelegramError {
    #[error(
        "no Telegram bot token: set [channels.telegram] bot_token or HEARTH_TELEGRAM_TOKEN (BotFather gives one)"
    )]
    NoToken,
    #[error("channels.telegram.api_url `{0}` is not a valid URL")]
    BadApiUrl(String),
    #[error("cannot set up an HTTP client for Telegram: {0}")]
    Client(String),
    #[error("cannot use {path}: {source}")]
    State {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// A Bot API failure as the dispatcher sees it.
pub(super) fn channel_error(e: RequestError) -> ChannelError {
    match e {
        RequestError::RetryAfter(s) => ChannelError::RateLimited {
            retry_after: s.duration().max(Duration::from_secs(1)),
        },
        RequestError::Network(e) => ChannelError::Network(e.to_string()),
        // A body that is not the Bot API's JSON: a proxy's or server's error page.
        RequestError::InvalidJson { source, .. } => {
            ChannelError::Network(format!("unexpected answer from the Bot API: {source}"))
        }
        RequestError::Io(e) => ChannelError::Network(e.to_string()),
        RequestError::Api(e) => ChannelError::Rejected(e.to_string()),
        RequestError::MigrateToChatId(id) => {
            ChannelError::Rejected(format!("the group moved to chat {id}"))
        }
    }
}

pub(super) fn download_error(e: DownloadError) -> ChannelError {
    match e {
        DownloadError::Network(e) if e.status().is_some_and(|s| s.is_client_error()) => {
            ChannelError::Rejected(e.to_string())
        }
        DownloadError::Network(e) => ChannelError::Network(e.to_string()),
        DownloadError::Io(e) => ChannelError::Other(format!("cannot save a received file: {e}")),
    }
}

/// Telegram refused our HTML: send the same text without formatting.
pub(super) fn is_entity_error(e: &RequestError) -> bool {
    matches!(e, RequestError::Api(ApiError::CantParseEntities(_)))
        || matches!(e, RequestError::Api(ApiError::Unknown(t)) if t.contains("can't parse entities"))
}

/// An edit that would not change the message: nothing to do.
pub(super) fn is_not_modified(e: &RequestError) -> bool {
    matches!(e, RequestError::Api(ApiError::MessageNotModified))
}
