//! Phases 3–9 of a message that is not a command: route, restore
//! history, recall memory, build the prompt, run the tool loop with live
//! feedback within the time budget, then sanitise, send and persist; or end
//! in one of the error outcomes.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use tokio::sync::mpsc;

use super::conclude::Ended;
use super::live::{Feedback, Progress, Tee};
use super::{Outcome, Runtime, budget, normalize, prompt, routing, sanitize};
use crate::agent::call_format;
use crate::agent::context::ContextLimits;
use crate::agent::tool_loop::{
    AfterToolCall, BeforeToolCall, HookDecision, LoopError, LoopSettings, ToolLoop,
};
use crate::channels::{Channel, ChannelMessage, Initiator};
use crate::chat::{ChatMessage, Role, SamplingParams, ToolChoice};
use crate::inbox::Inbound;
use crate::providers::Provider;
use crate::tools::{ToolContext, ToolOrigin};
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
        let route = routing::route(
            &config,
            &message.content,
            chosen.as_deref(),
            !message.images.is_empty(),
        );
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
        let user_turn = ChatMessage {
            images: message.images.clone(),
            ..ChatMessage::user(message.content.clone())
        };
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
        let (tool_context, provider, (messages, offered)) = match self
            .prepare(
                channel,
                inbound,
                key,
                (history, &route, vision),
                config,
                &said,
            )
            .await
        {
            Ok(prepared) => prepared,
            Err(outcome) => return outcome,
        };
        let record = inbound
            .recorded
            .then(|| (self.inbox.clone(), message.clone()));
        let feedback = Feedback::start(channel.clone(), message, record);
        let tee = Tee::new(provider, feedback.progress(), self.metrics().clone());
        let (before_tool_call, after_tool_call) =
            self.tool_hooks(channel, message, config, feedback.progress());
        let dispatcher = call_format::choose(
            config.agent.tool_dispatcher,
            tee.inner.supports_native_tools(),
        );
        let tool_loop = ToolLoop {
            provider: &tee,
            dispatcher: dispatcher.as_ref(),
            registry: &self.tools,
            tools: &tool_context,
            before_tool_call: Some(before_tool_call.as_ref()),
            after_tool_call: Some(after_tool_call.as_ref()),
        };
        let settings = loop_settings(config, message.asked.as_deref(), offered);
        let result = tokio::select! {
            r = tool_loop.run(key, messages, &settings, cancel.clone()) => r,
            // A provider that ignores cancellation must not hold the message.
            _ = cancel.cancelled() => Err(LoopError::Cancelled),
        };
        // The reply's text, so a stream's last piece completes it.
        let shown = result.as_ref().ok().map(|done| sanitize::reply(&done.text));
        let draft = feedback.finish(shown.as_deref()).await;
        // Saved before anything below rewrites the history.
        let draft = match self.saved(channel, message, started, draft).await {
            Ok(draft) => draft,
            Err(unrecorded) => return unrecorded,
        };
        let ended = Ended {
            result,
            shown,
            draft,
        };
        self.conclude(
            channel,
            inbound,
            key,
            tee.inner.as_ref(),
            ended,
            (scheduled, &said),
        )
        .await
    }

    /// Waits for the user's turn to be saved with the message's record,
    /// and gives the reply's draft back. A message with no record at all
    /// (it could not be written: a full disk) gets no reply now: its draft
    /// goes, and its listener offers it again once it can be recorded.
    async fn saved(
        &self,
        channel: &Arc<dyn Channel>,
        message: &ChannelMessage,
        started: Option<Started>,
        draft: Option<String>,
    ) -> Result<Option<String>, Outcome> {
        let Some(started) = started else {
            return Ok(draft);
        };
        let Err(e) = started.await else {
            return Ok(draft);
        };
        if self.inbox.holds(message).await {
            tracing::error!(error = %e, "cannot save the user's message");
            return Ok(draft);
        }
        tracing::warn!(error = %e, "a message without a record is answered once it has one");
        if let (Some(id), Some(drafts)) = (draft, channel.drafts()) {
            let _ = drafts.cancel_draft(&message.reply_target, &id).await;
        }
        Err(Outcome::Unrecorded)
    }

    /// Phases 5–6: memory, the tools this turn may use, the provider and
    /// the prompt; the outcome instead where one of them cannot be had.
    async fn prepare(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        key: &str,
        (history, route, vision): (Vec<ChatMessage>, &routing::Route, bool),
        config: &crate::config::Config,
        said: &crate::memory::Said,
    ) -> Result<Prepared, Outcome> {
        let message = &inbound.message;
        let scheduled = message.initiator == Initiator::Schedule;
        if !scheduled {
            self.memory.on_user_message(said).await;
        }
        let memory = self.memory.recall_context(said).await;

        let user_text = if vision {
            message.content.clone()
        } else {
            normalize::strip_images(&message.content)
        };
        let origin = origin_of(message, channel.as_ref());
        let tool_context = match self.tool_context.clone().with_origin(Some(origin)) {
            Ok(c) if scheduled => c.read_only(),
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "no workspace folder for this chat");
                return Err(self
                    .failed(channel, inbound, key, None, &e.to_string())
                    .await);
            }
        };
        let context = match self.documents_of(message, said, &tool_context).await {
            Ok(documents) => (memory, documents),
            Err(unread) => {
                let why = unread.to_string();
                return Err(self.failed_quietly(channel, inbound, key, None, &why).await);
            }
        };
        let specs = if scheduled {
            self.tools.read_only_specs()
        } else {
            self.tools.specs()
        };
        let provider = match self.providers.provider(route).await {
            Ok(p) => p,
            Err(e) => {
                return Err(self
                    .failed(channel, inbound, key, None, &e.to_string())
                    .await);
            }
        };
        let sees = provider.sees_images();
        if !message.images.is_empty() && !sees {
            return Err(self
                .failed_quietly(channel, inbound, key, None, NO_EYES)
                .await);
        }
        let history = normalize::history(history, vision, sees);
        let (specs, system) = prompt::for_turn(
            config,
            specs,
            provider.as_ref(),
            &prompt::TurnText {
                user_text: &user_text,
                history: &history,
                channel: (&message.channel, channel.shows()),
                model: &route.model,
                instructions: message
                    .asked
                    .as_ref()
                    .and_then(|a| a.instructions.as_deref()),
            },
        );
        let messages = prompt::messages(system, history, (&user_text, &message.images), context);
        let offered = specs.into_iter().map(|t| t.name).collect();
        Ok((tool_context, provider, (messages, offered)))
    }

    /// The documents this message carries, read and kept, and the turn's
    /// context from the person's documents; a scheduled turn reads none.
    async fn documents_of(
        &self,
        message: &ChannelMessage,
        said: &crate::memory::Said,
        tools: &crate::tools::ToolContext,
    ) -> Result<Option<String>, crate::documents::Unread> {
        let Some(library) = &self.documents else {
            return Ok(None);
        };
        if message.initiator == Initiator::Schedule {
            return Ok(None);
        }
        let scopes = crate::memory::scope::of_message(said);
        let sees: Vec<&str> = scopes.all().collect();
        let whose = crate::documents::Whose {
            keep_in: scopes.shared_or_own(),
            sees: &sees,
        };
        let now = chrono::Utc::now().timestamp();
        library
            .for_turn(
                &tools.sandbox,
                tools.policy.workspace(),
                whose,
                (&message.content, &message.documents),
                now,
            )
            .await
    }

    /// The tool loop's hooks: a call runs once approved, and the person
    /// hears of it (`progress`) as it starts and ends.
    fn tool_hooks(
        &self,
        channel: &Arc<dyn Channel>,
        message: &ChannelMessage,
        config: &Arc<crate::config::Config>,
        progress: mpsc::UnboundedSender<Progress>,
    ) -> (Box<BeforeToolCall>, Box<AfterToolCall>) {
        let done = progress.clone();
        let notices = progress;
        let (approvals, asking, turn) = (self.approvals.clone(), channel.clone(), message.clone());
        let (settings, tools) = (config.clone(), self.tools.clone());
        let before_tool_call =
            move |call: &crate::agent::ParsedToolCall| -> BoxFuture<'static, HookDecision> {
                let (approvals, channel, message, config) = (
                    approvals.clone(),
                    asking.clone(),
                    turn.clone(),
                    settings.clone(),
                );
                let asks_first = tools.asks_first(&call.name);
                let (notices, call) = (notices.clone(), call.clone());
                Box::pin(async move {
                    let decision = approvals
                        .decide(&config.agent, &channel, &message, &call, asks_first)
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
        (Box::new(before_tool_call), Box::new(after_tool_call))
    }
}

/// The answer to a picture sent to a model without eyes.
const NO_EYES: &str = "this model cannot see images; set `[model] mmproj` to its vision projector, or route pictures to a vision provider (`[routing] images`)";

/// The chat `message` came from, as its tools see it.
fn origin_of(message: &ChannelMessage, channel: &dyn Channel) -> ToolOrigin {
    ToolOrigin {
        channel: message.channel.clone(),
        reply_target: message.reply_target.clone(),
        sender: message.sender.clone(),
        thread_ts: message.thread_ts.clone(),
        one_credential: channel.policy().one_credential,
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

/// The tool loop's settings for this config, with what an API client
/// asked of this turn.
/// What a turn runs with: its tools' context, the provider, the prompt
/// and the names of the tools it offers.
type Prepared = (
    ToolContext,
    Arc<dyn Provider>,
    (Vec<ChatMessage>, Vec<String>),
);

fn loop_settings(
    config: &crate::config::Config,
    asked: Option<&crate::channels::TurnRequest>,
    offered: Vec<String>,
) -> LoopSettings {
    let sampling = SamplingParams::from(&config.generation);
    LoopSettings {
        max_iterations: config.agent.max_tool_iterations,
        timeout: budget::message_budget(
            config.daemon.message_timeout_secs,
            config.agent.max_tool_iterations,
        ),
        sampling: match asked {
            Some(a) => a.sampling(&sampling),
            None => sampling,
        },
        first_tool_choice: ToolChoice::Auto,
        context: ContextLimits::default(),
        parallel_tools: config.agent.parallel_tools,
        offered: Some(offered),
    }
}
