//! Sessions: the history key of a message, and its turns in the SQLite
//! store (restored before a reply, appended per turn, compacted on
//! overflow). The store outlives the process, so sessions survive restarts.

use std::sync::Mutex;

use crate::channels::{ChannelMessage, Initiator};
use crate::chat::ChatMessage;
use crate::history::{HistoryError, HistoryStore};

/// Messages kept when a conversation overflows the context window.
pub const OVERFLOW_KEEP_MESSAGES: usize = 12;
/// Characters kept of each of them.
pub const OVERFLOW_KEEP_CHARS: usize = 600;

/// `{channel}_{reply_target}_{sender}`, with `_{thread_ts}` when threaded
/// and `_jobs` for the turns the sender's jobs start (kept apart from what
/// the sender said).
pub fn history_key(message: &ChannelMessage) -> String {
    let mut key = format!(
        "{}_{}_{}",
        message.channel, message.reply_target, message.sender
    );
    if let Some(thread) = &message.thread_ts {
        key.push('_');
        key.push_str(thread);
    }
    if message.initiator == Initiator::Schedule {
        key.push_str("_jobs");
    }
    key
}

/// The history store, shared by every conversation.
pub struct Sessions {
    store: Mutex<HistoryStore>,
}

impl Sessions {
    pub fn new(store: HistoryStore) -> Self {
        Self {
            store: Mutex::new(store),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HistoryStore> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn load(&self, key: &str) -> Result<Vec<ChatMessage>, HistoryError> {
        let store = self.lock();
        store.load(key, store.keep())
    }

    pub fn append(&self, key: &str, messages: &[ChatMessage]) -> Result<(), HistoryError> {
        self.lock().append(key, messages)
    }

    pub fn clear(&self, key: &str) -> Result<(), HistoryError> {
        self.lock().clear(key)
    }

    /// Takes the pictures off the newest user message (ones the model
    /// refused), so they are not shown again in every later turn.
    pub fn forget_last_pictures(&self, key: &str) -> Result<bool, HistoryError> {
        self.lock().forget_last_pictures(key)
    }

    /// The conversations whose key starts with `prefix`, newest first.
    pub fn conversations(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<crate::history::Listed>, HistoryError> {
        self.lock().conversations(prefix, limit)
    }

    /// Stores `messages` as the whole history of `key`.
    pub fn replace(&self, key: &str, messages: &[ChatMessage]) -> Result<(), HistoryError> {
        self.lock().replace(key, messages)
    }

    /// Puts `stand_in` in the place of the newest user message when it is
    /// `said` (a message that could never be read, kept out of every later
    /// prompt).
    pub fn stand_in(&self, key: &str, said: &str, stand_in: &str) -> Result<bool, HistoryError> {
        self.lock().rewrite_last_user(key, said, stand_in)
    }

    /// Keeps the last 12 messages, each cut to 600 characters.
    pub fn compact(&self, key: &str) -> Result<usize, HistoryError> {
        let mut store = self.lock();
        let all = store.load(key, store.keep())?;
        let kept: Vec<ChatMessage> = all
            .iter()
            .skip(all.len().saturating_sub(OVERFLOW_KEEP_MESSAGES))
            .map(|m| ChatMessage::new(m.role, cut(&m.content, OVERFLOW_KEEP_CHARS)))
            .collect();
        store.replace(key, &kept)?;
        Ok(kept.len())
    }
}

/// The first `max` characters of `text`, marked when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(thread: Option<&str>) -> ChannelMessage {
        ChannelMessage {
            id: "1".into(),
            sender: "u7".into(),
            reply_target: "c9".into(),
            content: "hi".into(),
            channel: "telegram".into(),
            timestamp: 0,
            thread_ts: thread.map(str::to_string),
            interruption_scope_id: None,
            initiator: Default::default(),
            asked: None,
            images: Vec::new(),
            audio: None,
            documents: Vec::new(),
        }
    }

    #[test]
    fn keys_and_compaction() {
        assert_eq!(history_key(&message(None)), "telegram_c9_u7");
        assert_eq!(history_key(&message(Some("t3"))), "telegram_c9_u7_t3");
        let dir = tempfile::tempdir().unwrap();
        let sessions =
            Sessions::new(HistoryStore::open(&HistoryStore::path_in(dir.path())).unwrap());
        for i in 0..10 {
            sessions
                .append(
                    "k",
                    &[
                        ChatMessage::user(format!("q{i} {}", "x".repeat(1000))),
                        ChatMessage::assistant(format!("r{i}")),
                    ],
                )
                .unwrap();
        }
        assert_eq!(sessions.compact("k").unwrap(), 12);
        let kept = sessions.load("k").unwrap();
        assert_eq!(kept.len(), 12);
        assert!(kept[0].content.starts_with("q4 "));
        assert!(kept.iter().all(|m| m.content.chars().count() <= 601));
    }
}
