//! Phases 3–9 of a message that is not a command: route, restore
//! history, recall memory, build the prompt, run the tool loop with live
//! feedback within the time budget, then sanitise, send and persist; or end
//! in one of the error outcomes.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::feedback::{Feedback, Progress, Tee};
use super::send::Reply;
use super::{Outcome, Runtime, budget, normalize, outcome, prompt, routing, sanitize};
use crate::agent::ConversationMessage;
use crate::agent::context::ContextLimits;
use crate::agent::dispatch;
use crate::agent::tool_loop::{HookDecision, LoopError, LoopSettings, ToolLoop};
use crate::channels::{Channel, Initiator};
use crate::chat::{ChatMessage, ProviderError, Role, SamplingParams, ToolChoice};
use crate::inbox::Inbound;
use crate::tools::ToolOrigin;
use futures::future::BoxFuture;

/// The recording of a turn's start, committing while the model works.
type Started = BoxFuture<'static, Result<(), crate::inbox::InboxError>>;

impl Runtime {
    /// Phases 3–9 for a message that is not a command.
    pub(super) async fn turn(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        key: &str,
        cancel: CancellationToken,
    ) -> Outcome {
        let message = &inbound.message;
        let config = self.config();
        let chosen = self.chosen_models().get(key).cloned();
        let route = routing::route(&config, &message.content, chosen.as_deref());
        let vision = self.providers.supports_vision(&route.provider);

        let mut history = match self.sessions.load(key) {
            Ok(h) => h,
            Err(e) => {
                tracing::error!(error = %e, "cannot restore history; answering without it");
                Vec::new()
            }
        };
        // Taken up again after a restart: its first start saved the
        // question, which the prompt adds anyway.
        if inbound.late
            && history
                .last()
                .is_some_and(|m| m.role == Role::User && m.content == message.content)
        {
            history.pop();
        }
        let user_turn = ChatMessage::user(message.content.clone());
        // Recorded: appended once however often the turn is run again
        // after a restart, and committed while the turn goes on.
        let started = inbound.recorded.then(|| -> Started {
            Box::pin(
                self.inbox
                    .start(message, Some((key.to_string(), vec![user_turn.clone()]))),
            )
        });
        if !inbound.recorded
            && let Err(e) = self.sessions.append(key, &[user_turn])
        {
            tracing::error!(error = %e, "cannot save the user's message");
        }
        self.respond(
            channel,
            inbound,
            key,
            (history, route, vision, started),
            cancel,
            &config,
        )
        .await
    }

    /// Phases 5–9, once the user's turn is saved (or being saved).
    async fn respond(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        key: &str,
        (history, route, vision, started): (
            Vec<ChatMessage>,
            routing::Route,
            bool,
            Option<Started>,
        ),
        cancel: CancellationToken,
        config: &Arc<crate::config::Config>,
    ) -> Outcome {
        let message = &inbound.message;
        let scheduled = message.initiator == Initiator::Schedule;
        let said = said(message);
        if !scheduled {
            self.memory.on_user_message(&said).await;
        }
        let memory = self.memory.recall_context(&said).await;

        let history = normalize::history(history, vision);
        let user_text = if vision {
            message.content.clone()
        } else {
            normalize::strip_images(&message.content)
        };
        let tool_context = match self.tool_context.clone().with_origin(Some(ToolOrigin {
            channel: message.channel.clone(),
            reply_target: message.reply_target.clone(),
            sender: message.sender.clone(),
            thread_ts: message.thread_ts.clone(),
        })) {
            Ok(c) if scheduled => c.read_only(),
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "no workspace folder for this chat");
                return self
                    .failed(channel, inbound, key, None, &e.to_string())
                    .await;
            }
        };
        let specs = if scheduled {
            self.tools.read_only_specs()
        } else {
            self.tools.specs()
        };
        let provider = match self.providers.provider(&route).await {
            Ok(p) => p,
            Err(e) => {
                return self
                    .failed(channel, inbound, key, None, &e.to_string())
                    .await;
            }
        };
        let native = dispatch::is_native(
            config.agent.tool_dispatcher,
            provider.supports_native_tools(),
        );
        let system = prompt::system(
            config,
            &specs,
            !native,
            &message.channel,
            channel.shows(),
            &route.model,
            provider.context_window(),
        );
        let messages = prompt::messages(system, history, &user_text, memory);
        let record = inbound
            .recorded
            .then(|| (self.inbox.clone(), message.clone()));
        let feedback = Feedback::start(channel.clone(), message, record);
        let progress_tx = feedback.progress();
        let tee = Tee::new(provider, progress_tx.clone(), self.metrics().clone());
        let done = progress_tx.clone();
        let notices = progress_tx;
        let (approvals, asking, turn) = (self.approvals.clone(), channel.clone(), message.clone());
        let settings = config.clone();
        let before_tool_call =
            move |call: &crate::agent::ParsedToolCall| -> BoxFuture<'static, HookDecision> {
                let (approvals, channel, message, config) = (
                    approvals.clone(),
                    asking.clone(),
                    turn.clone(),
                    settings.clone(),
                );
                let (notices, call) = (notices.clone(), call.clone());
                Box::pin(async move {
                    let decision = approvals
                        .decide(&config.agent, &channel, &message, &call)
                        .await;
                    if matches!(decision, HookDecision::Run) {
                        let _ = notices.send(Progress::Tool {
                            name: call.name.clone(),
                            arguments: call.arguments.clone(),
                        });
                    }
                    decision
                })
            };
        let after_tool_call =
            move |call: &crate::agent::ParsedToolCall, result: &crate::agent::ToolResultMessage| {
                let _ = done.send(Progress::ToolDone {
                    name: call.name.clone(),
                    ok: !result.is_error,
                    output: result.content.clone(),
                });
            };
        let dispatcher = dispatch::choose(
            config.agent.tool_dispatcher,
            tee.inner.supports_native_tools(),
        );
        let tool_loop = ToolLoop {
            provider: &tee,
            dispatcher: dispatcher.as_ref(),
            registry: &self.tools,
            tools: &tool_context,
            before_tool_call: Some(&before_tool_call),
            after_tool_call: Some(&after_tool_call),
        };
        let settings = LoopSettings {
            max_iterations: config.agent.max_tool_iterations,
            timeout: budget::message_budget(
                config.daemon.message_timeout_secs,
                config.agent.max_tool_iterations,
            ),
            sampling: SamplingParams::from(&config.generation),
            first_tool_choice: ToolChoice::Auto,
            context: ContextLimits::default(),
            parallel_tools: config.agent.parallel_tools,
        };
        let result = tokio::select! {
            r = tool_loop.run(key, messages, &settings, cancel.clone()) => r,
            // A provider that ignores cancellation must not hold the message.
            _ = cancel.cancelled() => Err(LoopError::Cancelled),
        };
        // The reply's text, so a stream's last piece completes it.
        let shown = result.as_ref().ok().map(|done| sanitize::reply(&done.text));
        let draft = feedback.finish(shown.as_deref()).await;
        // Saved before anything below rewrites the history.
        if let Some(started) = started
            && let Err(e) = started.await
        {
            tracing::error!(error = %e, "cannot save the user's message");
        }

        match result {
            Ok(done) => {
                self.count_tool_calls(&done.history);
                if let Some(kept) = &done.rewritten_history {
                    // Context management summarised or dropped old turns:
                    // store what the model now sees, so it is not redone.
                    let mut stored = kept.clone();
                    stored.push(ChatMessage::user(message.content.clone()));
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
                if !scheduled {
                    self.memory.after_turn(&said, &text).await;
                }
                outcome
            }
            Err(LoopError::Cancelled) => {
                if let (Some(id), Some(drafts)) = (draft, channel.drafts()) {
                    let _ = drafts.cancel_draft(&message.reply_target, &id).await;
                }
                Outcome::Cancelled
            }
            Err(LoopError::Provider(ProviderError::ContextOverflow { limit, .. })) => {
                let window = tee.inner.context_window().unwrap_or(limit);
                let tokens = tee
                    .inner
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
            Err(LoopError::Provider(e)) => {
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

    async fn failed(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        key: &str,
        draft: Option<String>,
        error: &str,
    ) -> Outcome {
        tracing::warn!(error, "the provider failed");
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

/// What memory needs of `message`.
fn said(message: &crate::channels::ChannelMessage) -> crate::memory::Said {
    crate::memory::Said {
        channel: message.channel.clone(),
        chat: message.reply_target.clone(),
        thread: message.thread_ts.clone(),
        sender: message.sender.clone(),
        id: message.id.clone(),
        text: message.content.clone(),
    }
}
