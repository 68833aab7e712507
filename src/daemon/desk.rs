//! The web page's desk over a running daemon: the gateway's conversations
//! from the history store, and the state of the box.

use std::sync::{Arc, Weak};

use serde_json::json;

use crate::channels::gateway::{self, Conversation, Desk, DeskError, Shown};
use crate::chat::Role;
use crate::pipeline::{ListenerState, Runtime};

/// Conversations the page lists at most.
const LISTED: usize = 200;
/// Characters of a conversation's title.
const TITLE: usize = 80;

/// Reads the runtime it was made for, while it runs (the runtime owns the
/// gateway, so the desk holds it weakly).
pub struct DaemonDesk {
    runtime: Weak<Runtime>,
    started: i64,
}

impl DaemonDesk {
    pub fn new(runtime: &Arc<Runtime>) -> Self {
        Self {
            runtime: Arc::downgrade(runtime),
            started: chrono::Utc::now().timestamp(),
        }
    }

    fn runtime(&self) -> Result<Arc<Runtime>, DeskError> {
        self.runtime
            .upgrade()
            .ok_or_else(|| DeskError("hearth is stopping".into()))
    }
}

/// The history key of gateway chat `chat` (as the gateway admits it).
fn key_of(chat: &str) -> String {
    format!("{}_{chat}_{chat}", gateway::NAME)
}

/// The chat of a gateway history key, when it is a chat's own.
fn chat_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(gateway::NAME)?.strip_prefix('_')?;
    let half = rest.len().checked_sub(1)? / 2;
    let (chat, tail) = (rest.get(..half)?, rest.get(half..)?);
    (tail.strip_prefix('_') == Some(chat) && !chat.is_empty()).then_some(chat)
}

fn shortened(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(TITLE) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

impl Desk for DaemonDesk {
    fn conversations(&self) -> Result<Vec<Conversation>, DeskError> {
        let runtime = self.runtime()?;
        let prefix = format!("{}_", gateway::NAME);
        let listed = runtime
            .sessions()
            .conversations(&prefix, LISTED)
            .map_err(|e| DeskError(e.to_string()))?;
        Ok(listed
            .into_iter()
            .filter_map(|l| {
                let chat = chat_of(&l.key)?.to_string();
                Some(Conversation {
                    title: l.first.as_deref().map(shortened).unwrap_or_default(),
                    chat,
                    messages: l.messages,
                    updated: l.updated,
                })
            })
            .collect())
    }

    fn messages(&self, chat: &str) -> Result<Vec<Shown>, DeskError> {
        let runtime = self.runtime()?;
        let messages = runtime
            .sessions()
            .load(&key_of(chat))
            .map_err(|e| DeskError(e.to_string()))?;
        Ok(messages
            .into_iter()
            .filter(|m| m.role != Role::System)
            .map(|m| Shown {
                role: m.role.as_str().to_string(),
                text: m.content,
            })
            .collect())
    }

    fn overview(&self) -> serde_json::Value {
        let Ok(runtime) = self.runtime() else {
            return json!({ "error": "hearth is stopping" });
        };
        let config = runtime.config();
        let status = runtime.status();
        let channels: Vec<_> = runtime
            .channels()
            .map(|c| {
                let health = status.listener(c.name());
                let state = match health.as_ref().map(|h| &h.state) {
                    Some(ListenerState::Running) | None => "running".to_string(),
                    Some(ListenerState::Backoff { wait_secs }) => {
                        format!("restarting in {wait_secs} s")
                    }
                    Some(ListenerState::Stopped) => "stopped".to_string(),
                };
                json!({
                    "name": c.name(),
                    "state": state,
                    "last_error": health.and_then(|h| h.last_error),
                })
            })
            .collect();
        let model = std::path::Path::new(&config.model.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        json!({
            "model": model,
            "started": self.started,
            "in_flight": status.in_flight(),
            "channels": channels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_and_its_key_round_trip_and_other_keys_are_not_chats() {
        for chat in ["a", "kitchen", "web-2026_11_27", "x_y"] {
            assert_eq!(chat_of(&key_of(chat)), Some(chat));
        }
        assert_eq!(chat_of("gateway_a_b"), None);
        assert_eq!(chat_of("gateway_a_a_jobs"), None);
        assert_eq!(chat_of("telegram_1_1"), None);
        assert_eq!(chat_of("gateway__"), None);
        assert_eq!(chat_of("gateway_"), None);
        assert_eq!(chat_of("gateway_é_é"), Some("é"));
    }

    #[test]
    fn titles_are_one_shortened_line() {
        assert_eq!(shortened("hello\nworld"), "hello");
        assert_eq!(shortened(&"é".repeat(100)).chars().count(), TITLE + 1);
    }
}
