//! What a start takes up from the inbox, and the loop that sends failed
//! replies again.
//!
//! At start, before any listener runs:
//! - a message whose sender the channel no longer allows (the allowlist
//!   changed while hearth was down) is marked failed, never answered;
//! - a message left received or started is queued again, oldest first, and
//!   its reply says it is late; a half-written draft of it is removed;
//! - a message started [`GIVE_UP_ATTEMPTS`] times without an outcome (it
//!   may be what kills the daemon) is given up, and its person told;
//! - a reply left being sent is due at once: the resend loop sends it on
//!   from the part it reached.
//!
//! The resend loop then runs for the daemon's life: every reply whose next
//! try is due is sent again ([`Runtime::resend`]), until it arrives, the
//! platform refuses it, or a day has passed since it first failed.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::channels::SendMessage;
use crate::inbox::{Inbound, State};
use crate::pipeline::{Runtime, outcome};

/// A message whose turn was started this often without ending is given up.
pub const GIVE_UP_ATTEMPTS: u32 = 3;
/// How often the resend loop looks for due replies.
pub const RESEND_POLL: Duration = Duration::from_secs(1);

/// Queues what the last run left open; returns how many messages were
/// queued again.
pub async fn take_up(runtime: &Runtime, bus: &mpsc::Sender<Inbound>) -> usize {
    let inbox = runtime.inbox();
    let entries = match inbox.open_entries().await {
        Ok(entries) => entries,
        Err(e) => {
            tracing::error!(error = %e, "cannot read the inbox; earlier messages are not taken up");
            return 0;
        }
    };
    let now = chrono::Utc::now().timestamp();
    let mut queued = 0;
    for entry in entries {
        let message = entry.message.clone();
        if let Some(channel) = runtime.channel(&message.channel)
            && !channel.still_allows(&message)
        {
            tracing::warn!(
                channel = message.channel,
                sender = message.sender,
                "a message left from the last run is dropped: its sender is no longer allowed"
            );
            let why = "its sender is no longer allowed (allowed_users changed)";
            inbox.finish(&message, State::Failed, Some(why));
            continue;
        }
        if entry.state == State::Replying {
            if entry.next_try.is_none()
                && let Err(e) = inbox
                    .retry_at(&message, "interrupted by a restart", now)
                    .await
            {
                tracing::error!(error = %e, "cannot schedule an interrupted reply");
            }
            continue;
        }
        let Some(channel) = runtime.channel(&message.channel).cloned() else {
            let why = format!("no channel named `{}` is configured now", message.channel);
            inbox.finish(&message, State::Failed, Some(&why));
            continue;
        };
        if let (Some(draft), Some(drafts)) = (&entry.draft, channel.drafts()) {
            let _ = drafts.cancel_draft(&message.reply_target, draft).await;
        }
        if entry.attempts >= GIVE_UP_ATTEMPTS {
            tracing::error!(
                id = message.id,
                attempts = entry.attempts,
                "a message was started {GIVE_UP_ATTEMPTS} times without an outcome; giving up on it"
            );
            let notice = outcome::abandoned_notice(&message.content, entry.attempts);
            let _ = runtime
                .deliver(&message.channel, SendMessage::reply_to(&message, notice))
                .await;
            let why = format!("hearth stopped {} times while answering it", entry.attempts);
            inbox.finish(&message, State::Failed, Some(&why));
            continue;
        }
        let late = Inbound {
            message,
            recorded: true,
            late: true,
            spoken: false,
        };
        if bus.send(late).await.is_err() {
            break;
        }
        queued += 1;
    }
    if queued > 0 {
        tracing::info!(
            queued,
            "answering messages left unanswered by the last run first"
        );
    }
    queued
}

/// Sends due replies again until `shutdown`.
pub async fn resend_loop(runtime: Arc<Runtime>, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(RESEND_POLL) => {}
        }
        let now = chrono::Utc::now().timestamp();
        let due = match runtime.inbox().due(now).await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the inbox for replies to resend");
                continue;
            }
        };
        for entry in &due {
            if shutdown.is_cancelled() {
                return;
            }
            match runtime.resend(entry).await {
                Ok(()) => tracing::info!(
                    id = entry.message.id,
                    channel = entry.message.channel,
                    "a reply that had failed was delivered"
                ),
                Err(e) => tracing::debug!(id = entry.message.id, error = %e, "resend failed"),
            }
        }
    }
}
