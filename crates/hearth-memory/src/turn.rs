//! [`StoreMemory`]: the [`TurnMemory`] seam backed by the SQLite store.
//!
//! Before a reply it recalls from the sender's scope (and the group's, in a
//! group chat) and builds the capped context; when a message arrives it
//! auto-saves it; after a reply it starts consolidation in the background.

use std::sync::Arc;

use super::Said;
use super::context::{self, ContextLimits};
use super::{Category, MemoryStore, TurnMemory, consolidate, statement};
use crate::config::MemoryConfig;
use crate::providers::Provider;
use futures::future::BoxFuture;

/// Memory for the message pipeline.
pub struct StoreMemory {
    store: Arc<MemoryStore>,
    config: MemoryConfig,
    /// Where consolidation asks for facts; `None` turns it off.
    provider: Option<Arc<dyn Provider>>,
}

impl StoreMemory {
    pub fn new(store: Arc<MemoryStore>, config: MemoryConfig) -> Self {
        Self {
            store,
            config,
            provider: None,
        }
    }

    /// Consolidates turns through `provider` (when `[memory] consolidate`).
    pub fn with_consolidation(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    pub fn store(&self) -> &Arc<MemoryStore> {
        &self.store
    }

    /// The key a message is auto-saved under:
    /// `{channel}_{chat}_{thread_ts}_{sender}_{id}` (an empty thread when
    /// none). Channels give ids unique across restarts (Telegram's are
    /// unique per chat, hence the chat).
    pub fn auto_save_key(message: &Said) -> String {
        format!(
            "{}_{}_{}_{}_{}",
            message.channel,
            message.chat,
            message.thread.as_deref().unwrap_or(""),
            message.sender,
            message.id
        )
    }

    fn limits(&self) -> ContextLimits {
        ContextLimits {
            min_relevance: self.config.min_relevance,
            max_entries: self.config.context_entries,
            entry_chars: self.config.context_entry_chars,
            total_chars: self.config.context_chars,
        }
    }

    /// The memory context for `message` (see [`context::build`]). The
    /// message's own auto-saved entry is never recalled back to it.
    pub fn context_for(&self, message: &Said) -> Option<String> {
        if !self.config.enabled || self.config.context_entries == 0 {
            return None;
        }
        let own_key = Self::auto_save_key(message);
        let scopes = super::scope::of_message(message);
        let scopes: Vec<&str> = scopes.all().collect();
        let recalled: Vec<_> =
            match self
                .store
                .recall_each(&message.text, self.config.recall_limit, &scopes)
            {
                Ok(found) => found
                    .into_iter()
                    .filter(|r| r.entry.key != own_key)
                    .collect(),
                Err(e) => {
                    tracing::warn!(?scopes, "memory recall failed: {e}");
                    Vec::new()
                }
            };
        tracing::debug!(
            recalled = ?recalled.iter().map(|r| (r.entry.key.as_str(), r.score)).collect::<Vec<_>>(),
            "memory recalled for a turn"
        );
        context::build(recalled, &self.limits())
    }

    /// Auto-saves `message` when it is long enough; whether it was saved.
    pub fn save_message(&self, message: &Said) -> bool {
        let text = message.text.trim();
        if !self.config.enabled
            || !self.config.auto_save
            || text.chars().count() < self.config.auto_save_min_chars
            || statement::is_question(text)
        {
            return false;
        }
        let scope = super::scope::of_message(message).sender;
        match self.store.store_new(
            &scope,
            &Self::auto_save_key(message),
            text,
            Category::Conversation,
        ) {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!("memory auto-save failed: {e}");
                false
            }
        }
    }

    /// Extracts the facts the user stated in `message` and stores them as
    /// `core` memories in the sender's scope; how many were stored. The
    /// reply is not consulted: what the assistant said is never a fact.
    pub async fn consolidate(&self, message: &Said) -> usize {
        match &self.provider {
            Some(p) => consolidate_into(&self.store, p.as_ref(), &self.config, message).await,
            None => 0,
        }
    }
}

async fn consolidate_into(
    store: &MemoryStore,
    provider: &dyn Provider,
    config: &MemoryConfig,
    message: &Said,
) -> usize {
    let text = message.text.trim();
    if text.chars().count() < config.auto_save_min_chars
        || text.contains("[IMAGE:")
        || statement::is_question(text)
    {
        return 0;
    }
    let facts = match consolidate::extract(provider, text, config.consolidate_max_tokens).await {
        Ok(f) => f,
        Err(e) => {
            tracing::debug!("memory consolidation skipped: {e}");
            return 0;
        }
    };
    let scope = super::scope::of_message(message).sender;
    facts
        .iter()
        .filter(|fact| {
            store
                .store(&scope, &consolidate::fact_key(fact), fact, Category::Core)
                .map_err(|e| tracing::warn!("storing a consolidated fact failed: {e}"))
                .is_ok()
        })
        .count()
}

impl TurnMemory for StoreMemory {
    fn recall_context<'a>(&'a self, message: &'a Said) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move { self.context_for(message) })
    }

    fn on_user_message<'a>(&'a self, message: &'a Said) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.save_message(message);
        })
    }

    fn after_turn<'a>(&'a self, message: &'a Said, _reply: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(provider) = self.provider.clone() else {
                return;
            };
            if !self.config.enabled || !self.config.consolidate {
                return;
            }
            let store = Arc::clone(&self.store);
            let config = self.config.clone();
            let message = message.clone();
            tokio::spawn(async move {
                consolidate_into(&store, provider.as_ref(), &config, &message).await;
            });
        })
    }
}
