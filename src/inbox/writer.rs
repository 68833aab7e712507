//! The one writer of the inbox, with group commit.
//!
//! Jobs queue in order; a task takes every job waiting and runs them on
//! the blocking pool, each in a savepoint of one transaction, commits, then
//! tells each job how it ended. (The blocking pool, not a thread of its
//! own, so that a runtime with a paused clock sees the work in progress.) A batch holding a durable job (a message's arrival) commits with
//! `synchronous = FULL`, so its return means the record is on disk; the
//! others commit with `NORMAL`, which survives a crash of the process
//! (the kernel has the WAL) and is synced by the next durable commit.
//! Order is kept: a job never commits before one queued ahead of it.

use std::path::PathBuf;

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use super::InboxError;

/// At most this many jobs share one transaction.
const MAX_BATCH: usize = 256;

/// Told how the transaction of a job ended.
type Finish = Box<dyn FnOnce(Result<(), String>) + Send>;
/// A job's statements; `true` when they succeeded (else they are undone).
type Work = Box<dyn FnOnce(&Connection) -> (bool, Finish) + Send>;

struct Job {
    durable: bool,
    work: Work,
}

/// The queue into the writer task; the task ends when it is dropped.
pub(super) struct Writer {
    jobs: mpsc::UnboundedSender<Job>,
    path: PathBuf,
}

impl Writer {
    /// Starts the writer on the current tokio runtime.
    pub fn start(conn: Connection, path: PathBuf) -> Result<Self, InboxError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| InboxError::NoRuntime)?;
        let (jobs, queue) = mpsc::unbounded_channel();
        let store = Store {
            conn,
            path: path.clone(),
            full: None,
        };
        runtime.spawn(run(store, queue));
        Ok(Self { jobs, path })
    }

    /// Queues `f`; the receiver resolves once its transaction committed
    /// (synced to disk when `durable`).
    pub fn submit<T: Send + 'static>(
        &self,
        durable: bool,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> oneshot::Receiver<Result<T, InboxError>> {
        let (tx, rx) = oneshot::channel();
        let path = self.path.clone();
        let work: Work = Box::new(move |conn| {
            let result = f(conn);
            let ok = result.is_ok();
            let finish: Finish = Box::new(move |committed| {
                let out = match (result, committed) {
                    (Ok(v), Ok(())) => Ok(v),
                    (Err(source), _) => Err(InboxError::Sqlite { path, source }),
                    (Ok(_), Err(why)) => Err(InboxError::Commit { path, why }),
                };
                let _ = tx.send(out);
            });
            (ok, finish)
        });
        // A closed queue drops the job, and with it `tx`: the receiver
        // then reports the writer gone.
        let _ = self.jobs.send(Job { durable, work });
        rx
    }
}

/// The connection and the sync mode it is in.
struct Store {
    conn: Connection,
    path: PathBuf,
    full: Option<bool>,
}

async fn run(mut store: Store, mut queue: mpsc::UnboundedReceiver<Job>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        store = match tokio::task::spawn_blocking(move || {
            store.write(batch);
            store
        })
        .await
        {
            Ok(store) => store,
            Err(e) => {
                tracing::error!(error = %e, "inbox: the writer stopped");
                return;
            }
        };
    }
}

impl Store {
    fn write(&mut self, batch: Vec<Job>) {
        let durable = batch.iter().any(|j| j.durable);
        if self.full != Some(durable) {
            let mode = if durable { "FULL" } else { "NORMAL" };
            match self.conn.pragma_update(None, "synchronous", mode) {
                Ok(()) => self.full = Some(durable),
                Err(e) => tracing::error!(error = %e, "inbox: cannot set synchronous = {mode}"),
            }
        }
        let mut finishes = Vec::with_capacity(batch.len());
        let committed = commit(&mut self.conn, batch, &mut finishes);
        if let Err(e) = &committed {
            tracing::error!(path = %self.path.display(), error = %e, "inbox: a transaction failed");
        }
        let outcome = committed.map_err(|e| e.to_string());
        for finish in finishes {
            finish(outcome.clone());
        }
    }
}

fn commit(
    conn: &mut Connection,
    batch: Vec<Job>,
    finishes: &mut Vec<Finish>,
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for job in batch {
        tx.execute_batch("SAVEPOINT job")?;
        let (ok, finish) = (job.work)(&tx);
        finishes.push(finish);
        tx.execute_batch(if ok {
            "RELEASE job"
        } else {
            "ROLLBACK TO job; RELEASE job"
        })?;
    }
    tx.commit()
}
