//! Drafts: a message that shows the reply while it is written, edited in
//! place, and that the final reply replaces (Telegram's edited message, the
//! terminal line of the CLI).
//!
//! A draft's id is kept in the inbox record, so that after a restart the
//! reply can still be put in its place, or a half-written one removed.

use futures::future::BoxFuture;

use super::{ChannelError, SendMessage};

/// A channel that can show a reply in a message edited in place.
pub trait Drafts: Send + Sync {
    /// Posts the first text of a draft; returns the draft's id.
    fn send_draft<'a>(
        &'a self,
        message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<String, ChannelError>>;

    /// Replaces the draft's text with `text` (the whole reply so far).
    fn update_draft<'a>(
        &'a self,
        recipient: &'a str,
        draft_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>>;

    /// Puts the whole final reply in place of the draft (splitting it if
    /// needed).
    fn finalize_draft<'a>(
        &'a self,
        recipient: &'a str,
        draft_id: &'a str,
        message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<(), ChannelError>>;

    /// Removes a draft whose reply was cancelled.
    fn cancel_draft<'a>(
        &'a self,
        recipient: &'a str,
        draft_id: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>>;
}

/// Whether a reply streams into a message edited in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    /// The reply is sent once, when it is complete.
    Off,
    /// A draft message shows the reply as it grows.
    Partial,
}

impl StreamMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Partial => "partial",
        }
    }
}
