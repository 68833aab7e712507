//! A CLI conversation: the system prompt, its turns, and optional persistence.

use tokio_util::sync::CancellationToken;

use crate::chat::{
    ChatMessage, ChatReply, ChatRequest, FinishReason, ProviderError, Role, SamplingParams,
};
use crate::config::Config;
use crate::history::{HistoryError, HistoryStore};
use crate::providers::Provider;

pub struct Conversation {
    key: String,
    system: ChatMessage,
    turns: Vec<ChatMessage>,
    sampling: SamplingParams,
    store: Option<HistoryStore>,
}

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    History(#[from] HistoryError),
}

impl Conversation {
    /// A conversation; with a session name it is loaded from and saved to
    /// the history store under the data dir.
    pub fn open(config: &Config, session: Option<&str>) -> Result<Self, HistoryError> {
        let key = format!("cli_{}", session.unwrap_or("default"));
        let (store, turns) = match session {
            Some(_) => {
                let store = HistoryStore::open(&HistoryStore::path_in(&config.data_dir))?
                    .keeping(config.retention.history_messages as usize);
                let turns = store.load(&key, store.keep())?;
                (Some(store), turns)
            }
            None => (None, Vec::new()),
        };
        Ok(Self {
            key,
            system: ChatMessage::system(config.generation.system_prompt.clone()),
            turns,
            sampling: SamplingParams::from(&config.generation),
            store,
        })
    }

    /// Sends a user message (its text and any images) and streams the reply
    /// to `on_text`. A finished reply is recorded (and saved); a cancelled
    /// one is not. When the conversation outgrows the context window, the
    /// oldest turns are dropped and the request retried.
    pub async fn send(
        &mut self,
        provider: &dyn Provider,
        user: ChatMessage,
        cancel: CancellationToken,
        mut on_text: impl FnMut(&str),
    ) -> Result<ChatReply, TurnError> {
        let mut skip = 0;
        loop {
            let mut messages = Vec::with_capacity(self.turns.len() + 2);
            messages.push(self.system.clone());
            messages.extend(self.turns[skip..].iter().cloned());
            messages.push(user.clone());
            let request = ChatRequest::new(self.key.clone(), messages, self.sampling.clone());
            match provider
                .chat(request, cancel.clone())
                .collect_with(&mut on_text)
                .await
            {
                Ok(reply) => {
                    if reply.finish != FinishReason::Cancelled {
                        self.record(skip, user, &reply.text)?;
                    }
                    return Ok(reply);
                }
                Err(ProviderError::ContextOverflow { .. }) if skip < self.turns.len() => {
                    skip = next_user_turn(&self.turns, skip + 1);
                    tracing::info!(
                        dropped = skip,
                        "conversation too long; dropping the oldest turns"
                    );
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn record(&mut self, skip: usize, user: ChatMessage, reply: &str) -> Result<(), HistoryError> {
        self.turns.drain(..skip);
        let new = [user, ChatMessage::assistant(reply.trim())];
        if let Some(store) = &mut self.store {
            store.append(&self.key, &new)?;
        }
        self.turns.extend(new);
        Ok(())
    }
}

/// The index of the first user turn at or after `from`.
fn next_user_turn(turns: &[ChatMessage], from: usize) -> usize {
    (from..turns.len())
        .find(|&i| turns[i].role == Role::User)
        .unwrap_or(turns.len())
}
