//! The per-message pipeline: one message in, at most one reply out.
//!
//! Phases, one module each, in the order [`Runtime::process`] runs them:
//!
//! 1. [`hooks`]: `on_message_received` may change or stop the message;
//! 2. [`commands`]: `/new`, `/model`, `/models`, `/stop`, `/status`, `/help`;
//! 3. [`routing`]: keyword rules → hint → provider and model;
//! 4. [`session`]: the history key, history restored from SQLite;
//! 5. [`normalize`]: merged turns, stale tool results and images out;
//! 6. memory context (the [`TurnMemory`] seam) and [`prompt`];
//! 7. [`feedback`]: typing, drafts, tool notices while [`ToolLoop`] runs
//!    within the [`budget`];
//! 8. [`sanitize`], the `on_message_sending` hook, send;
//! 9. the assistant turn appended; failures end as an [`Outcome`].
//!
//! [`reload`] swaps in an edited config between messages.

pub mod budget;
pub mod commands;
pub mod feedback;
pub mod hooks;
pub mod normalize;
pub mod outcome;
pub mod prompt;
pub mod reload;
pub mod routing;
pub mod sanitize;
pub mod session;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use hooks::{Hook, HookAction};
pub use outcome::Outcome;
pub use reload::{ConfigWatcher, Reload};
pub use routing::{ProviderSet, Route, StaticProviders};
pub use session::{Sessions, history_key};

use crate::agent::dispatch::XmlToolDispatcher;
use crate::agent::tool_loop::{HookDecision, LoopError, LoopSettings, ToolLoop};
use crate::channels::{Channel, ChannelError, ChannelMessage, SendMessage};
use crate::config::Config;
use crate::dispatch::StatusBoard;
use crate::history::{HistoryError, HistoryStore};
use crate::memory::{NoMemory, TurnMemory};
use crate::providers::{ChatMessage, ProviderError, SamplingParams, ToolChoice};
use crate::tools::{ToolContext, ToolOrigin, ToolRegistry};
use feedback::{Feedback, Progress, Tee};

const RECEIVED: &str = "👀";
const DONE: &str = "✅";
const WARNING: &str = "⚠️";

/// Everything the pipeline needs, shared by every message in flight.
pub struct Runtime {
    config: RwLock<Arc<Config>>,
    watcher: Option<Mutex<ConfigWatcher>>,
    channels: BTreeMap<String, Arc<dyn Channel>>,
    providers: Arc<dyn ProviderSet>,
    sessions: Sessions,
    memory: Arc<dyn TurnMemory>,
    tools: Arc<ToolRegistry>,
    tool_context: ToolContext,
    hooks: Vec<Arc<dyn Hook>>,
    /// `/model` choices by history key.
    chosen: Mutex<HashMap<String, String>>,
    status: Arc<StatusBoard>,
}

/// Why a runtime could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error("two channels are named `{0}`; channel names must be unique")]
    DuplicateChannel(String),
}

/// Builds a [`Runtime`]: the config, the providers and a base tool context
/// are required; channels, memory, tools, hooks and hot reload are added.
pub struct RuntimeBuilder {
    config: Config,
    providers: Arc<dyn ProviderSet>,
    tool_context: ToolContext,
    channels: Vec<Arc<dyn Channel>>,
    memory: Arc<dyn TurnMemory>,
    tools: Arc<ToolRegistry>,
    hooks: Vec<Arc<dyn Hook>>,
    watcher: Option<ConfigWatcher>,
}

impl RuntimeBuilder {
    pub fn new(config: Config, providers: Arc<dyn ProviderSet>, tool_context: ToolContext) -> Self {
        Self {
            config,
            providers,
            tool_context,
            channels: Vec::new(),
            memory: Arc::new(NoMemory),
            tools: Arc::new(ToolRegistry::core()),
            hooks: Vec::new(),
            watcher: None,
        }
    }

    pub fn channel(mut self, channel: Arc<dyn Channel>) -> Self {
        self.channels.push(channel);
        self
    }

    pub fn channels(mut self, channels: impl IntoIterator<Item = Arc<dyn Channel>>) -> Self {
        self.channels.extend(channels);
        self
    }

    pub fn memory(mut self, memory: Arc<dyn TurnMemory>) -> Self {
        self.memory = memory;
        self
    }

    pub fn tools(mut self, tools: Arc<ToolRegistry>) -> Self {
        self.tools = tools;
        self
    }

    pub fn hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Re-reads this config file when it changes (see [`reload`]).
    pub fn watch(mut self, watcher: ConfigWatcher) -> Self {
        self.watcher = Some(watcher);
        self
    }

    /// Opens the history store under the config's data dir.
    pub fn build(self) -> Result<Arc<Runtime>, RuntimeError> {
        let store = HistoryStore::open(&HistoryStore::path_in(&self.config.data_dir))?;
        let mut channels = BTreeMap::new();
        for channel in self.channels {
            let name = channel.name().to_string();
            if channels.insert(name.clone(), channel).is_some() {
                return Err(RuntimeError::DuplicateChannel(name));
            }
        }
        Ok(Arc::new(Runtime {
            config: RwLock::new(Arc::new(self.config)),
            watcher: self.watcher.map(Mutex::new),
            channels,
            providers: self.providers,
            sessions: Sessions::new(store),
            memory: self.memory,
            tools: self.tools,
            tool_context: self.tool_context,
            hooks: self.hooks,
            chosen: Mutex::default(),
            status: Arc::new(StatusBoard::new()),
        }))
    }
}

impl Runtime {
    /// The config in force now.
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn status(&self) -> &Arc<StatusBoard> {
        &self.status
    }

    pub fn channel(&self, name: &str) -> Option<&Arc<dyn Channel>> {
        self.channels.get(name)
    }

    pub fn channels(&self) -> impl Iterator<Item = &Arc<dyn Channel>> {
        self.channels.values()
    }

    fn chosen_models(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.chosen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies an edited config file, if there is one and it is valid.
    /// Returns whether a new config took effect.
    pub fn reload_if_changed(&self) -> bool {
        let Some(watcher) = &self.watcher else {
            return false;
        };
        let result = watcher.lock().unwrap_or_else(|e| e.into_inner()).check();
        match result {
            Reload::Unchanged => false,
            Reload::Changed(config) => {
                tracing::info!("config file changed; new settings apply from the next message");
                *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(*config);
                true
            }
            Reload::Invalid(e) => {
                tracing::warn!(error = %e, "the edited config is invalid; keeping the previous one");
                false
            }
        }
    }

    /// Sends `message` through `channel` after the sending hooks. `Ok(false)`:
    /// a hook cancelled it.
    pub async fn deliver(&self, channel: &str, message: SendMessage) -> Result<bool, ChannelError> {
        let Some(target) = self.channels.get(channel) else {
            return Err(ChannelError::Other(format!("no channel named `{channel}`")));
        };
        match hooks::sending(&self.hooks, message).await {
            HookAction::Continue(m) => target.send(&m).await.map(|()| true),
            HookAction::Cancel(why) => {
                tracing::info!(why, "a hook cancelled an outgoing message");
                Ok(false)
            }
        }
    }

    /// Handles one message to its end. `cancel` stops it (nothing is sent).
    pub async fn process(&self, message: ChannelMessage, cancel: CancellationToken) -> Outcome {
        let message = match hooks::received(&self.hooks, message).await {
            HookAction::Continue(m) => m,
            HookAction::Cancel(why) => return Outcome::HookCancelled(why),
        };
        let Some(channel) = self.channels.get(&message.channel).cloned() else {
            tracing::warn!(
                channel = message.channel,
                "a message from an unknown channel"
            );
            return Outcome::Undelivered(format!("no channel named `{}`", message.channel));
        };
        let key = history_key(&message);
        if let Some(command) = commands::parse(&message.content) {
            let answer = self.answer(command, &message, &key);
            return self
                .reply(&channel, &message, None, answer, Outcome::Command)
                .await;
        }
        let _ = channel
            .add_reaction(&message.reply_target, &message.id, RECEIVED)
            .await;
        let outcome = self.turn(&channel, &message, &key, cancel).await;
        let emoji = match outcome {
            Outcome::Replied => Some(DONE),
            Outcome::Cancelled | Outcome::Superseded | Outcome::HookCancelled(_) => None,
            _ => Some(WARNING),
        };
        if let Some(emoji) = emoji {
            let _ = channel
                .add_reaction(&message.reply_target, &message.id, emoji)
                .await;
        }
        outcome
    }

    /// Phases 3–9 for a message that is not a command.
    async fn turn(
        &self,
        channel: &Arc<dyn Channel>,
        message: &ChannelMessage,
        key: &str,
        cancel: CancellationToken,
    ) -> Outcome {
        let config = self.config();
        let chosen = self.chosen_models().get(key).cloned();
        let route = routing::route(&config, &message.content, chosen.as_deref());
        let vision = self.providers.supports_vision(&route.provider);

        let history = match self.sessions.load(key) {
            Ok(h) => h,
            Err(e) => {
                tracing::error!(error = %e, "cannot restore history; answering without it");
                Vec::new()
            }
        };
        let user_turn = ChatMessage::user(message.content.clone());
        if let Err(e) = self.sessions.append(key, &[user_turn]) {
            tracing::error!(error = %e, "cannot save the user's message");
        }
        self.memory.on_user_message(message).await;
        let memory = self.memory.recall_context(message).await;

        let history = normalize::history(history, vision);
        let user_text = if vision {
            message.content.clone()
        } else {
            normalize::strip_images(&message.content)
        };
        let specs = self.tools.specs();
        let system = prompt::system(&config, &specs, &message.channel, &route.model);
        let messages = prompt::messages(system, history, &user_text, memory);

        let provider = match self.providers.provider(&route).await {
            Ok(p) => p,
            Err(e) => {
                return self
                    .failed(channel, message, key, None, &e.to_string())
                    .await;
            }
        };
        let (progress_tx, progress_rx) = mpsc::unbounded_channel();
        let feedback = Feedback::start(channel.clone(), message, progress_rx);
        let tee = Tee {
            inner: provider,
            progress: progress_tx.clone(),
        };
        let notices = progress_tx;
        let before_tool_call = move |call: &crate::agent::ParsedToolCall| {
            let _ = notices.send(Progress::Tool(call.name.clone()));
            HookDecision::Run
        };
        let tool_context = ToolContext {
            policy: self.tool_context.policy.clone(),
            scrubber: self.tool_context.scrubber.clone(),
            timeout: self.tool_context.timeout,
            output_cap: self.tool_context.output_cap,
            origin: Some(ToolOrigin {
                channel: message.channel.clone(),
                reply_target: message.reply_target.clone(),
                sender: message.sender.clone(),
                thread_ts: message.thread_ts.clone(),
            }),
        };
        let tool_loop = ToolLoop {
            provider: &tee,
            dispatcher: &XmlToolDispatcher,
            registry: &self.tools,
            tools: &tool_context,
            before_tool_call: Some(&before_tool_call),
        };
        let settings = LoopSettings {
            max_iterations: config.agent.max_tool_iterations,
            timeout: budget::message_budget(
                config.daemon.message_timeout_secs,
                config.agent.max_tool_iterations,
            ),
            sampling: SamplingParams::from(&config.generation),
            first_tool_choice: ToolChoice::Auto,
        };
        let result = tokio::select! {
            r = tool_loop.run(key, messages, &settings, cancel.clone()) => r,
            // A provider that ignores cancellation must not hold the message.
            _ = cancel.cancelled() => Err(LoopError::Cancelled),
        };
        let draft = feedback.finish().await;

        match result {
            Ok(done) => {
                let text = sanitize::reply(&done.text);
                let text = if text.is_empty() {
                    "I have no answer to that.".to_string()
                } else {
                    text
                };
                if let Err(e) = self
                    .sessions
                    .append(key, &[ChatMessage::assistant(text.clone())])
                {
                    tracing::error!(error = %e, "cannot save the reply");
                }
                let outcome = self
                    .reply(channel, message, draft, text.clone(), Outcome::Replied)
                    .await;
                self.memory.after_turn(message, &text).await;
                outcome
            }
            Err(LoopError::Cancelled) => {
                if let Some(id) = draft {
                    let _ = channel.cancel_draft(&message.reply_target, &id).await;
                }
                Outcome::Cancelled
            }
            Err(LoopError::Provider(ProviderError::ContextOverflow { .. })) => {
                let kept = self.sessions.compact(key).unwrap_or_else(|e| {
                    tracing::error!(error = %e, "cannot compact history");
                    0
                });
                self.reply(
                    channel,
                    message,
                    draft,
                    outcome::overflow_notice(kept),
                    Outcome::Overflow,
                )
                .await
            }
            Err(LoopError::Provider(e)) => {
                self.failed(channel, message, key, draft, &e.to_string())
                    .await
            }
            Err(LoopError::TimedOut(secs)) => {
                let _ = self.sessions.append(key, &[outcome::timed_out_turn(secs)]);
                self.reply(
                    channel,
                    message,
                    draft,
                    outcome::timed_out_notice(secs),
                    Outcome::TimedOut,
                )
                .await
            }
        }
    }

    async fn failed(
        &self,
        channel: &Arc<dyn Channel>,
        message: &ChannelMessage,
        key: &str,
        draft: Option<String>,
        error: &str,
    ) -> Outcome {
        tracing::warn!(error, "the provider failed");
        let detail = sanitize::error(error, &self.tool_context.scrubber);
        let _ = self.sessions.append(key, &[outcome::failed_turn(&detail)]);
        self.reply(
            channel,
            message,
            draft,
            outcome::failed_notice(&detail),
            Outcome::Failed,
        )
        .await
    }

    /// Sends `text` as the reply to `message` (into the draft when there is
    /// one), after the sending hooks; `success` is the outcome if it arrives.
    async fn reply(
        &self,
        channel: &Arc<dyn Channel>,
        message: &ChannelMessage,
        draft: Option<String>,
        text: String,
        success: Outcome,
    ) -> Outcome {
        let out = match hooks::sending(&self.hooks, SendMessage::reply_to(message, text)).await {
            HookAction::Continue(m) => m,
            HookAction::Cancel(why) => {
                if let Some(id) = &draft {
                    let _ = channel.cancel_draft(&message.reply_target, id).await;
                }
                return Outcome::HookCancelled(why);
            }
        };
        let sent = match &draft {
            Some(id) => match channel.finalize_draft(&out.recipient, id, &out).await {
                Ok(()) => Ok(()),
                Err(_) => channel.send(&out).await,
            },
            None => channel.send(&out).await,
        };
        match sent {
            Ok(()) => success,
            Err(e) => {
                tracing::warn!(error = %e, channel = channel.name(), "cannot deliver a reply");
                Outcome::Undelivered(e.to_string())
            }
        }
    }
}
