//! The `inbox` table and its rows: what each recorded message is, where
//! it stands, and the statements that move it on. Every function takes a
//! connection, so the writer can run several in one transaction.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};

use crate::channels::ChannelMessage;

/// Where a recorded message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Recorded; not started.
    Received,
    /// Its turn is running (or was, when the daemon died).
    Started,
    /// The reply is made and recorded; it is being sent (or waits to be
    /// sent again).
    Replying,
    /// Every part of the reply was delivered.
    Answered,
    /// A newer message from the same person took it over.
    Superseded,
    /// Stopped by the user (`/stop`) or a hook.
    Cancelled,
    /// Cannot be answered or delivered; `error` says why.
    Failed,
}

impl State {
    pub const ALL: [State; 7] = [
        Self::Received,
        Self::Started,
        Self::Replying,
        Self::Answered,
        Self::Superseded,
        Self::Cancelled,
        Self::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Received => "received",
            Self::Started => "started",
            Self::Replying => "replying",
            Self::Answered => "answered",
            Self::Superseded => "superseded",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// One recorded message.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub row: i64,
    pub message: ChannelMessage,
    pub state: State,
    /// How often its turn was started.
    pub attempts: u32,
    /// The reply, once made.
    pub reply: Option<String>,
    /// The draft the reply was streaming into.
    pub draft: Option<String>,
    /// Delivered parts of the reply: index → the platform's message id.
    pub parts: BTreeMap<usize, String>,
    /// Failed sends so far, and when the next try is due (Unix seconds).
    pub send_tries: u32,
    pub next_try: Option<i64>,
    pub first_failure: Option<i64>,
    pub error: Option<String>,
    /// Unix seconds.
    pub received: i64,
    pub updated: i64,
}

const COLUMNS: &str = "id, message, state, attempts, reply, draft, send_tries, next_try, \
                       first_failure, error, received, updated";

fn entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<Entry> {
    let bad = |i: usize, e: String| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            Box::new(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        )
    };
    let message: String = row.get(1)?;
    let state: String = row.get(2)?;
    Ok(Entry {
        row: row.get(0)?,
        message: serde_json::from_str(&message).map_err(|e| bad(1, e.to_string()))?,
        state: State::parse(&state).ok_or_else(|| bad(2, format!("unknown state `{state}`")))?,
        attempts: row.get(3)?,
        reply: row.get(4)?,
        draft: row.get(5)?,
        parts: BTreeMap::new(),
        send_tries: row.get(6)?,
        next_try: row.get(7)?,
        first_failure: row.get(8)?,
        error: row.get(9)?,
        received: row.get(10)?,
        updated: row.get(11)?,
    })
}

/// Fills in `entry`'s delivered parts.
fn with_parts(conn: &Connection, mut entry: Entry) -> rusqlite::Result<Entry> {
    let mut stmt = conn.prepare_cached(
        "SELECT part, platform_id FROM inbox_parts WHERE channel = ?1 AND message_id = ?2",
    )?;
    let rows = stmt.query_map(params![entry.message.channel, entry.message.id], |r| {
        Ok((r.get::<_, i64>(0)? as usize, r.get::<_, String>(1)?))
    })?;
    entry.parts = rows.collect::<rusqlite::Result<_>>()?;
    Ok(entry)
}

/// Records `message`; `Some(entry)` when the inbox already held it.
pub fn insert(conn: &Connection, message: &ChannelMessage) -> rusqlite::Result<Option<Entry>> {
    let json = serde_json::to_string(message).map_err(|e| {
        rusqlite::Error::ToSqlConversionFailure(Box::new(std::io::Error::other(e.to_string())))
    })?;
    let added = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO inbox (channel, message_id, message) VALUES (?1, ?2, ?3)",
        )?
        .execute(params![message.channel, message.id, json])?;
    if added == 1 {
        return Ok(None);
    }
    find(conn, &message.channel, &message.id)
}

/// The channel and id of every record.
pub fn keys(conn: &Connection) -> rusqlite::Result<std::collections::HashSet<(String, String)>> {
    let mut stmt = conn.prepare("SELECT channel, message_id FROM inbox")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

pub fn find(conn: &Connection, channel: &str, id: &str) -> rusqlite::Result<Option<Entry>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM inbox WHERE channel = ?1 AND message_id = ?2"
    ))?
    .query_row(params![channel, id], entry)
    .optional()?
    .map(|e| with_parts(conn, e))
    .transpose()
}

/// Entries in `states`, oldest first.
pub fn in_states(conn: &Connection, states: &[State]) -> rusqlite::Result<Vec<Entry>> {
    let list = states
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(",");
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM inbox WHERE state IN ({list}) ORDER BY id"
    ))?;
    let rows = stmt.query_map([], entry)?;
    rows.map(|e| with_parts(conn, e?)).collect()
}

/// Replies whose next try is due at `now` (Unix seconds), oldest first.
pub fn due(conn: &Connection, now: i64) -> rusqlite::Result<Vec<Entry>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM inbox
         WHERE next_try IS NOT NULL AND next_try <= ?1 AND state = 'replying' ORDER BY id"
    ))?;
    let rows = stmt.query_map(params![now], entry)?;
    rows.map(|e| with_parts(conn, e?)).collect()
}

/// How many entries are in each state.
pub fn counts(conn: &Connection) -> rusqlite::Result<BTreeMap<State, usize>> {
    let mut stmt = conn.prepare("SELECT state, count(*) FROM inbox GROUP BY state")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    let mut counts = BTreeMap::new();
    for row in rows {
        let (state, n) = row?;
        if let Some(state) = State::parse(&state) {
            counts.insert(state, n.max(0) as usize);
        }
    }
    Ok(counts)
}

/// Moves an entry to `state`. `Started` also counts an attempt; the
/// return value is the attempts so far.
pub fn set_state(
    conn: &Connection,
    message: &ChannelMessage,
    state: State,
    error: Option<&str>,
) -> rusqlite::Result<u32> {
    let bump = u32::from(state == State::Started);
    // Past its turn the record needs no pictures: the history keeps them.
    let keep_pictures = matches!(state, State::Received | State::Started);
    conn.prepare_cached(
        "UPDATE inbox SET state = ?3, attempts = attempts + ?4, error = coalesce(?5, error),
                next_try = NULL, updated = unixepoch(),
                message = CASE WHEN ?6 THEN message ELSE json_remove(message, '$.images', '$.audio') END
         WHERE channel = ?1 AND message_id = ?2 RETURNING attempts",
    )?
    .query_row(
        params![
            message.channel,
            message.id,
            state.as_str(),
            bump,
            error,
            keep_pictures
        ],
        |r| r.get(0),
    )
    .optional()
    .map(Option::unwrap_or_default)
}

/// Records the reply to send (the turn, pictures and all, is in the
/// history now: the record lets its pictures go).
pub fn set_reply(conn: &Connection, message: &ChannelMessage, text: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE inbox SET state = 'replying', reply = ?3, updated = unixepoch(),
                message = json_remove(message, '$.images', '$.audio')
         WHERE channel = ?1 AND message_id = ?2",
    )?
    .execute(params![message.channel, message.id, text])
    .map(|_| ())
}

pub fn set_draft(conn: &Connection, message: &ChannelMessage, draft: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE inbox SET draft = ?3 WHERE channel = ?1 AND message_id = ?2")?
        .execute(params![message.channel, message.id, draft])
        .map(|_| ())
}

/// Records that part `index` arrived as `id`.
pub fn set_sent(
    conn: &Connection,
    message: &ChannelMessage,
    index: usize,
    id: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO inbox_parts (channel, message_id, part, platform_id)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![message.channel, message.id, index as i64, id])
    .map(|_| ())
}

/// A send failed for now: try again at `next_try` (Unix seconds).
pub fn set_retry(
    conn: &Connection,
    message: &ChannelMessage,
    error: &str,
    next_try: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE inbox SET send_tries = send_tries + 1, next_try = ?3, error = ?4,
                first_failure = coalesce(first_failure, unixepoch()), updated = unixepoch()
         WHERE channel = ?1 AND message_id = ?2",
    )?
    .execute(params![message.channel, message.id, next_try, error])
    .map(|_| ())
}

/// Deletes finished entries (and the parts of their replies) last
/// changed more than `days` before `now`; their channels and ids.
pub fn forget_finished(
    conn: &Connection,
    days: u32,
    now: i64,
) -> rusqlite::Result<Vec<(String, String)>> {
    let before = now - i64::from(days) * 86_400;
    conn.execute(
        "DELETE FROM inbox_parts WHERE (channel, message_id) IN (SELECT channel, message_id FROM inbox
           WHERE state IN ('answered', 'superseded', 'cancelled', 'failed') AND updated < ?1)",
        params![before],
    )?;
    conn.prepare(
        "DELETE FROM inbox WHERE state IN ('answered', 'superseded', 'cancelled', 'failed')
           AND updated < ?1 RETURNING channel, message_id",
    )?
    .query_map(params![before], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}
