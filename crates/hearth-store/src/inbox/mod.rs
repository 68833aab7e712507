//! The durable inbox: every message of a durable channel is recorded in
//! SQLite before its platform is told it arrived, and kept until its
//! outcome is known, so no crash, kill or power cut loses it.
//!
//! A record moves received → started → replying → answered, or ends as
//! superseded, cancelled or failed ([`State`]). It lives in the `inbox`
//! table of `history.sqlite3`, so a reply, its sent parts and its turn in
//! the history are written in one transaction. One task writes it
//! ([`writer`]) with `synchronous = NORMAL`, which a crash of the process
//! never loses; an arrival is also synced to disk ([`syncer`]) before the
//! platform is acknowledged, and that sync covers the steps before it.
//!
//! At start the daemon takes up what was left open ([`Inbox::open_entries`]):
//! messages not answered run again, in order, and say they are late;
//! replies made but not fully sent are sent on from the part they reached
//! ([`entry_journal`]); failed sends are retried with backoff ([`retry`]).

pub mod entry_journal;
pub mod retry;
mod store;
mod syncer;
mod writer;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

pub use entry_journal::EntryJournal;
pub use store::{Entry, State, forget_finished};

use crate::channels::ChannelMessage;
use crate::chat::ChatMessage;

/// A message on its way to the dispatcher.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    pub message: ChannelMessage,
    /// Recorded in the inbox: its steps are recorded too.
    pub recorded: bool,
    /// Taken up again after a restart: the reply says it is late.
    pub late: bool,
    /// It came as a voice note, and its text is what was heard: the
    /// reply may be spoken too (`[voice] reply_with_voice`).
    pub spoken: bool,
}

impl Inbound {
    /// A message that is not recorded (the CLI's, tests').
    pub fn unrecorded(message: ChannelMessage) -> Self {
        Self {
            message,
            recorded: false,
            late: false,
            spoken: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error("inbox {}: {source}; fix: check that the data dir is writable (`[data] dir`)", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("inbox {}: cannot commit: {why}; fix: check the disk (space, permissions)", .path.display())]
    Commit { path: PathBuf, why: String },
    #[error(
        "inbox {}: the database is damaged ({detail}); fix: stop hearth, move the file (and its -wal file) aside and start again; its messages are then lost",
        .path.display()
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error("the inbox is closed")]
    Gone,
    #[error("the message has no record in the inbox (it could not be written)")]
    NotRecorded,
    #[error(transparent)]
    Open(#[from] crate::storage::OpenError),
    #[error("the inbox needs a tokio runtime to write from")]
    NoRuntime,
}

/// The waits between tries of a write that must not be lost: from 1 s,
/// doubling to 30 s.
const KEEP_TRYING: crate::retry::RetryPolicy = crate::retry::RetryPolicy::new(
    std::time::Duration::from_secs(1),
    std::time::Duration::from_secs(30),
);

/// A turn's messages for the history, and its conversation.
pub type Turn = (String, Vec<ChatMessage>);

/// The inbox of one data dir; share it in an `Arc`.
pub struct Inbox {
    writer: writer::Writer,
    path: PathBuf,
    /// Every recorded message, by channel and id.
    known: Arc<Mutex<HashSet<(String, String)>>>,
    /// Messages kept per conversation when a turn is appended.
    keep: usize,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What [`Inbox::admit`] found.
pub struct Admission {
    /// `Some` when the message was recorded before (it is not new).
    pub known: Option<Entry>,
    /// Resolves once the new record is on disk (closed for a known one).
    pub synced: oneshot::Receiver<Result<(), InboxError>>,
}

impl Inbox {
    /// Opens the inbox in `history.sqlite3` under `data_dir`, checking the
    /// file first: a damaged store is refused, never used.
    pub fn open(data_dir: &Path) -> Result<Self, InboxError> {
        let path = crate::history::HistoryStore::path_in(data_dir);
        let conn = crate::storage::open(&path, &crate::history::FILE)?;
        let sqlite = |source| InboxError::Sqlite {
            path: path.clone(),
            source,
        };
        check(&conn, &path)?;
        let known = store::keys(&conn).map_err(sqlite)?;
        let writer = writer::Writer::start(conn, path.clone())?;
        Ok(Self {
            writer,
            path,
            known: Arc::new(Mutex::new(known)),
            keep: crate::history::HISTORY_LIMIT,
        })
    }

    /// Keeps the newest `messages` of a conversation when a turn is
    /// appended (`[retention] history_messages`).
    pub fn keeping(mut self, messages: usize) -> Self {
        self.keep = messages.max(2);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Forgets the ids of records a retention sweep deleted, so that the
    /// set of known messages stays as bounded as the records. Only
    /// finished records older than `[retention] inbox_days` are deleted,
    /// long after any platform offers a message again.
    pub fn forget_known(&self, keys: &[(String, String)]) {
        let mut known = lock(&self.known);
        for key in keys {
            known.remove(key);
        }
    }

    /// Whether `message` has a record on disk: one whose record could not
    /// be written (a full disk) has none, and its listener offers it again
    /// once it can be. A store that cannot be read counts as holding it.
    pub async fn holds(&self, message: &ChannelMessage) -> bool {
        !matches!(self.find(message).await, Ok(None))
    }

    /// Records `message`, or finds the record the inbox already holds of
    /// it (known by channel and id, kept in memory, so a new message waits
    /// for nothing); `synced` tells when the new record reached the disk.
    pub async fn admit(&self, message: &ChannelMessage) -> Result<Admission, InboxError> {
        let key = (message.channel.clone(), message.id.clone());
        let new = lock(&self.known).insert(key.clone());
        if !new && let Some(entry) = self.find(message).await? {
            let (_, synced) = oneshot::channel();
            return Ok(Admission {
                known: Some(entry),
                synced,
            });
        }
        let (message, known) = (message.clone(), self.known.clone());
        let synced = self.writer.submit(true, move |conn| {
            let inserted = store::insert(conn, &message);
            if inserted.is_err() {
                lock(&known).remove(&key);
            }
            inserted.map(|_| ())
        });
        Ok(Admission {
            known: None,
            synced,
        })
    }

    /// Its turn begins: counts the attempt and, on the first, appends the
    /// user's turn to the history in the same transaction.
    ///
    /// Queued at once; await the result before the turn ends, so that the
    /// next turn of the conversation reads the user's turn back.
    pub fn start(
        &self,
        message: &ChannelMessage,
        turn: Option<Turn>,
    ) -> impl Future<Output = Result<(), InboxError>> + use<> {
        let (message, keep) = (message.clone(), self.keep);
        let queued = self.writer.submit(false, move |conn| {
            let attempts = store::set_state(conn, &message, State::Started, None)?;
            if attempts == 1
                && let Some((key, messages)) = &turn
            {
                crate::history::append_rows(conn, key, messages, keep)?;
            }
            Ok(attempts)
        });
        async move {
            match queued.await.unwrap_or(Err(InboxError::Gone))? {
                0 => Err(InboxError::NotRecorded),
                _ => Ok(()),
            }
        }
    }

    /// The reply is made: records it (and its turn in the history) before
    /// the first part is sent.
    pub async fn replying(
        &self,
        message: &ChannelMessage,
        text: &str,
        turn: Option<Turn>,
    ) -> Result<(), InboxError> {
        let (message, text, keep) = (message.clone(), text.to_string(), self.keep);
        self.call(false, move |conn| {
            store::set_reply(conn, &message, &text)?;
            if let Some((key, messages)) = &turn {
                crate::history::append_rows(conn, key, messages, keep)?;
            }
            Ok(())
        })
        .await
    }

    /// The reply streams into draft `id`.
    pub fn draft(&self, message: &ChannelMessage, id: &str) {
        let (message, id) = (message.clone(), id.to_string());
        self.detach("draft", move |conn| store::set_draft(conn, &message, &id));
    }

    /// Ends a record in `state` (with the reason, for `Failed`); kept
    /// trying until it is written.
    pub fn finish(&self, message: &ChannelMessage, state: State, error: Option<&str>) {
        let (message, error) = (message.clone(), error.map(str::to_string));
        self.keep_trying("finish", move |conn| {
            store::set_state(conn, &message, state, error.as_deref()).map(|_| ())
        });
    }

    /// Part `index` arrived as the platform's message `id`; kept trying
    /// until it is written.
    pub fn sent(&self, message: &ChannelMessage, index: usize, id: &str) {
        let (message, id) = (message.clone(), id.to_string());
        self.keep_trying("sent", move |conn| {
            store::set_sent(conn, &message, index, &id)
        });
    }

    /// A send failed for now; the next try is due at `at` (Unix seconds).
    pub async fn retry_at(
        &self,
        message: &ChannelMessage,
        error: &str,
        at: i64,
    ) -> Result<(), InboxError> {
        let (message, error) = (message.clone(), error.to_string());
        self.call(false, move |conn| {
            store::set_retry(conn, &message, &error, at)
        })
        .await
    }

    /// The record of `message`, if there is one.
    pub async fn find(&self, message: &ChannelMessage) -> Result<Option<Entry>, InboxError> {
        let (channel, id) = (message.channel.clone(), message.id.clone());
        self.call(false, move |conn| store::find(conn, &channel, &id))
            .await
    }

    /// Everything not finished, oldest first.
    pub async fn open_entries(&self) -> Result<Vec<Entry>, InboxError> {
        self.call(false, |conn| {
            store::in_states(conn, &[State::Received, State::Started, State::Replying])
        })
        .await
    }

    /// Replies whose next try is due at `now` (Unix seconds).
    pub async fn due(&self, now: i64) -> Result<Vec<Entry>, InboxError> {
        self.call(false, move |conn| store::due(conn, now)).await
    }

    pub async fn counts(&self) -> Result<BTreeMap<State, usize>, InboxError> {
        self.call(false, store::counts).await
    }

    /// Resolves once everything queued before it is committed.
    pub async fn flush(&self) -> Result<(), InboxError> {
        self.call(true, |_| Ok(())).await
    }

    async fn call<T: Send + 'static>(
        &self,
        durable: bool,
        f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, InboxError> {
        self.writer
            .submit(durable, f)
            .await
            .unwrap_or(Err(InboxError::Gone))
    }

    /// Queues `f` without waiting; a failure is logged.
    fn detach(
        &self,
        what: &'static str,
        f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<()> + Send + 'static,
    ) {
        self.writer.detach(what, f);
    }

    /// Queues `f` now, in order with every other write, and tries it again
    /// until it is written (a full disk): what was sent must be recorded
    /// as sent, or a restart would send it again.
    fn keep_trying(
        &self,
        what: &'static str,
        f: impl Fn(&rusqlite::Connection) -> rusqlite::Result<()> + Send + Sync + 'static,
    ) {
        let f = Arc::new(f);
        let writer = self.writer.clone();
        let first = {
            let f = f.clone();
            writer.submit(false, move |conn| f(conn))
        };
        self.writer.spawn(async move {
            let mut done = first.await;
            let mut backoff = KEEP_TRYING.backoff();
            while let Ok(Err(e)) = done {
                let wait = backoff.failed();
                if backoff.failures() == 1 {
                    tracing::error!(error = %e, "inbox: cannot record `{what}`; trying again until it is written");
                }
                tokio::time::sleep(wait).await;
                let f = f.clone();
                done = writer.submit(false, move |conn| f(conn)).await;
            }
            if backoff.failures() > 0 && matches!(done, Ok(Ok(()))) {
                tracing::info!("inbox: `{what}` recorded after {} tries", backoff.failures() + 1);
            }
        });
    }
}

/// Refuses a damaged database (`PRAGMA quick_check`).
fn check(conn: &rusqlite::Connection, path: &Path) -> Result<(), InboxError> {
    let corrupt = |detail: String| InboxError::Corrupt {
        path: path.to_path_buf(),
        detail,
    };
    let verdict: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, detail)
                if matches!(
                    f.code,
                    rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
                ) =>
            {
                corrupt(detail.unwrap_or_else(|| f.to_string()))
            }
            source => InboxError::Sqlite {
                path: path.to_path_buf(),
                source,
            },
        })?;
    if verdict == "ok" {
        Ok(())
    } else {
        Err(corrupt(verdict))
    }
}

/// One line for `/status` and `hearth doctor`: what waits, what failed.
pub fn summary(counts: &BTreeMap<State, usize>) -> String {
    let n = |s| counts.get(&s).copied().unwrap_or(0);
    let waiting = n(State::Received) + n(State::Started);
    format!(
        "inbox: {waiting} message(s) being answered, {} reply(ies) being sent or waiting to be retried, {} failed{}",
        n(State::Replying),
        n(State::Failed),
        if n(State::Failed) > 0 {
            " (`hearth inbox` lists them)"
        } else {
            ""
        }
    )
}

/// Reads the inbox of `data_dir` without writing (for `hearth inbox` and
/// `hearth doctor` while the daemon may be running); `None` when there is
/// none yet.
pub fn read(data_dir: &Path, states: &[State]) -> Result<Option<Vec<Entry>>, InboxError> {
    with_reader(data_dir, |conn| store::in_states(conn, states))
}

/// How many entries `data_dir`'s inbox has in each state.
pub fn count(data_dir: &Path) -> Result<Option<BTreeMap<State, usize>>, InboxError> {
    with_reader(data_dir, store::counts)
}

fn with_reader<T>(
    data_dir: &Path,
    f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
) -> Result<Option<T>, InboxError> {
    let path = crate::history::HistoryStore::path_in(data_dir);
    if !path.exists() {
        return Ok(None);
    }
    let sqlite = |source| InboxError::Sqlite {
        path: path.clone(),
        source,
    };
    let conn = rusqlite::Connection::open_with_flags(
        &path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite)?;
    check(&conn, &path)?;
    let exists: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'inbox'",
            [],
            |r| r.get(0),
        )
        .map_err(sqlite)?;
    if !exists {
        return Ok(None);
    }
    f(&conn).map(Some).map_err(sqlite)
}

#[cfg(test)]
mod tests;
