//! The gateway's conversations for the page, from the history store.

use crate::channels::gateway::{self, Conversation, DeskError, Shown};
use crate::chat::Role;
use crate::pipeline::Runtime;

/// Conversations the page lists at most.
const LISTED: usize = 200;
/// Characters of a conversation's title.
const TITLE: usize = 80;

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

/// The gateway's conversations, the most recent first.
pub fn list(runtime: &Runtime) -> Result<Vec<Conversation>, DeskError> {
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

/// The messages kept of gateway chat `chat`, oldest first.
pub fn messages(runtime: &Runtime, chat: &str) -> Result<Vec<Shown>, DeskError> {
    let messages = runtime
        .sessions()
        .load(&key_of(chat))
        .map_err(|e| DeskError(e.to_string()))?;
    Ok(messages
        .into_iter()
        .filter(|m| m.role != Role::System)
        .map(|m| Shown {
            role: m.role.as_str().to_string(),
            pictures: m.images.len(),
            text: m.content,
        })
        .collect())
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
