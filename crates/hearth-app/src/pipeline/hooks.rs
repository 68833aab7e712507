//! Phase 0 and the sending hook: code that may change or stop a message
//! on its way in, and a reply on its way out.

use crate::channels::{ChannelMessage, SendMessage};
use futures::future::BoxFuture;

/// What a hook decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAction<T> {
    /// Go on, with this (possibly modified) value.
    Continue(T),
    /// Stop here; the reason is logged, nothing is sent.
    Cancel(String),
}

/// A hook into the pipeline. Both methods default to passing through.
pub trait Hook: Send + Sync {
    /// Called before anything else happens to an incoming message.
    fn on_message_received(
        &self,
        message: ChannelMessage,
    ) -> BoxFuture<'_, HookAction<ChannelMessage>> {
        Box::pin(async move { HookAction::Continue(message) })
    }

    /// Called before a reply is sent.
    fn on_message_sending(&self, message: SendMessage) -> BoxFuture<'_, HookAction<SendMessage>> {
        Box::pin(async move { HookAction::Continue(message) })
    }
}

/// Runs the received hooks in order; the first `Cancel` wins.
pub async fn received(
    hooks: &[std::sync::Arc<dyn Hook>],
    mut message: ChannelMessage,
) -> HookAction<ChannelMessage> {
    for hook in hooks {
        match hook.on_message_received(message).await {
            HookAction::Continue(m) => message = m,
            cancel => return cancel,
        }
    }
    HookAction::Continue(message)
}

/// Runs the sending hooks in order; the first `Cancel` wins.
pub async fn sending(
    hooks: &[std::sync::Arc<dyn Hook>],
    mut message: SendMessage,
) -> HookAction<SendMessage> {
    for hook in hooks {
        match hook.on_message_sending(message).await {
            HookAction::Continue(m) => message = m,
            cancel => return cancel,
        }
    }
    HookAction::Continue(message)
}
