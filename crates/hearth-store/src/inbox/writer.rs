//! The one writer of the inbox, with group commit.
//!
//! Jobs queue in order. The first job queued while the writer is idle
//! starts a drain on the blocking pool, which takes every job waiting,
//! runs them each in a savepoint of one transaction, commits, tells each
//! job how it ended, and goes on until the queue is empty. (The blocking
//! pool, not a thread of its own, so that a runtime with a paused clock
//! sees the work in progress.) Every batch commits with `synchronous = NORMAL`, which survives a crash
//! of the process (the kernel has the WAL); a durable job (a message's
//! arrival) is told it ended only once the [`Syncer`] has flushed the WAL
//! to disk, while the writer goes on. Order is kept: a job never commits
//! before one queued ahead of it. A database that is not in WAL mode (a
//! file system without shared memory) commits everything with `FULL`.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::oneshot;

use super::InboxError;
use super::syncer::Syncer;

/// At most this many jobs share one transaction.
const MAX_BATCH: usize = 256;

/// Told how the transaction of a job ended.
pub(super) type Finish = Box<dyn FnOnce(Result<(), String>) + Send>;
/// A job's statements; `true` when they succeeded (else they are undone).
type Work = Box<dyn FnOnce(&Connection) -> (bool, Finish) + Send>;

struct Job {
    durable: bool,
    work: Work,
}

/// The queue of jobs and the connection that runs them.
#[derive(Clone)]
pub(super) struct Writer {
    shared: Arc<Shared>,
    path: PathBuf,
    runtime: tokio::runtime::Handle,
}

struct Shared {
    queue: Mutex<VecDeque<Job>>,
    /// A drain is under way or scheduled on the blocking pool.
    running: AtomicBool,
    store: Mutex<Store>,
}

impl Writer {
    /// Takes over `conn`; needs a tokio runtime for the syncs.
    pub fn start(conn: Connection, path: PathBuf) -> Result<Self, InboxError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| InboxError::NoRuntime)?;
        let sqlite = |source| InboxError::Sqlite {
            path: path.clone(),
            source,
        };
        let wal: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(sqlite)?;
        let (mode, syncer) = if wal.eq_ignore_ascii_case("wal") {
            ("NORMAL", Some(Syncer::start(&runtime, &path)))
        } else {
            tracing::warn!(
                journal = wal,
                "inbox: not in WAL mode; every commit is synced"
            );
            ("FULL", None)
        };
        conn.pragma_update(None, "synchronous", mode)
            .map_err(sqlite)?;
        let store = Store {
            conn,
            path: path.clone(),
            syncer,
        };
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            running: AtomicBool::new(false),
            store: Mutex::new(store),
        });
        Ok(Self {
            shared,
            path,
            runtime,
        })
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
        self.enqueue(Job { durable, work });
        rx
    }

    /// Queues `f` without a receiver; a failure is logged as `what`.
    pub fn detach(
        &self,
        what: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<()> + Send + 'static,
    ) {
        let path = self.path.clone();
        let work: Work = Box::new(move |conn| {
            let result = f(conn);
            let ok = result.is_ok();
            let finish: Finish = Box::new(move |committed| {
                let error = match (&result, committed) {
                    (Err(e), _) => e.to_string(),
                    (Ok(()), Err(why)) => why,
                    (Ok(()), Ok(())) => return,
                };
                tracing::error!(path = %path.display(), error, "inbox: cannot record `{what}`");
            });
            (ok, finish)
        });
        self.enqueue(Job {
            durable: false,
            work,
        });
    }

    /// Runs `task` on the writer's runtime.
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.runtime.spawn(task);
    }

    fn enqueue(&self, job: Job) {
        lock(&self.shared.queue).push_back(job);
        if !self.shared.running.swap(true, Ordering::AcqRel) {
            let shared = self.shared.clone();
            self.runtime.spawn_blocking(move || shared.drain());
        }
    }
}

impl Shared {
    /// Runs batches until the queue is empty; one at a time (`running`).
    fn drain(&self) {
        let mut store = lock(&self.store);
        loop {
            let batch: Vec<Job> = {
                let mut queue = lock(&self.queue);
                let n = queue.len().min(MAX_BATCH);
                queue.drain(..n).collect()
            };
            if batch.is_empty() {
                self.running.store(false, Ordering::Release);
                // A job queued just before `running` went down found it
                // up and left its batch to this loop.
                if lock(&self.queue).is_empty() || self.running.swap(true, Ordering::AcqRel) {
                    return;
                }
                continue;
            }
            store.write(batch);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The connection, and what syncs its durable commits (none when every
/// commit is synced).
struct Store {
    conn: Connection,
    path: PathBuf,
    syncer: Option<Syncer>,
}

impl Store {
    fn write(&mut self, batch: Vec<Job>) {
        let mut finishes = Vec::with_capacity(batch.len());
        let committed = commit(&mut self.conn, batch, &mut finishes);
        if let Err(e) = &committed {
            tracing::error!(path = %self.path.display(), error = %e, "inbox: a transaction failed");
        }
        let outcome = committed.map_err(|e| e.to_string());
        for (durable, finish) in finishes {
            match &self.syncer {
                Some(syncer) if durable && outcome.is_ok() => syncer.after_sync(finish),
                _ => finish(outcome.clone()),
            }
        }
    }
}

fn commit(
    conn: &mut Connection,
    batch: Vec<Job>,
    finishes: &mut Vec<(bool, Finish)>,
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for job in batch {
        tx.execute_batch("SAVEPOINT job")?;
        let (ok, finish) = (job.work)(&tx);
        finishes.push((job.durable, finish));
        tx.execute_batch(if ok {
            "RELEASE job"
        } else {
            "ROLLBACK TO job; RELEASE job"
        })?;
    }
    tx.commit()
}
