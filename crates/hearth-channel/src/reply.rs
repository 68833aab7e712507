//! The typed reply stream: what the pipeline tells a channel while a reply
//! is being made, in the order it happens.
//!
//! Clients that take a reply as it is made (a WebSocket, a streamed
//! completion, an editor over ACP) render these events as they come through
//! [`ReplyStream`]. Chat apps that show the reply in a message edited in
//! place take the same text through [`Drafts`](super::Drafts) instead. The
//! end of a reply is not an event: it is the reply itself, delivered with
//! [`Channel::send_recorded`](super::Channel::send_recorded), or
//! [`Channel::unanswered`](super::Channel::unanswered) when none comes.

use futures::future::BoxFuture;

/// One thing that happened while a reply was being made.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyEvent {
    /// Text the person may see, to append to what was shown: already
    /// cleaned of tool-call markup, and held back where it may still
    /// become some. A later round's first text (after tools ran) starts
    /// with a blank line. The last piece completes the final reply's text
    /// where the stream had not shown all of it.
    Text(String),
    /// The model began to reason; what it thinks is not shown.
    Reasoning,
    /// A tool is about to run with these arguments.
    ToolStarted {
        name: String,
        arguments: serde_json::Value,
    },
    /// A tool call ended: its output, or why it did not run.
    ToolFinished {
        name: String,
        ok: bool,
        output: String,
    },
    /// A model round of the reply ended: what it cost, and why it ended
    /// (a turn with tools has several).
    Round {
        usage: hearth_core::chat::Usage,
        finish: hearth_core::chat::FinishReason,
    },
}

/// A channel whose clients take a reply event by event.
pub trait ReplyStream: Send + Sync {
    /// Renders `event` of the reply to message `message_id`. A client
    /// that went away is the channel's to ignore.
    fn event<'a>(&'a self, message_id: &'a str, event: &'a ReplyEvent) -> BoxFuture<'a, ()>;
}
