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
//! 7. [`live`]: typing, drafts, tool notices while [`ToolLoop`] runs
//!    within the [`budget`];
//! 8. [`sanitize`], the `on_message_sending` hook, send (`send`: against
//!    the durable inbox's record when the message has one);
//! 9. the assistant turn appended; failures end as an [`Outcome`].
//!
//! [`reload`] swaps in an edited config between messages; `turn` runs
//! phases 3–9 in order.

pub mod approvals;
pub mod budget;
mod commands;
mod conclude;
pub mod fixed_prompt;
pub mod health;
mod hear;
pub mod hooks;
pub mod live;
pub mod normalize;
pub mod outcome;
pub mod prompt;
pub mod reload;
pub mod routing;
pub mod sanitize;
mod send;
pub mod session;
mod turn;
mod visible;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use tokio_util::sync::CancellationToken;

pub use health::{ListenerHealth, ListenerState, StatusBoard};
pub use hooks::{Hook, HookAction};
pub use outcome::Outcome;
pub use reload::{ConfigWatcher, Reload};
pub use routing::{ProviderSet, Route, StaticProviders};
pub use send::SendError;
pub use session::{Sessions, history_key};

use crate::channels::{Channel, ChannelError, ChannelMessage, SendMessage};
use crate::config::Config;
use crate::history::{HistoryError, HistoryStore};
use crate::inbox::{Inbound, Inbox, InboxError, State};
use crate::memory::{NoMemory, TurnMemory};
use crate::metrics::Metrics;
use crate::tools::{ToolContext, ToolRegistry};

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
    /// The documents people send, when they are read at all.
    documents: Option<Arc<crate::documents::Library>>,
    tools: Arc<ToolRegistry>,
    tool_context: ToolContext,
    hooks: Vec<Arc<dyn Hook>>,
    approvals: Arc<approvals::Approvals>,
    inbox: Arc<Inbox>,
    /// `/model` choices by history key.
    chosen: Mutex<HashMap<String, String>>,
    status: Arc<StatusBoard>,
    metrics: Arc<Metrics>,
    /// Voice notes to text, with the model loaded on first use.
    speech: crate::speech::Speech,
}

/// Why a runtime could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error(transparent)]
    Inbox(#[from] InboxError),
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
    documents: Option<Arc<crate::documents::Library>>,
    tools: Arc<ToolRegistry>,
    hooks: Vec<Arc<dyn Hook>>,
    watcher: Option<ConfigWatcher>,
    metrics: Arc<Metrics>,
}

impl RuntimeBuilder {
    pub fn new(config: Config, providers: Arc<dyn ProviderSet>, tool_context: ToolContext) -> Self {
        Self {
            config,
            providers,
            tool_context,
            channels: Vec::new(),
            memory: Arc::new(NoMemory),
            documents: None,
            tools: Arc::new(ToolRegistry::core()),
            hooks: Vec::new(),
            watcher: None,
            metrics: Arc::new(Metrics::new()),
        }
    }

    /// Where this runtime counts what it does (shared with `/metrics`).
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
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

    /// Reads the documents messages carry, and keeps them in `library`.
    pub fn documents(mut self, library: Arc<crate::documents::Library>) -> Self {
        self.documents = Some(library);
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
        let history = HistoryStore::path_in(&self.config.data_dir);
        let keep = self.config.retention.history_messages as usize;
        let store = HistoryStore::open(&history)?.keeping(keep);
        let approvals = Arc::new(approvals::Approvals::open(&history)?);
        let inbox = Arc::new(Inbox::open(&self.config.data_dir)?.keeping(keep));
        let mut channels = BTreeMap::new();
        for channel in self.channels {
            let name = channel.name().to_string();
            if channels.insert(name.clone(), channel).is_some() {
                return Err(RuntimeError::DuplicateChannel(name));
            }
        }
        Ok(Arc::new(Runtime {
            watcher: self.watcher.map(Mutex::new),
            channels,
            providers: self.providers,
            sessions: Sessions::new(store),
            memory: self.memory,
            documents: self.documents,
            tools: self.tools,
            tool_context: self.tool_context,
            hooks: self.hooks,
            approvals,
            inbox,
            chosen: Mutex::default(),
            status: Arc::new(StatusBoard::new()),
            metrics: self.metrics,
            speech: crate::speech::Speech::new(&self.config),
            config: RwLock::new(Arc::new(self.config)),
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

    /// The approval questions open now, on every channel.
    pub fn questions(&self) -> &Arc<crate::channels::asked::QuestionBoard> {
        self.approvals.board()
    }

    /// Every conversation's history.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// What this runtime counts.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The durable inbox of this runtime's data dir.
    pub fn inbox(&self) -> &Arc<Inbox> {
        &self.inbox
    }

    /// The names of the channels whose messages the inbox records.
    pub fn durable_channels(&self) -> std::collections::HashSet<String> {
        self.channels
            .values()
            .filter(|c| c.durable())
            .map(|c| c.name().to_string())
            .collect()
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

    /// Tells `message`'s channel that it ended without a reply.
    pub async fn unanswered(&self, message: &ChannelMessage) {
        if let Some(channel) = self.channels.get(&message.channel) {
            channel.unanswered(message).await;
        }
    }

    /// Records in `message`'s conversation that the user stopped its reply
    /// (`/stop`, Ctrl-C in the chat).
    pub fn note_stopped(&self, message: &ChannelMessage) {
        let key = history_key(message);
        if let Err(e) = self.sessions.append(&key, &[outcome::stopped_turn()]) {
            tracing::error!(error = %e, "cannot record the stopped reply");
        }
    }

    /// Handles one message to its end. `cancel` stops it (nothing is sent).
    pub async fn process(&self, inbound: Inbound, cancel: CancellationToken) -> Outcome {
        let recorded = inbound.message.clone();
        let message = match hooks::received(&self.hooks, inbound.message).await {
            HookAction::Continue(m) => m,
            HookAction::Cancel(why) => {
                if inbound.recorded {
                    self.inbox.finish(&recorded, State::Cancelled, Some(&why));
                }
                return Outcome::HookCancelled(why);
            }
        };
        // The record stays under the id the platform gave.
        let inbound = Inbound {
            message: ChannelMessage {
                id: recorded.id.clone(),
                channel: recorded.channel.clone(),
                ..message
            },
            ..inbound
        };
        let message = &inbound.message;
        let Some(channel) = self.channels.get(&message.channel).cloned() else {
            tracing::warn!(
                channel = message.channel,
                "a message from an unknown channel"
            );
            return Outcome::Undelivered(format!("no channel named `{}`", message.channel));
        };
        let key = history_key(message);
        if let Some(command) = crate::channels::commands::parse(&message.content) {
            if inbound.recorded
                && let Err(e) = self.inbox.start(message, None).await
            {
                tracing::error!(error = %e, "cannot record the command's start");
            }
            let text = self.answer(command, message, &key).await;
            let reply = send::Reply {
                draft: None,
                text,
                success: Outcome::Command,
                turn: None,
            };
            return self.reply(&channel, &inbound, reply).await;
        }
        let presence = channel.presence();
        if let Some(p) = presence {
            let _ = p
                .add_reaction(&message.reply_target, &message.id, RECEIVED)
                .await;
        }
        let outcome = match self.hear(&channel, inbound.clone()).await {
            Ok(heard) => self.turn(&channel, &heard, &key, cancel).await,
            Err(outcome) => outcome,
        };
        let emoji = match outcome {
            Outcome::Replied => Some(DONE),
            Outcome::Cancelled | Outcome::Superseded | Outcome::HookCancelled(_) => None,
            _ => Some(WARNING),
        };
        if let (Some(emoji), Some(p)) = (emoji, presence) {
            let _ = p
                .add_reaction(&message.reply_target, &message.id, emoji)
                .await;
        }
        outcome
    }
}
