//! The SQLite history store.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use crate::chat::{ChatMessage, Role};

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history database {}: {source}; fix: check that the data dir is writable (`[data] dir`)", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Open(#[from] crate::storage::OpenError),
}

/// The turns' table (see [`super::FILE`]).
pub(super) const TABLES: &str = "
                 CREATE TABLE IF NOT EXISTS messages (
                     id INTEGER PRIMARY KEY AUTOINCREMENT,
                     conversation TEXT NOT NULL,
                     role TEXT NOT NULL,
                     content TEXT NOT NULL,
                     created INTEGER NOT NULL DEFAULT (unixepoch())
                 );
                 CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation, id);";

pub struct HistoryStore {
    pub(super) conn: Connection,
    path: PathBuf,
    /// Messages kept per conversation (`[retention] history_messages`).
    keep: usize,
}

impl HistoryStore {
    /// Opens (creating if needed) the database at `path`.
    ///
    /// WAL with `synchronous = NORMAL`: a committed turn survives a crash
    /// of hearth, and a power cut may lose the last turns but never corrupts
    /// the file. (FULL syncs every turn to disk: 12× slower per message in
    /// `benches/pipeline.rs`.)
    pub fn open(path: &Path) -> Result<Self, HistoryError> {
        let conn = crate::storage::open(path, &super::FILE)?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
            keep: super::HISTORY_LIMIT,
        })
    }

    /// Keeps the newest `messages` of each conversation (at least 2)
    /// instead of [`HISTORY_LIMIT`](super::HISTORY_LIMIT).
    pub fn keeping(mut self, messages: usize) -> Self {
        self.keep = messages.max(2);
        self
    }

    /// Messages kept per conversation.
    pub fn keep(&self) -> usize {
        self.keep
    }

    /// The database file inside a data dir.
    pub fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join("history.sqlite3")
    }

    /// The last `limit` messages of a conversation, oldest first. Starts at a
    /// user message, so a cut never leaves an assistant reply without its
    /// question.
    pub fn load(&self, conversation: &str, limit: usize) -> Result<Vec<ChatMessage>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT role, content, images FROM messages WHERE conversation = ?1 ORDER BY id DESC LIMIT ?2")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![conversation, limit as i64], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, Option<String>>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut messages = Vec::new();
        let mut seen = std::collections::HashMap::new();
        for row in rows {
            let (role, content, images) = row.map_err(|e| self.err(e))?;
            match Role::parse(&role) {
                Some(role) => messages.push(ChatMessage {
                    images: super::pictures::load(&self.conn, images.as_deref(), &mut seen)
                        .map_err(|e| self.err(e))?,
                    ..ChatMessage::new(role, content)
                }),
                None => tracing::warn!(role, "skipping a history row with an unknown role"),
            }
        }
        messages.reverse();
        let first_user = messages
            .iter()
            .position(|m| m.role == Role::User)
            .unwrap_or(messages.len());
        messages.drain(..first_user);
        Ok(messages)
    }

    /// Appends messages in one transaction, then keeps only the newest
    /// [`keep`](Self::keep) of the conversation.
    pub fn append(
        &mut self,
        conversation: &str,
        messages: &[ChatMessage],
    ) -> Result<(), HistoryError> {
        let tx = self.conn.transaction().map_err(|e| err_at(&self.path, e))?;
        append_rows(&tx, conversation, messages, self.keep).map_err(|e| err_at(&self.path, e))?;
        tx.commit().map_err(|e| err_at(&self.path, e))
    }

    /// Replaces a conversation's messages (after compaction) in one
    /// transaction: a crash leaves either the old or the new history.
    pub fn replace(
        &mut self,
        conversation: &str,
        messages: &[ChatMessage],
    ) -> Result<(), HistoryError> {
        let tx = self.conn.transaction().map_err(|e| err_at(&self.path, e))?;
        tx.execute(
            "DELETE FROM messages WHERE conversation = ?1",
            params![conversation],
        )
        .map_err(|e| err_at(&self.path, e))?;
        append_rows(&tx, conversation, messages, self.keep).map_err(|e| err_at(&self.path, e))?;
        super::pictures::forget_unshown(&tx).map_err(|e| err_at(&self.path, e))?;
        tx.commit().map_err(|e| err_at(&self.path, e))
    }

    /// Rewrites the conversation's newest user message, when it reads
    /// `from`, to `to`; whether it did.
    pub fn rewrite_last_user(
        &self,
        conversation: &str,
        from: &str,
        to: &str,
    ) -> Result<bool, HistoryError> {
        self.conn
            .execute(
                "UPDATE messages SET content = ?3 WHERE id = (SELECT MAX(id) FROM messages
                 WHERE conversation = ?1 AND role = 'user') AND content = ?2",
                params![conversation, from, to],
            )
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// Takes the pictures off the conversation's newest user message;
    /// whether it had any.
    pub fn forget_last_pictures(&mut self, conversation: &str) -> Result<bool, HistoryError> {
        let tx = self.conn.transaction().map_err(|e| err_at(&self.path, e))?;
        let changed = tx
            .execute(
                "UPDATE messages SET images = NULL WHERE id = (SELECT MAX(id) FROM messages
                 WHERE conversation = ?1 AND role = 'user') AND images IS NOT NULL",
                params![conversation],
            )
            .map_err(|e| err_at(&self.path, e))?;
        super::pictures::forget_unshown(&tx).map_err(|e| err_at(&self.path, e))?;
        tx.commit().map_err(|e| err_at(&self.path, e))?;
        Ok(changed > 0)
    }

    /// Forgets a conversation, and the pictures only it showed.
    pub fn clear(&mut self, conversation: &str) -> Result<(), HistoryError> {
        let tx = self.conn.transaction().map_err(|e| err_at(&self.path, e))?;
        tx.execute(
            "DELETE FROM messages WHERE conversation = ?1",
            params![conversation],
        )
        .map_err(|e| err_at(&self.path, e))?;
        super::pictures::forget_unshown(&tx).map_err(|e| err_at(&self.path, e))?;
        tx.commit().map_err(|e| err_at(&self.path, e))
    }

    pub(super) fn err(&self, source: rusqlite::Error) -> HistoryError {
        err_at(&self.path, source)
    }
}

/// Appends `messages` to a conversation through `conn`, which may be in
/// another store's transaction (the inbox records a reply and its turn
/// together), then keeps only the newest `keep` of it.
pub fn append_rows(
    conn: &Connection,
    conversation: &str,
    messages: &[ChatMessage],
    keep: usize,
) -> rusqlite::Result<()> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO messages (conversation, role, content, images) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for m in messages {
        let images = super::pictures::store(conn, m)?;
        insert.execute(params![conversation, m.role.as_str(), m.content, images])?;
    }
    prune(conn, conversation, keep)
}

/// Deletes all but the newest `keep` messages of a conversation, and the
/// pictures only the deleted ones showed.
fn prune(conn: &Connection, conversation: &str, keep: usize) -> rusqlite::Result<()> {
    let with_pictures = conn
        .prepare_cached(
            "DELETE FROM messages WHERE conversation = ?1 AND id NOT IN
                 (SELECT id FROM messages WHERE conversation = ?1 ORDER BY id DESC LIMIT ?2)
             RETURNING images IS NOT NULL",
        )?
        .query_map(params![conversation, keep as i64], |r| r.get::<_, bool>(0))?
        .collect::<rusqlite::Result<Vec<bool>>>()?;
    if with_pictures.contains(&true) {
        super::pictures::forget_unshown(conn)?;
    }
    Ok(())
}

fn err_at(path: &Path, source: rusqlite::Error) -> HistoryError {
    HistoryError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_loads_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = HistoryStore::path_in(dir.path());
        {
            let mut store = HistoryStore::open(&path).unwrap();
            store
                .append(
                    "a",
                    &[ChatMessage::user("q1"), ChatMessage::assistant("r1")],
                )
                .unwrap();
            store.append("b", &[ChatMessage::user("other")]).unwrap();
            store
                .append(
                    "a",
                    &[ChatMessage::user("q2"), ChatMessage::assistant("r2")],
                )
                .unwrap();
        }
        let mut store = HistoryStore::open(&path).unwrap();
        let a = store.load("a", 50).unwrap();
        assert_eq!(
            a.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
            ["q1", "r1", "q2", "r2"]
        );
        // A limit that would start at an assistant reply starts at the next question.
        let cut = store.load("a", 3).unwrap();
        assert_eq!(
            cut.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
            ["q2", "r2"]
        );
        store.clear("a").unwrap();
        assert!(store.load("a", 50).unwrap().is_empty());
        assert_eq!(store.load("b", 50).unwrap().len(), 1);
    }

    #[test]
    fn keeps_fifty_per_conversation_and_replaces_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = HistoryStore::open(&HistoryStore::path_in(dir.path())).unwrap();
        for i in 0..40 {
            store
                .append(
                    "k",
                    &[
                        ChatMessage::user(format!("q{i}")),
                        ChatMessage::assistant(format!("r{i}")),
                    ],
                )
                .unwrap();
        }
        store.append("other", &[ChatMessage::user("x")]).unwrap();
        let kept = store.load("k", 1000).unwrap();
        assert_eq!(kept.len(), crate::history::HISTORY_LIMIT);
        assert_eq!(kept[0].content, "q15");
        assert_eq!(kept.last().unwrap().content, "r39");
        store
            .replace("k", &[ChatMessage::user("a"), ChatMessage::assistant("b")])
            .unwrap();
        let now: Vec<_> = store.load("k", 50).unwrap();
        assert_eq!(now.len(), 2);
        assert_eq!(store.load("other", 50).unwrap().len(), 1);
    }

    #[test]
    fn unwritable_location_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let e = HistoryStore::open(&file.join("sub/history.sqlite3"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("[data] dir"), "{e}");
    }
}
