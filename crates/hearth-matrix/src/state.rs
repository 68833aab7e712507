//! What the channel keeps between runs in its folder (0700, files 0600):
//! the login session (`session.json`), the SDK's stores with the
//! encryption keys (`store/`), and the sync token (`sync_token`).
//!
//! The sync token is hearth's own, not the SDK's: it moves only after every
//! message of a sync was recorded in the durable inbox (or ignored), so a
//! crash in between syncs from the older token again and the inbox
//! recognises what it already holds.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use hearth_core::file_modes::{make_private_dir, replace_file};

use matrix_sdk::authentication::matrix::MatrixSession;

use super::MatrixError;

pub struct State {
    dir: PathBuf,
}

impl State {
    pub fn open(dir: &Path) -> Result<Self, MatrixError> {
        for d in [dir.to_path_buf(), dir.join("store")] {
            make_private_dir(&d).map_err(|e| state_error(&d, e))?;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    pub fn store_dir(&self) -> PathBuf {
        self.dir.join("store")
    }

    pub fn session_path(&self) -> PathBuf {
        self.dir.join("session.json")
    }

    /// The saved session; `None` before the first login. An unreadable
    /// file is an error: logging in again would make a new device whose
    /// keys no one has verified.
    pub fn session(&self) -> Result<Option<MatrixSession>, MatrixError> {
        let path = self.session_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(state_error(&path, e)),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| MatrixError::Session {
                path: path.display().to_string(),
                why: e.to_string(),
            })
    }

    pub fn save_session(&self, session: &MatrixSession) -> Result<(), MatrixError> {
        let text = serde_json::to_string(session).unwrap_or_default();
        write_private(&self.session_path(), text.as_bytes())
    }

    /// The sync token of the last sync whose messages are all recorded.
    pub fn sync_token(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join("sync_token"))
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    }

    pub fn save_sync_token(&self, token: &str) -> Result<(), MatrixError> {
        write_private(&self.dir.join("sync_token"), token.as_bytes())
    }

    /// Makes every file the SDK wrote in the store private.
    pub fn tighten(&self) {
        let Ok(entries) = std::fs::read_dir(self.store_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let _ = std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600));
        }
    }
}

/// One line for `hearth status`: whether a session is kept and since when
/// the sync token moved.
pub fn describe(dir: &Path) -> String {
    let session = std::fs::read_to_string(dir.join("session.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<MatrixSession>(&t).ok());
    let Some(session) = session else {
        return "not logged in yet".into();
    };
    let synced = std::fs::metadata(dir.join("sync_token"))
        .and_then(|m| m.modified())
        .ok()
        .map(|t| {
            chrono::DateTime::<chrono::Utc>::from(t)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string()
        });
    match synced {
        Some(at) => format!(
            "logged in as {} (device {}), last synced {at}",
            session.meta.user_id, session.meta.device_id
        ),
        None => format!(
            "logged in as {} (device {}), not synced yet",
            session.meta.user_id, session.meta.device_id
        ),
    }
}

/// Writes `bytes` to `path` whole or not at all, readable by the owner only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), MatrixError> {
    replace_file(path, bytes, 0o600).map_err(|e| state_error(path, e))
}

fn state_error(path: &Path, source: std::io::Error) -> MatrixError {
    MatrixError::State {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_folder_and_its_files_are_the_owners_alone() {
        let dir = tempfile::tempdir().unwrap();
        let state = State::open(&dir.path().join("matrix")).unwrap();
        state.save_sync_token("s72594_4483_1934").unwrap();
        assert_eq!(state.sync_token().as_deref(), Some("s72594_4483_1934"));
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.path().join("matrix")), 0o700);
        assert_eq!(mode(dir.path().join("matrix/sync_token")), 0o600);
        assert!(state.session().unwrap().is_none(), "no session yet");
        std::fs::write(state.session_path(), "{not json").unwrap();
        assert!(
            matches!(state.session(), Err(MatrixError::Session { .. })),
            "a damaged session is said, not replaced by a new device"
        );
    }
}
