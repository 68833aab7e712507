//! Phase 9 of a turn: how the tool loop's end becomes the reply: the
//! answer (stored, with a compacted history where context management made
//! one), a cancelled draft taken away, or the notice of an error outcome.

use std::sync::Arc;

use super::send::Reply;
use super::{Outcome, Runtime, outcome, sanitize};
use crate::agent::ConversationMessage;
use crate::agent::tool_loop::{LoopError, LoopOutcome};
use crate::channels::Channel;
use crate::chat::{ChatMessage, ProviderError};
use crate::inbox::Inbound;
use crate::providers::Provider;

/// How the tool loop ended, with what the person was shown meanwhile.
pub(super) struct Ended {
    pub result: Result<LoopOutcome, LoopError>,
    /// The reply's cleaned text, when the loop answered.
    pub shown: Option<String>,
    /// The draft the reply streamed into.
    pub draft: Option<String>,
}

impl Runtime {
    /// Sends what `ended` calls for; `scheduled`: a job's turn, which
    /// memory does not learn from.
    pub(super) async fn conclude(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        key: &str,
        provider: &dyn Provider,
        ended: Ended,
        (scheduled, said): (bool, &crate::memory::Said),
    ) -> Outcome {
        let Ended {
            result,
            shown,
            draft,
        } = ended;
        match result {
            Ok(done) => {
                self.answered(
                    channel,
                    inbound,
                    key,
                    done,
                    (shown, draft),
                    (scheduled, said, provider),
                )
                .await
            }
            Err(LoopError::Cancelled) => {
                if let (Some(id), Some(drafts)) = (draft, channel.drafts()) {
                    let _ = drafts
                        .cancel_draft(&inbound.message.reply_target, &id)
                        .await;
                }
                Outcome::Cancelled
            }
            Err(LoopError::Provider(ProviderError::ContextOverflow { limit, .. })) => {
                self.overflowed(channel, inbound, key, provider, limit, draft)
                    .await
            }
            Err(LoopError::Provider(e)) => {
                // A picture the model refused (too big, unreadable) would
                // fail every later turn of the chat: it goes.
                if matches!(e, ProviderError::InvalidRequest(_))
                    && !inbound.message.images.is_empty()
                    && let Err(e) = self.sessions.forget_last_pictures(key)
                {
                    tracing::error!(error = %e, "cannot take a refused picture off the history");
                }
                self.failed(channel, inbound, key, draft, &e.to_string())
                    .await
            }
            Err(LoopError::TimedOut(secs)) => {
                let reply = Reply {
                    draft,
                    text: outcome::timed_out_notice(secs),
                    success: Outcome::TimedOut,
                    turn: Some((key.to_string(), vec![outcome::timed_out_turn(secs)])),
                };
                self.reply(channel, inbound, reply).await
            }
        }
    }

    /// The loop answered: the answer is sent and stored, and memory hears it.
    async fn answered(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        key: &str,
        done: LoopOutcome,
        (shown, draft): (Option<String>, Option<String>),
        (scheduled, said, provider): (bool, &crate::memory::Said, &dyn Provider),
    ) -> Outcome {
        let message = &inbound.message;
        self.count_tool_calls(&done.history);
        if let Some(kept) = &done.rewritten_history {
            // Context management summarised or dropped old turns:
            // store what the model now sees, so it is not redone.
            let mut stored = kept.clone();
            stored.push(ChatMessage {
                images: message.images.clone(),
                ..ChatMessage::user(message.content.clone())
            });
            if let Err(e) = self.sessions.replace(key, &stored) {
                tracing::error!(error = %e, "cannot store the compacted history");
            }
        }
        let text = shown.unwrap_or_default();
        let text = if text.is_empty() {
            "I have no answer to that.".to_string()
        } else {
            text
        };
        let reply = Reply {
            draft,
            text: text.clone(),
            success: Outcome::Replied,
            turn: Some((key.to_string(), vec![ChatMessage::assistant(text.clone())])),
        };
        let outcome = self.reply(channel, inbound, reply).await;
        if matches!(outcome, Outcome::HookCancelled(_)) {
            return outcome;
        }
        if outcome == Outcome::Replied {
            self.speak(channel, inbound, provider, &text).await;
        }
        if !scheduled {
            self.memory.after_turn(said, &text).await;
        }
        outcome
    }

    /// The prompt did not fit: a paste too long on its own leaves the
    /// history; otherwise the history is compacted. Either way the person
    /// is told.
    async fn overflowed(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        key: &str,
        provider: &dyn Provider,
        limit: u32,
        draft: Option<String>,
    ) -> Outcome {
        let message = &inbound.message;
        let window = provider.context_window().unwrap_or(limit);
        let tokens = provider
            .count_tokens(&message.content)
            .unwrap_or(message.content.chars().count() / 4);
        if outcome::too_long_alone(tokens, window) {
            // Compacting the history would lose it and not help; the
            // paste itself leaves the history, or every later turn
            // would overflow on it.
            let note = outcome::too_long_stand_in(message.content.chars().count(), tokens);
            if let Err(e) = self.sessions.stand_in(key, &message.content, &note) {
                tracing::error!(error = %e, "cannot drop the long message from the history");
            }
            let reply = Reply {
                draft,
                text: outcome::too_long_notice(tokens, window),
                success: Outcome::Overflow,
                turn: None,
            };
            return self.reply(channel, inbound, reply).await;
        }
        let kept = self.sessions.compact(key).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot compact history");
            0
        });
        let reply = Reply {
            draft,
            text: outcome::overflow_notice(kept),
            success: Outcome::Overflow,
            turn: None,
        };
        self.reply(channel, inbound, reply).await
    }

    /// Counts the turn's tool calls by tool and outcome.
    fn count_tool_calls(&self, history: &[ConversationMessage]) {
        for message in history {
            let ConversationMessage::ToolResults(results) = message else {
                continue;
            };
            for r in results {
                let outcome = match (r.is_error, r.content.starts_with("not run:")) {
                    (false, _) => "ok",
                    (true, true) => "refused",
                    (true, false) => "error",
                };
                self.metrics().tool_call(&r.name, outcome);
            }
        }
    }

    pub(super) async fn failed(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        key: &str,
        draft: Option<String>,
        error: &str,
    ) -> Outcome {
        tracing::warn!(error, "the provider failed");
        self.failed_quietly(channel, inbound, key, draft, error)
            .await
    }

    /// [`Self::failed`] for a refusal known before the provider is asked
    /// (a picture sent to a model without eyes): the person reads why in
    /// the reply, so the log says it at `info` only, and a terminal chat
    /// shows it once.
    pub(super) async fn failed_quietly(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        key: &str,
        draft: Option<String>,
        error: &str,
    ) -> Outcome {
        tracing::info!(error, "refused before the provider was asked");
        let detail = sanitize::error(error, &self.tool_context.scrubber);
        let reply = Reply {
            draft,
            text: outcome::failed_notice(&detail),
            success: Outcome::Failed,
            turn: Some((key.to_string(), vec![outcome::failed_turn(&detail)])),
        };
        self.reply(channel, inbound, reply).await
    }
}
