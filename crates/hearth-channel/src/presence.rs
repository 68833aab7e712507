//! Presence: the signs of life a chat app shows around a message:
//! "typing…" while the reply is made, and reactions on the message itself
//! (👀 on receipt, ✅ or ⚠️ at the end).

use futures::future::BoxFuture;

use super::ChannelError;

/// A channel that shows typing and reacts to messages.
pub trait Presence: Send + Sync {
    /// Shows "typing…" in `recipient`'s chat; platforms expire it after a
    /// few seconds, so the pipeline refreshes it.
    fn start_typing<'a>(
        &'a self,
        recipient: &'a str,
        thread_ts: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>>;

    /// Ends "typing…" where the platform does not let it expire.
    fn stop_typing<'a>(&'a self, _recipient: &'a str) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Ok(()) })
    }

    /// Adds `emoji` to a received message (a channel's config may turn
    /// reactions off: then this does nothing).
    fn add_reaction<'a>(
        &'a self,
        recipient: &'a str,
        message_id: &'a str,
        emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>>;

    /// Takes `emoji` off a received message.
    fn remove_reaction<'a>(
        &'a self,
        _recipient: &'a str,
        _message_id: &'a str,
        _emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Ok(()) })
    }
}
