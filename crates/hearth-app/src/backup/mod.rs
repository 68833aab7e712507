//! `hearth backup` and `hearth restore`: a consistent copy of the data
//! folder, taken while the daemon runs, and putting it back while it does
//! not.
//!
//! - [`take`]: each database copied by SQLite itself (`VACUUM INTO`, one
//!   read transaction: what was committed when the copy began, whatever the
//!   daemon writes meanwhile), the config file, optionally the saved KV
//!   caches, and last a manifest with every file's size and SHA-256: a
//!   folder without one is no backup.
//! - [`restore`]: the backup is checked whole first (manifest, checksums,
//!   SQLite's `integrity_check`, schema versions this hearth can open),
//!   then the data folder is taken like a daemon takes it (so a running
//!   daemon refuses it), what it held is moved aside, never deleted, and
//!   the copy put in its place.

mod manifest;
pub mod restore;
mod schema_objects;
pub mod take;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use crate::storage::Schema;

pub use manifest::{Entry, Manifest};

/// The databases of a data folder, by file name.
pub const DATABASES: [(&str, &Schema); 5] = [
    ("history.sqlite3", &crate::history::FILE),
    ("memory.sqlite3", &crate::memory::FILE),
    ("scheduler.sqlite3", &crate::scheduler::FILE),
    ("lms.sqlite3", &crate::lms::FILE),
    ("documents.sqlite3", &crate::documents::FILE),
];

/// The saved KV caches' folder in the data folder.
pub const KV_DIR: &str = "kv";
/// The config's name in a backup.
pub const CONFIG: &str = "config.toml";

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot copy the database {}: {source}; fix: check the space left where the backup goes", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{} is not empty; fix: name a new folder for the backup", .0.display())]
    NotEmpty(PathBuf),
    #[error("{} cannot hold a backup: {why}; fix: name a new folder, or one of your own that only you may write in", .path.display())]
    Unsafe { path: PathBuf, why: String },
    #[error("{} is no hearth backup ({reason}); fix: name the folder `hearth backup` wrote", .path.display())]
    NotABackup { path: PathBuf, reason: String },
    #[error(
        "the backup's {file} is damaged ({reason}); nothing was restored; fix: restore another backup"
    )]
    Damaged { file: String, reason: String },
    #[error(
        "the backup's {file} was written by a newer hearth (schema version {found}; this hearth knows up to {known}); nothing was restored; fix: restore it with that newer hearth"
    )]
    Newer {
        file: String,
        found: u32,
        known: u32,
    },
    #[error(transparent)]
    Locked(Box<crate::lock::LockError>),
    #[error(transparent)]
    Open(Box<crate::storage::OpenError>),
}

impl From<crate::lock::LockError> for BackupError {
    fn from(e: crate::lock::LockError) -> Self {
        Self::Locked(Box::new(e))
    }
}

impl From<crate::storage::OpenError> for BackupError {
    fn from(e: crate::storage::OpenError) -> Self {
        Self::Open(Box::new(e))
    }
}

/// An I/O error about `path`.
fn io(path: &std::path::Path) -> impl Fn(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    }
}
