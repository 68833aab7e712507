//! What the channel keeps between runs, in its folder (files 0600): the
//! mailbox cursor (the last UID handed to the inbox, and the mailbox's
//! UIDVALIDITY it belongs to), and the thread of each mail taken in, so
//! that its answer, sent after a restart too, lands in that thread.
//!
//! The cursor moves only after a mail is recorded in the durable inbox (or
//! ignored), so a crash between the two fetches the mail again and the
//! inbox recognises it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::EmailError;

/// Threads kept: the newest this many mails taken in.
const THREADS_KEPT: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub uid_validity: u32,
    pub last_uid: u32,
}

/// How to answer one mail: its id, its thread and subject, its sender.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    pub message_id: Option<String>,
    pub references: Vec<String>,
    pub subject: String,
}

pub struct State {
    dir: PathBuf,
}

impl State {
    pub fn open(dir: &Path) -> Result<Self, EmailError> {
        let threads = dir.join("threads");
        std::fs::create_dir_all(&threads).map_err(|e| state_error(&threads, e))?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// The saved cursor; `None` on the first run (or an unreadable file,
    /// which is said).
    pub fn cursor(&self) -> Option<Cursor> {
        let path = self.dir.join("cursor.json");
        let text = std::fs::read_to_string(&path).ok()?;
        match serde_json::from_str(&text) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(
                    "email: {} is unreadable ({e}); starting as on a first run",
                    path.display()
                );
                None
            }
        }
    }

    pub fn save_cursor(&self, cursor: Cursor) -> Result<(), EmailError> {
        let text = serde_json::to_string(&cursor).unwrap_or_default();
        write_private(&self.dir.join("cursor.json"), text.as_bytes())
    }

    /// Keeps `thread` for the mail the inbox knows as `id`.
    pub fn keep_thread(&self, id: &str, thread: &Thread) -> Result<(), EmailError> {
        let text = serde_json::to_string(thread).unwrap_or_default();
        write_private(&self.thread_path(id), text.as_bytes())?;
        self.prune();
        Ok(())
    }

    pub fn thread(&self, id: &str) -> Option<Thread> {
        let text = std::fs::read_to_string(self.thread_path(id)).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn thread_path(&self, id: &str) -> PathBuf {
        // Ids are the channel's own (`VALIDITY.UID`); anything else is
        // kept out of the path.
        let name: String = id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
            .collect();
        self.dir
            .join("threads")
            .join(format!("{}.json", name.trim_start_matches('.')))
    }

    /// Drops the oldest threads beyond [`THREADS_KEPT`].
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(self.dir.join("threads")) else {
            return;
        };
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if files.len() <= THREADS_KEPT {
            return;
        }
        files.sort();
        for (_, path) in &files[..files.len() - THREADS_KEPT] {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// What `hearth status` says of the folder `dir`, read without writing:
/// where the mailbox was left and how many threads are kept.
pub fn describe(dir: &Path) -> String {
    let threads = std::fs::read_dir(dir.join("threads"))
        .map(|e| {
            e.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0);
    let state = State {
        dir: dir.to_path_buf(),
    };
    match state.cursor() {
        Some(c) => format!(
            "read up to UID {} (UIDVALIDITY {}), the threads of {threads} mails kept for their answers",
            c.last_uid, c.uid_validity
        ),
        None => {
            "not read yet: on its first look, the mail already there is taken as old".to_string()
        }
    }
}

/// Writes `bytes` to `path` whole or not at all, readable by the owner only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), EmailError> {
    hearth_core::file_modes::replace_file(path, bytes, 0o600).map_err(|e| state_error(path, e))
}

fn state_error(path: &Path, source: std::io::Error) -> EmailError {
    EmailError::State {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_cursor_and_threads_survive_a_reopen_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let state = State::open(dir.path()).unwrap();
        assert_eq!(state.cursor(), None);
        let c = Cursor {
            uid_validity: 7,
            last_uid: 500,
        };
        state.save_cursor(c).unwrap();
        let t = Thread {
            message_id: Some("a@b".into()),
            references: vec!["z@b".into()],
            subject: "hi".into(),
        };
        state.keep_thread("7.501", &t).unwrap();
        state.keep_thread("../../etc/passwd", &t).unwrap();
        assert!(dir.path().join("threads/etcpasswd.json").exists());
        let again = State::open(dir.path()).unwrap();
        assert_eq!(again.cursor(), Some(c));
        assert_eq!(again.thread("7.501"), Some(t));
        let mode = std::fs::metadata(dir.path().join("cursor.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(dir.path().join("cursor.json"), "{broken").unwrap();
        assert_eq!(again.cursor(), None);
    }
}
