//! The conversations a store keeps, for a page that lists them: newest
//! first, each with its size, its last change and its first user message.

use rusqlite::params;

use super::{HistoryError, HistoryStore};

/// One conversation of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub key: String,
    pub messages: usize,
    /// When its newest message was written (Unix seconds).
    pub updated: i64,
    /// Its first user message kept, if any.
    pub first: Option<String>,
}

impl HistoryStore {
    /// The conversations whose key starts with `prefix`, the most recently
    /// changed first, at most `limit`.
    pub fn conversations(&self, prefix: &str, limit: usize) -> Result<Vec<Listed>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT conversation, COUNT(*), MAX(created),
                   (SELECT content FROM messages f WHERE f.conversation = m.conversation
                      AND f.role = 'user' ORDER BY f.id LIMIT 1)
                 FROM messages m WHERE substr(conversation, 1, length(?1)) = ?1
                 GROUP BY conversation ORDER BY MAX(id) DESC LIMIT ?2",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![prefix, limit as i64], |row| {
                Ok(Listed {
                    key: row.get(0)?,
                    messages: row.get::<_, i64>(1)? as usize,
                    updated: row.get(2)?,
                    first: row.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{ChatMessage, Role};

    #[test]
    fn conversations_are_listed_newest_first_with_their_first_question() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = HistoryStore::open(&dir.path().join("h.sqlite3")).unwrap();
        let turn = |q: &str| {
            [
                ChatMessage::new(Role::User, q),
                ChatMessage::new(Role::Assistant, "ok"),
            ]
        };
        store.append("gateway_a_a", &turn("first in a")).unwrap();
        store.append("telegram_1_1", &turn("elsewhere")).unwrap();
        store.append("gateway_b_b", &turn("first in b")).unwrap();
        store.append("gateway_a_a", &turn("second in a")).unwrap();
        let listed = store.conversations("gateway_", 10).unwrap();
        let keys: Vec<&str> = listed.iter().map(|l| l.key.as_str()).collect();
        assert_eq!(keys, ["gateway_a_a", "gateway_b_b"]);
        assert_eq!(listed[0].messages, 4);
        assert_eq!(listed[0].first.as_deref(), Some("first in a"));
        assert_eq!(store.conversations("gateway_", 1).unwrap().len(), 1);
        // `_` and `%` in the prefix are not patterns.
        assert!(store.conversations("gateway%", 10).unwrap().is_empty());
    }
}
