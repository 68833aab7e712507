//! How a message ended, and what the user is told when it ended badly:
//! cancelled (nothing sent), context overflow (history compacted to the
//! last 12 messages of 600 chars, user told), provider error (`[Task
//! failed]` turn, sanitised message), timeout (`[Task timed out]`).

use crate::chat::ChatMessage;

/// The end of one message's handling. The dispatcher reports exactly one
/// per message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A reply was sent.
    Replied,
    /// A runtime command was answered.
    Command,
    /// A hook stopped the message (or the reply).
    HookCancelled(String),
    /// `/stop` or shutdown cancelled it; nothing was sent.
    Cancelled,
    /// A newer message from the same sender took its place; nothing was sent.
    Superseded,
    /// The conversation did not fit; it was compacted and the user told.
    Overflow,
    /// The provider failed; the user was told.
    Failed,
    /// The time budget ran out; the user was told.
    TimedOut,
    /// The reply could not be delivered.
    Undelivered(String),
    /// The message's record could not be written (a full disk): nothing
    /// was sent, and its listener offers it again once it can be.
    Unrecorded,
}

impl Outcome {
    /// Every [`Outcome::label`].
    pub const LABELS: &'static [&'static str] = &[
        "replied",
        "command",
        "hook_cancelled",
        "cancelled",
        "superseded",
        "overflow",
        "failed",
        "timed_out",
        "undelivered",
        "unrecorded",
    ];

    /// A short name, for counting outcomes.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Replied => "replied",
            Self::Command => "command",
            Self::HookCancelled(_) => "hook_cancelled",
            Self::Cancelled => "cancelled",
            Self::Superseded => "superseded",
            Self::Overflow => "overflow",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::Undelivered(_) => "undelivered",
            Self::Unrecorded => "unrecorded",
        }
    }

    /// Whether the message ended with nothing sent for it.
    pub fn sent_nothing(&self) -> bool {
        matches!(
            self,
            Self::Cancelled | Self::Superseded | Self::HookCancelled(_)
        )
    }
}

/// The assistant turn recorded for a failure.
pub fn failed_turn(detail: &str) -> ChatMessage {
    ChatMessage::assistant(format!("[Task failed] {detail}"))
}

/// Recorded after a reply the user stopped, so the next turn is read as a
/// new request rather than a continuation of the abandoned one.
pub fn stopped_turn() -> ChatMessage {
    ChatMessage::assistant("[Stopped by the user]")
}

pub fn timed_out_turn(secs: u64) -> ChatMessage {
    ChatMessage::assistant(format!("[Task timed out] after {secs} s"))
}

pub fn overflow_notice(kept: usize) -> String {
    format!(
        "This conversation grew too long for the model, so I kept only the last {kept} messages (shortened). Please send your last message again."
    )
}

/// Whether a message of `tokens` cannot fit a window of `window` tokens
/// however short the history is made (the system prompt, the tools and the
/// reply need the rest).
pub fn too_long_alone(tokens: usize, window: u32) -> bool {
    tokens.saturating_mul(5) > window as usize * 3
}

/// What a person is told when their message alone is too long.
pub fn too_long_notice(tokens: usize, window: u32) -> String {
    format!(
        "Your message is about {tokens} tokens, too long for the model, which reads {window} tokens at a time (the system prompt and the reply included); sending it again will not help. Instead, put it in a file in the workspace (on Telegram, send it as a document) and ask about the file: the tools read it in parts. Or raise `[model] context_size` if this machine has the memory."
    )
}

/// What the history keeps of a message too long to read.
pub fn too_long_stand_in(chars: usize, tokens: usize) -> String {
    format!(
        "[a message of {chars} characters (about {tokens} tokens), too long to read, was not kept]"
    )
}

pub fn failed_notice(detail: &str) -> String {
    format!("Sorry, I could not answer that: {detail}")
}

/// The first line of a reply that comes late because hearth restarted
/// while it was being made, naming the message it answers.
pub fn late_note(asked: &str, reply: &str) -> String {
    let asked = asked.split_whitespace().collect::<Vec<_>>().join(" ");
    let excerpt: String = asked.chars().take(80).collect();
    let cut = if excerpt.len() < asked.len() {
        "…"
    } else {
        ""
    };
    format!("(Sorry for the delay: hearth restarted while answering “{excerpt}{cut}”.)\n\n{reply}")
}

/// What the user hears of a message hearth gave up on after it stopped
/// the daemon again and again.
pub fn abandoned_notice(asked: &str, attempts: u32) -> String {
    let excerpt: String = asked.chars().take(80).collect();
    format!(
        "Sorry, I could not answer “{excerpt}”: hearth stopped {attempts} times while working on it, so I gave up on it. Please ask again, perhaps differently."
    )
}

pub fn timed_out_notice(secs: u64) -> String {
    format!("[Task timed out] I could not finish within {secs} s. Try a narrower request.")
}
