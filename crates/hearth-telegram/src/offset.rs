//! The confirmed update offset, kept on disk so that no update is handled
//! twice and none is lost across a restart of the daemon.
//!
//! Telegram forgets an update once `getUpdates` is called with a higher
//! offset. The channel raises the offset only after an update has been pushed
//! onto the bus, and writes it here before asking for more; a restart resumes
//! from the file.

use std::path::{Path, PathBuf};

use super::error::TelegramError;

#[derive(Debug)]
pub struct OffsetStore {
    path: PathBuf,
    /// The next update id wanted (the last handled one plus one); 0 at first.
    next: i64,
}

impl OffsetStore {
    /// Opens `<dir>/offset`; a missing file starts from 0, an unreadable one
    /// is an error (never silently reset, which would replay old updates).
    pub fn open(dir: &Path) -> Result<Self, TelegramError> {
        let path = dir.join("offset");
        let state = |source| TelegramError::State {
            path: path.clone(),
            source,
        };
        hearth_core::file_modes::make_private_dir(dir).map_err(state)?;
        let next = match std::fs::read_to_string(&path) {
            Ok(text) => text.trim().parse::<i64>().map_err(|e| {
                state(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("not an update offset ({e}); delete the file to start over"),
                ))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(state(e)),
        };
        Ok(Self { path, next })
    }

    pub fn next(&self) -> i64 {
        self.next
    }

    /// Records that update `id` is on the bus: the next poll starts after it.
    pub fn confirm(&mut self, id: i64) -> std::io::Result<()> {
        if id < self.next {
            return Ok(());
        }
        // On disk before the next poll tells Telegram to forget the update:
        // a power cut must not leave an empty file, which `open` refuses.
        hearth_core::file_modes::replace_file(
            &self.path,
            format!("{}\n", id + 1).as_bytes(),
            0o600,
        )?;
        self.next = id + 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmed_offsets_survive_a_reopen_and_never_go_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = OffsetStore::open(dir.path()).unwrap();
        assert_eq!(s.next(), 0);
        s.confirm(10).unwrap();
        s.confirm(4).unwrap();
        assert_eq!(s.next(), 11);
        assert_eq!(OffsetStore::open(dir.path()).unwrap().next(), 11);
    }

    #[test]
    fn a_garbled_file_is_an_error_not_a_reset() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("offset"), "eleven").unwrap();
        let e = OffsetStore::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("offset"), "{e}");
    }
}
