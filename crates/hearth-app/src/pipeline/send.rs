//! Phase 8–9 of every reply: the sending hooks, then the send, against
//! the inbox record when the message has one.
//!
//! A recorded reply and its turn in the history are written in one
//! transaction before the first part leaves; each part is recorded as it
//! arrives (see [`crate::channels::SendJournal`]). A send that fails for
//! now (network, 5xx, rate limit) stays recorded with the time of its next
//! try, for the dispatcher's resend loop, across restarts too; one the
//! platform refuses (blocked bot, unknown chat) ends the record as failed
//! with the reason.

use std::sync::Arc;

use super::hooks::{self, HookAction};
use super::{Outcome, Runtime, outcome};
use crate::channels::{Channel, ChannelError, ChannelMessage, SendMessage};
use crate::chat::ChatMessage;
use crate::inbox::{Entry, EntryJournal, Inbound, InboxError, State, retry};
use crate::retry::RetryPolicy;

/// The waits between tries to record a made reply: from 1 s, doubling to 30 s.
const REPLY_RECORD_RETRY: RetryPolicy = RetryPolicy::new(
    std::time::Duration::from_secs(1),
    std::time::Duration::from_secs(30),
);

/// What a sender is told, once, while their reply cannot be recorded.
pub const UNRECORDED_REPLY: &str = "⚠️ Your answer is ready, but hearth cannot store it right now: the disk where it keeps its data is full or failing. It comes as soon as it can be stored; nothing needs to be sent again.";

/// A reply to send, and what to record with it.
pub(super) struct Reply {
    /// The draft the reply streamed into.
    pub draft: Option<String>,
    pub text: String,
    /// The outcome if it arrives.
    pub success: Outcome,
    /// The conversation and the turn to append to it.
    pub turn: Option<(String, Vec<ChatMessage>)>,
}

impl Runtime {
    /// Sends `reply` to `inbound`'s chat after the sending hooks.
    pub(super) async fn reply(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        reply: Reply,
    ) -> Outcome {
        let message = &inbound.message;
        let text = if inbound.late {
            outcome::late_note(&message.content, &reply.text)
        } else {
            reply.text
        };
        let out = match hooks::sending(&self.hooks, SendMessage::reply_to(message, text)).await {
            HookAction::Continue(m) => m,
            HookAction::Cancel(why) => {
                if let (Some(id), Some(drafts)) = (&reply.draft, channel.drafts()) {
                    let _ = drafts.cancel_draft(&message.reply_target, id).await;
                }
                if inbound.recorded {
                    self.inbox.finish(message, State::Cancelled, Some(&why));
                }
                return Outcome::HookCancelled(why);
            }
        };
        if !inbound.recorded {
            let sent = match (&reply.draft, channel.drafts()) {
                (Some(id), Some(drafts)) => {
                    match drafts.finalize_draft(&out.recipient, id, &out).await {
                        Ok(()) => Ok(()),
                        Err(_) => channel.send(&out).await,
                    }
                }
                _ => channel.send(&out).await,
            };
            // Saved even when delivery failed: the model did answer.
            if let Some((key, turn)) = &reply.turn
                && let Err(e) = self.sessions.append(key, turn)
            {
                tracing::error!(error = %e, "cannot save the reply");
            }
            return match sent {
                Ok(()) => reply.success,
                Err(e) => {
                    tracing::warn!(error = %e, channel = channel.name(), "cannot deliver a reply");
                    Outcome::Undelivered(e.to_string())
                }
            };
        }
        self.record_reply(channel, message, &out.content, reply.turn)
            .await;
        let journal = EntryJournal::fresh(self.inbox.clone(), message.clone());
        let sent = channel
            .send_recorded(&out, reply.draft.as_deref(), &journal)
            .await;
        match self.settle(message, sent, 0, None).await {
            Ok(()) => reply.success,
            Err(e) => Outcome::Undelivered(e.to_string()),
        }
    }

    /// Records the reply before it is sent. While it cannot be (a full
    /// disk) it waits, and the person is told once: a reply sent without
    /// its record would be made and sent again after a restart.
    async fn record_reply(
        &self,
        channel: &Arc<dyn Channel>,
        message: &ChannelMessage,
        text: &str,
        turn: Option<(String, Vec<ChatMessage>)>,
    ) {
        let mut backoff = REPLY_RECORD_RETRY.backoff();
        loop {
            let Err(e) = self.inbox.replying(message, text, turn.clone()).await else {
                if backoff.failures() > 0 {
                    tracing::info!(
                        tries = backoff.failures() + 1,
                        "the reply is recorded; sending it"
                    );
                }
                return;
            };
            if matches!(e, InboxError::Gone | InboxError::NoRuntime) {
                tracing::error!(error = %e, "cannot record the reply; sending it anyway");
                return;
            }
            let wait = backoff.failed();
            if backoff.failures() == 1 {
                tracing::error!(error = %e, "the reply is made but cannot be recorded; it waits until it can be, so that it is sent once");
                let notice = SendMessage::reply_to(message, UNRECORDED_REPLY.to_string());
                if let Err(e) = channel.send(&notice).await {
                    tracing::warn!(error = %e, "cannot tell the sender their reply waits");
                }
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// Sends a recorded reply on from where it stopped: after a restart,
    /// or when its next try is due.
    pub async fn resend(&self, entry: &Entry) -> Result<(), SendError> {
        let message = &entry.message;
        let Some(channel) = self.channels.get(&message.channel).cloned() else {
            let why = SendError::NoChannel(message.channel.clone());
            self.inbox
                .finish(message, State::Failed, Some(&why.to_string()));
            return Err(why);
        };
        let Some(text) = &entry.reply else {
            let why = SendError::NoReply;
            self.inbox
                .finish(message, State::Failed, Some(&why.to_string()));
            return Err(why);
        };
        let out = SendMessage::reply_to(message, text.clone());
        let journal = EntryJournal::resume(self.inbox.clone(), entry);
        let sent = channel
            .send_recorded(&out, entry.draft.as_deref(), &journal)
            .await;
        self.settle(message, sent, entry.send_tries, entry.first_failure)
            .await
    }

    /// Records how a send ended: answered; due again later; or failed.
    async fn settle(
        &self,
        message: &ChannelMessage,
        sent: Result<(), ChannelError>,
        tries: u32,
        first_failure: Option<i64>,
    ) -> Result<(), SendError> {
        let e = match sent {
            Ok(()) => {
                self.inbox.finish(message, State::Answered, None);
                return Ok(());
            }
            Err(e) => e,
        };
        let now = chrono::Utc::now().timestamp();
        if !e.is_transient() {
            tracing::warn!(error = %e, channel = message.channel, chat = message.reply_target, "the platform refused a reply; it is marked failed");
            self.inbox
                .finish(message, State::Failed, Some(&e.to_string()));
        } else if first_failure.is_some_and(|first| retry::given_up(first, now)) {
            let why = SendError::GivenUp(e);
            tracing::warn!(
                channel = message.channel,
                chat = message.reply_target,
                "{why}"
            );
            self.inbox
                .finish(message, State::Failed, Some(&why.to_string()));
            return Err(why);
        } else {
            let wait = retry::wait_after(tries + 1);
            tracing::warn!(error = %e, channel = message.channel, wait_secs = wait.as_secs(), "cannot deliver a reply now; it will be tried again");
            let at = now + wait.as_secs() as i64;
            if let Err(e) = self.inbox.retry_at(message, &e.to_string(), at).await {
                tracing::error!(error = %e, "cannot record the retry");
            }
        }
        Err(SendError::Channel(e))
    }
}

/// Why a reply did not reach its chat; the inbox records what follows.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("no channel named `{0}` any more")]
    NoChannel(String),
    #[error("no reply was recorded")]
    NoReply,
    #[error("undelivered for a day, given up: {0}")]
    GivenUp(ChannelError),
    #[error(transparent)]
    Channel(ChannelError),
}
