//! The `Channel` trait: three required methods, the rest optional; what
//! only some platforms can do is a capability trait a channel offers
//! ([`Drafts`], [`Presence`], [`ReplyStream`]).

use super::approval::{Answer, ApprovalRequest};
use super::drafts::Drafts;
use super::intake::Intake;
use super::presence::Presence;
use super::reply::ReplyStream;
use super::send_journal::SendJournal;
use super::{ChannelError, ChannelMessage, SendMessage};
use futures::future::BoxFuture;

/// Per-channel choices the dispatcher and pipeline honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelPolicy {
    /// A new message from the same sender and scope cancels the running reply.
    pub interrupt_on_new_message: bool,
    /// Tell the user which tool is running ("🔧 shell …").
    pub show_tool_calls: bool,
    /// Show the reply while it is made: in a draft, or event by event to a
    /// client that streams (only where the channel offers either).
    pub stream_replies: bool,
    /// Every sender here holds one credential and names themselves (the
    /// gateway: whoever has its token picks any `chat`). What is limited
    /// per person is then limited for the channel as a whole, or one
    /// holder would be as many people as names they make up.
    pub one_credential: bool,
}

impl Default for ChannelPolicy {
    fn default() -> Self {
        Self {
            interrupt_on_new_message: true,
            show_tool_calls: false,
            stream_replies: false,
            one_credential: false,
        }
    }
}

/// What a channel shows by default: text as it is.
pub const PLAIN_TEXT: &str = "plain text; short paragraphs read best";

/// One messaging platform.
///
/// `name`, `send` and `listen` are required. What only some platforms can
/// do is offered through a capability: [`Channel::drafts`] (a message
/// edited while the reply is written), [`Channel::presence`] (typing and
/// reactions) and [`Channel::stream`] (clients that take the reply event by
/// event). The pipeline uses whichever a channel offers; no channel is
/// recognised by its name.
///
/// A tool notice goes to a streaming client as an event; elsewhere, with
/// `show_tool_calls` on, it is sent as a short message.
pub trait Channel: Send + Sync {
    /// A short, stable name: `"telegram"`, `"cli"`.
    fn name(&self) -> &str;

    /// Delivers one message. Long content is the channel's to split.
    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>>;

    /// Receives messages and hands each to `intake` until the platform
    /// fails (an error: the supervisor restarts it with backoff) or the
    /// intake closes (`Ok`: the daemon is stopping). A message is
    /// acknowledged to the platform only once `intake` accepted it.
    /// Dropping the future stops listening.
    fn listen(&self, intake: Intake) -> BoxFuture<'_, Result<(), ChannelError>>;

    /// Whether this channel's messages are kept in the durable inbox until
    /// answered, and answered after a restart. The CLI says no: its person
    /// is at the terminal, and a new session is a new start.
    fn durable(&self) -> bool {
        true
    }

    /// Whether `message`'s sender may still be answered. Asked again of a
    /// message taken up after a restart, since the allowlist may have
    /// changed in between; channels without one say yes.
    fn still_allows(&self, _message: &ChannelMessage) -> bool {
        true
    }

    /// Sends the reply `message` against `journal`, skipping the parts it
    /// says were delivered (see [`SendJournal`]); into `draft` when the
    /// reply streamed into one. Channels that split replies record each
    /// part; the default sends the message as one part, whose arrival the
    /// caller records.
    fn send_recorded<'a>(
        &'a self,
        message: &'a SendMessage,
        draft: Option<&'a str>,
        journal: &'a dyn SendJournal,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            if journal.delivered(0).is_some() {
                return Ok(());
            }
            if let (Some(id), Some(drafts)) = (draft, self.drafts()) {
                // An edit lands once however often it is repeated.
                if drafts
                    .finalize_draft(&message.recipient, id, message)
                    .await
                    .is_ok()
                {
                    journal.sent(0, id);
                    return Ok(());
                }
            }
            // One part: the record's end (answered) says it arrived.
            self.send(message).await
        })
    }

    /// How the dispatcher treats this channel's messages.
    fn policy(&self) -> ChannelPolicy {
        ChannelPolicy::default()
    }

    /// `message` ended without a reply: `/stop`, a newer message, a hook or
    /// shutdown cancelled it. Channels whose clients wait for an answer
    /// (the HTTP gateway) release them here.
    fn unanswered<'a>(&'a self, _message: &'a ChannelMessage) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Asks the person who started a turn, in their chat, whether a tool
    /// call may run; `Ok(None)` when no answer came within the request's
    /// timeout. The question is closed (buttons removed) however this
    /// ends, being dropped included. Channels that cannot ask say
    /// `Unsupported`, and the call does not run.
    fn ask_approval<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<Answer>, ChannelError>> {
        Box::pin(async { Err(ChannelError::Unsupported("asking for approval")) })
    }

    /// Question `id`, asked by [`Channel::ask_approval`], was answered
    /// somewhere else (on the web page): the channel's own question takes
    /// `answer`, so `ask_approval` returns it and closes the question as
    /// decided. False when this channel holds no such open question.
    fn answered_elsewhere(&self, _id: &str, _answer: Answer) -> bool {
        false
    }

    /// Sends `ogg`, an OGG/Opus voice note, where `to` goes (its chat and
    /// thread). Channels without voice notes say `Unsupported`.
    fn send_voice<'a>(
        &'a self,
        _to: &'a SendMessage,
        _ogg: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Err(ChannelError::Unsupported("voice notes")) })
    }

    /// Whether the platform is reachable now.
    fn health_check(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { true })
    }

    /// How this channel's person sees text, for the runtime line of the
    /// system prompt.
    fn shows(&self) -> &'static str {
        PLAIN_TEXT
    }

    /// Drafts, where the channel shows a reply in a message edited in place.
    fn drafts(&self) -> Option<&dyn Drafts> {
        None
    }

    /// Typing and reactions, where the platform has them.
    fn presence(&self) -> Option<&dyn Presence> {
        None
    }

    /// The reply event by event, where the channel's clients take it so.
    fn stream(&self) -> Option<&dyn ReplyStream> {
        None
    }
}
