//! Makes committed transactions durable without holding up the writer.
//!
//! The writer commits with `synchronous = NORMAL`: a transaction is then
//! in the WAL file, in the kernel's cache, which a crash of the process
//! never loses. What must also survive a power cut (a message's arrival,
//! before its platform is acknowledged) waits here for an fsync of the
//! WAL file, run on the blocking pool while the writer goes on with the
//! next transactions. One fsync covers every commit made before it began,
//! so arrivals that come together share one.
//!
//! Syncing the file from outside SQLite is sound: recovery replays a WAL
//! frame only when its checksum chain holds, so a half-written tail is
//! never read, and SQLite locks the wal-index (`-shm`), never the WAL
//! file, so the descriptor kept here releases no lock of SQLite's.

use std::fs::File;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

use super::writer::Finish;

/// The queue of commits waiting for the next fsync.
pub(super) struct Syncer {
    waiting: mpsc::UnboundedSender<Finish>,
}

impl Syncer {
    /// Starts syncing `database`'s WAL file on `runtime`.
    pub fn start(runtime: &tokio::runtime::Handle, database: &Path) -> Self {
        let (waiting, queue) = mpsc::unbounded_channel();
        runtime.spawn(run(wal_path(database), queue));
        Self { waiting }
    }

    /// Calls `finish` once everything committed so far is on disk (with
    /// the error when the sync failed).
    pub fn after_sync(&self, finish: Finish) {
        if let Err(mpsc::error::SendError(finish)) = self.waiting.send(finish) {
            finish(Err("the inbox is closing".into()));
        }
    }
}

/// `<database>-wal`, where SQLite keeps the log.
fn wal_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

async fn run(wal: PathBuf, mut queue: mpsc::UnboundedReceiver<Finish>) {
    let mut file: Option<File> = None;
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while let Ok(next) = queue.try_recv() {
            batch.push(next);
        }
        let path = wal.clone();
        let synced = tokio::task::spawn_blocking(move || {
            let outcome = sync(&mut file, &path);
            (file, outcome)
        })
        .await;
        let outcome = match synced {
            Ok((kept, outcome)) => {
                file = kept;
                outcome
            }
            Err(e) => {
                file = None;
                Err(format!("the sync stopped: {e}"))
            }
        };
        if let Err(e) = &outcome {
            tracing::error!(path = %wal.display(), error = e, "inbox: cannot sync the log to disk");
        }
        for finish in batch {
            finish(outcome.clone());
        }
    }
}

/// Flushes the WAL file, opening it (and syncing its folder, where a new
/// file's name lives) the first time.
fn sync(file: &mut Option<File>, wal: &Path) -> Result<(), String> {
    let failed = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", wal.display());
    if file.is_none() {
        let opened = File::options()
            .read(true)
            .open(wal)
            .map_err(|e| failed("open", e))?;
        if let Some(dir) = wal.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| failed("sync the folder of", e))?;
        }
        *file = Some(opened);
    }
    match file {
        Some(f) => f.sync_data().map_err(|e| failed("sync", e)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_the_database_name_with_wal_appended() {
        assert_eq!(
            wal_path(Path::new("/data/history.sqlite3")),
            PathBuf::from("/data/history.sqlite3-wal")
        );
    }

    #[tokio::test]
    async fn a_missing_log_is_reported_to_every_waiting_commit() {
        let dir = tempfile::tempdir().unwrap();
        let syncer = Syncer::start(
            &tokio::runtime::Handle::current(),
            &dir.path().join("none.sqlite3"),
        );
        let (tx, rx) = tokio::sync::oneshot::channel();
        syncer.after_sync(Box::new(move |outcome| {
            let _ = tx.send(outcome);
        }));
        let outcome = rx.await.unwrap();
        assert!(
            outcome
                .as_ref()
                .is_err_and(|e| e.contains("none.sqlite3-wal")),
            "{outcome:?}"
        );
    }
}
