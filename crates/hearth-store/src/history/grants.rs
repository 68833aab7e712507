//! "Always for this chat" answers, kept across restarts: the tools a
//! person let run without asking again in one chat.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, params};

use super::HistoryError;

pub(super) const SCHEMA: &str = "
                 CREATE TABLE IF NOT EXISTS grants (
                     channel TEXT NOT NULL,
                     chat TEXT NOT NULL,
                     sender TEXT NOT NULL,
                     tool TEXT NOT NULL,
                     created INTEGER NOT NULL DEFAULT (unixepoch()),
                     PRIMARY KEY (channel, chat, sender, tool)
                 );";

/// Who granted what, where.
#[derive(Debug, Clone, Copy)]
pub struct Grantee<'a> {
    pub channel: &'a str,
    pub chat: &'a str,
    pub sender: &'a str,
}

pub struct Grants {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl Grants {
    /// Opens the grants table in the history database at `path`.
    pub fn open(path: &Path) -> Result<Self, HistoryError> {
        Ok(Self {
            conn: Mutex::new(crate::storage::open(path, &super::FILE)?),
            path: path.to_path_buf(),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn err(&self, source: rusqlite::Error) -> HistoryError {
        HistoryError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    pub fn allows(&self, who: Grantee<'_>, tool: &str) -> Result<bool, HistoryError> {
        self.conn()
            .prepare_cached(
                "SELECT 1 FROM grants WHERE channel = ?1 AND chat = ?2 AND sender = ?3 AND tool = ?4",
            )
            .and_then(|mut s| s.exists(params![who.channel, who.chat, who.sender, tool]))
            .map_err(|e| self.err(e))
    }

    pub fn grant(&self, who: Grantee<'_>, tool: &str) -> Result<(), HistoryError> {
        self.conn()
            .execute(
                "INSERT OR IGNORE INTO grants (channel, chat, sender, tool) VALUES (?1, ?2, ?3, ?4)",
                params![who.channel, who.chat, who.sender, tool],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Forgets every grant `who` made in their chat; returns how many.
    pub fn revoke(&self, who: Grantee<'_>) -> Result<usize, HistoryError> {
        self.conn()
            .execute(
                "DELETE FROM grants WHERE channel = ?1 AND chat = ?2 AND sender = ?3",
                params![who.channel, who.chat, who.sender],
            )
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_per_person_chat_and_tool_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.sqlite3");
        let ada = Grantee {
            channel: "telegram",
            chat: "-100",
            sender: "1",
        };
        let bob = Grantee { sender: "2", ..ada };
        let grants = Grants::open(&path).unwrap();
        grants.grant(ada, "shell").unwrap();
        grants.grant(ada, "shell").unwrap();
        drop(grants);
        let grants = Grants::open(&path).unwrap();
        assert!(grants.allows(ada, "shell").unwrap());
        assert!(!grants.allows(ada, "file_write").unwrap());
        assert!(!grants.allows(bob, "shell").unwrap());
        let elsewhere = Grantee { chat: "1", ..ada };
        assert!(!grants.allows(elsewhere, "shell").unwrap());
        assert_eq!(grants.revoke(ada).unwrap(), 1);
        assert!(!grants.allows(ada, "shell").unwrap());
    }
}
