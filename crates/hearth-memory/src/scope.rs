//! Whose memory a message or tool call uses: the scopes of `hearth-tools`
//! ([`hearth_tools::scope`]), which documents share.

use super::Said;
pub use hearth_tools::scope::{LOCAL_SCOPE, Scopes};

/// The scopes of the person who said `message`, where they said it.
pub fn of_message(message: &Said) -> Scopes {
    Scopes::of_chat(&message.channel, &message.sender, &message.chat)
}
