//! The `Channel` trait: three required methods, the rest optional.

use super::approval::{Answer, ApprovalRequest};
use super::intake::Intake;
use super::journal::SendJournal;
use super::{ChannelError, ChannelMessage, SendMessage};
use futures::future::BoxFuture;

/// Per-channel choices the dispatcher and pipeline honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelPolicy {
    /// A new message from the same sender and scope cancels the running reply.
    pub interrupt_on_new_message: bool,
    /// Tell the user which tool is running ("🔧 shell …").
    pub show_tool_calls: bool,
    /// Stream the reply into a draft (only when `supports_drafts`).
    pub stream_drafts: bool,
}

impl Default for ChannelPolicy {
    fn default() -> Self {
        Self {
            interrupt_on_new_message: true,
            show_tool_calls: false,
            stream_drafts: false,
        }
    }
}

/// One messaging platform.
///
/// `name`, `send` and `listen` are required. Typing indicators, drafts
/// (a message edited while the reply streams) and reactions are optional:
/// their defaults do nothing, or say `Unsupported` for drafts.
///
/// The pipeline calls `add_reaction` with 👀 on receipt and ✅ or ⚠️ at the
/// end, `start_typing` every 4 s while working, and `update_draft` as often
/// as text arrives: a channel turns off what its config turns off (reactions
/// become no-ops) and throttles draft edits to what its platform tolerates.
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
            if let Some(id) = draft {
                // An edit lands once however often it is repeated.
                if self
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

    /// Tells the person that `tool` is about to run, with `notice` (its
    /// text, addressed to the chat and naming the message it serves).
    /// Called only when the policy's `show_tool_calls` is on; the default
    /// sends `notice` as a message.
    fn tool_notice<'a>(
        &'a self,
        notice: &'a SendMessage,
        _tool: &'a str,
        _arguments: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        self.send(notice)
    }

    /// Tells a client that shows tool calls as they run (ACP) that the
    /// call of `tool` serving `message_id` ended, with its output (`ok`:
    /// it ran without error). Called only when `show_tool_calls` is on; the
    /// default shows nothing.
    fn tool_finished<'a>(
        &'a self,
        _message_id: &'a str,
        _tool: &'a str,
        _ok: bool,
        _output: &'a str,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Whether the platform is reachable now.
    fn health_check(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { true })
    }

    /// Shows "typing…" in `recipient`'s chat (platforms expire it; callers refresh).
    fn start_typing<'a>(
        &'a self,
        _recipient: &'a str,
        _thread_ts: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Ok(()) })
    }

    fn stop_typing<'a>(&'a self, _recipient: &'a str) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Ok(()) })
    }

    /// Whether replies can stream into a draft that is edited in place.
    fn supports_drafts(&self) -> bool {
        false
    }

    /// Posts the first text of a draft; returns the draft's message id.
    fn send_draft<'a>(
        &'a self,
        _message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        Box::pin(async { Err(ChannelError::Unsupported("drafts")) })
    }

    /// Replaces the draft's text with `text` (the whole reply so far).
    fn update_draft<'a>(
        &'a self,
        _recipient: &'a str,
        _draft_id: &'a str,
        _text: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Err(ChannelError::Unsupported("drafts")) })
    }

    /// Puts the whole final reply in place of the draft (splitting if
    /// needed). The default sends it as a message, which is right where
    /// drafts are streamed pieces rather than a message edited in place.
    fn finalize_draft<'a>(
        &'a self,
        _recipient: &'a str,
        _draft_id: &'a str,
        message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        self.send(message)
    }

    /// Removes a draft whose reply was cancelled; by default there is
    /// nothing to remove.
    fn cancel_draft<'a>(
        &'a self,
        _recipient: &'a str,
        _draft_id: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Ok(()) })
    }

    /// Adds `emoji` to a received message.
    fn add_reaction<'a>(
        &'a self,
        _recipient: &'a str,
        _message_id: &'a str,
        _emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Ok(()) })
    }

    fn remove_reaction<'a>(
        &'a self,
        _recipient: &'a str,
        _message_id: &'a str,
        _emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Ok(()) })
    }
}
