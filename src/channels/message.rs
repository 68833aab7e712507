//! Messages in and out of a channel.

/// One incoming message, as every channel reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChannelMessage {
    /// The platform's id for this message (unique within the channel).
    pub id: String,
    /// Who wrote it (a stable user id, not a display name).
    pub sender: String,
    /// Where the reply goes: the chat, which for a private chat may equal `sender`.
    pub reply_target: String,
    /// The text, with media as `[IMAGE:path]`-style markers.
    pub content: String,
    /// The channel's name (`"telegram"`, `"cli"`, ...).
    pub channel: String,
    /// Seconds since the Unix epoch.
    pub timestamp: u64,
    /// A thread or forum topic, when the platform has them.
    pub thread_ts: Option<String>,
    /// Messages with the same sender and scope interrupt each other.
    pub interruption_scope_id: Option<String>,
    /// Who started this turn: the sender, or a job on their behalf.
    pub initiator: Initiator,
}

impl ChannelMessage {
    /// What `sender` wrote in chat `reply_target` of `channel` just now,
    /// outside any thread.
    pub fn now(channel: &str, id: String, sender: &str, reply_target: &str, content: &str) -> Self {
        Self {
            id,
            sender: sender.to_string(),
            reply_target: reply_target.to_string(),
            content: content.to_string(),
            channel: channel.to_string(),
            timestamp: chrono::Utc::now().timestamp().max(0) as u64,
            thread_ts: None,
            interruption_scope_id: None,
            initiator: Initiator::Person,
        }
    }
}

/// Who started a message's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Initiator {
    /// The sender wrote it.
    #[default]
    Person,
    /// A job the sender set fired it: it runs in their scope, but only tools
    /// that change nothing may run, and it is neither remembered nor kept
    /// in their own conversation.
    Schedule,
}

/// One outgoing message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SendMessage {
    pub content: String,
    /// The chat (a `ChannelMessage::reply_target`).
    pub recipient: String,
    /// A subject line, for channels that have one (mail); others ignore it.
    pub subject: Option<String>,
    /// Reply into this thread or topic.
    pub thread_ts: Option<String>,
    /// The id of the message this answers, for channels that pair replies
    /// with requests (the HTTP gateway); `None` for unprompted messages.
    pub in_reply_to: Option<String>,
}

impl SendMessage {
    pub fn new(recipient: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            recipient: recipient.into(),
            ..Self::default()
        }
    }

    /// A reply to `message`, in its chat and thread.
    pub fn reply_to(message: &ChannelMessage, content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            recipient: message.reply_target.clone(),
            subject: None,
            thread_ts: message.thread_ts.clone(),
            in_reply_to: Some(message.id.clone()),
        }
    }
}
