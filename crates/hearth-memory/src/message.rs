//! What memory knows of a message: where it was said, by whom, and what.
//! The pipeline fills it in from a channel's message, so memory knows no
//! platform type.

/// One message, as memory sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// The channel's name (`telegram`, `gateway`, …).
    pub channel: String,
    /// The chat it was said in; the sender's own id in a private chat.
    pub chat: String,
    /// The thread within the chat, where the platform has them.
    pub thread: Option<String>,
    pub sender: String,
    /// The channel's id of the message.
    pub id: String,
    pub text: String,
}
