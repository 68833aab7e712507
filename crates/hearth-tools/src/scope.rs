//! Whose memory and documents a message or tool call reads and writes.
//!
//! Every sender has a scope of their own (`{channel}:{sender}`); a group
//! chat (a reply target other than the sender) has one more
//! (`{channel}:chat:{reply_target}`) that its members share. A private chat
//! on Telegram has the user's id as its chat id, so it is no group. Calls
//! that serve no chat (the command line) use [`LOCAL_SCOPE`].

use super::ToolOrigin;

/// The scope of calls that come from no chat.
pub const LOCAL_SCOPE: &str = "local";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scopes {
    pub sender: String,
    /// The group chat's shared scope, when the chat is a group.
    pub group: Option<String>,
}

impl Scopes {
    /// The scopes of `sender` writing in `chat` on `channel`.
    pub fn of_chat(channel: &str, sender: &str, chat: &str) -> Self {
        Self {
            sender: format!("{channel}:{sender}"),
            group: (chat != sender).then(|| format!("{channel}:chat:{chat}")),
        }
    }

    pub fn of_origin(origin: Option<&ToolOrigin>) -> Self {
        match origin {
            Some(o) => Self::of_chat(&o.channel, &o.sender, &o.reply_target),
            None => Self {
                sender: LOCAL_SCOPE.to_string(),
                group: None,
            },
        }
    }

    /// The sender's scope, then the group's.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.sender.as_str()).chain(self.group.as_deref())
    }

    /// Where something a person keeps goes: the group's scope in a group
    /// chat, else their own.
    pub fn shared_or_own(&self) -> &str {
        self.group.as_deref().unwrap_or(&self.sender)
    }
}
