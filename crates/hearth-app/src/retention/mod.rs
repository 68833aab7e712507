//! Keeping every store within `[retention]`, and showing how full each is.
//!
//! - [`sweep`]: forgets what is past its limit in every database of a data
//!   folder, each in one transaction; the daemon sweeps when it starts and
//!   every [`SWEEP_EVERY`] after, and its inbox forgets the ids of the
//!   records deleted, so nothing it holds in memory grows either. Free pages are reused by later writes,
//!   so a file stops growing once forgetting keeps pace with writing.
//! - [`usage`]: each store's size on disk and what it holds, beside its
//!   limit, for `hearth status` and `/status`.
//! - KV caches are kept within `[engine] disk_cache_mb` by the engine as
//!   it saves; [`usage`] shows the folder against that cap.

mod usage;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

use crate::config::RetentionConfig;
use crate::storage::{OpenError, Schema};

pub use usage::{Usage, render, usage};

/// How often the daemon sweeps.
pub const SWEEP_EVERY: Duration = Duration::from_secs(3_600);

#[derive(Debug, thiserror::Error)]
pub enum RetentionError {
    #[error(transparent)]
    Open(Box<OpenError>),
    #[error("cannot forget old records in {}: {source}; fix: check the space left on its disk", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

impl From<OpenError> for RetentionError {
    fn from(e: OpenError) -> Self {
        Self::Open(Box::new(e))
    }
}

/// What one sweep forgot, in rows, by store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    pub history: usize,
    pub memory: usize,
    pub inbox: usize,
    pub lms: usize,
    pub documents: usize,
    /// The inbox records forgotten, by channel and id (a running inbox
    /// forgets them too: [`Inbox::forget_known`](crate::inbox::Inbox::forget_known)).
    pub inbox_keys: Vec<(String, String)>,
}

impl Swept {
    pub fn total(&self) -> usize {
        self.history + self.memory + self.inbox + self.lms + self.documents
    }
}

/// Forgets, in every database under `data_dir` that exists, what
/// `limits` no longer keep at `now` (Unix seconds).
pub fn sweep(data_dir: &Path, limits: &RetentionConfig, now: i64) -> Result<Swept, RetentionError> {
    let mut swept = Swept::default();
    in_file(data_dir, "history.sqlite3", &crate::history::FILE, |c| {
        swept.history = crate::history::forget(
            c,
            limits.history_messages as usize,
            limits.history_days,
            now,
        )?;
        swept.inbox_keys = crate::inbox::forget_finished(c, limits.inbox_days, now)?;
        swept.inbox = swept.inbox_keys.len();
        Ok(())
    })?;
    in_file(data_dir, "memory.sqlite3", &crate::memory::FILE, |c| {
        swept.memory = crate::memory::forget_beyond(c, limits.memory_entries)?;
        Ok(())
    })?;
    in_file(data_dir, "lms.sqlite3", &crate::lms::FILE, |c| {
        swept.lms = crate::lms::forget(c, limits.lms_days, now)?;
        Ok(())
    })?;
    in_file(
        data_dir,
        "documents.sqlite3",
        &crate::documents::FILE,
        |c| {
            let max = u64::from(limits.documents_mb) << 20;
            swept.documents = crate::documents::forget_beyond(c, max)?;
            Ok(())
        },
    )?;
    Ok(swept)
}

/// Runs `forget` in one transaction on the database `name`, if it exists.
fn in_file(
    data_dir: &Path,
    name: &str,
    schema: &Schema,
    forget: impl FnOnce(&Connection) -> rusqlite::Result<()>,
) -> Result<(), RetentionError> {
    let path = data_dir.join(name);
    if !path.exists() {
        return Ok(());
    }
    let mut conn = crate::storage::open(&path, schema)?;
    let sqlite = |source| RetentionError::Sqlite {
        path: path.clone(),
        source,
    };
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sqlite)?;
    forget(&tx).map_err(sqlite)?;
    tx.commit().map_err(sqlite)
}

#[cfg(test)]
mod tests;
