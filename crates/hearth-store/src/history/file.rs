//! The history's file, `history.sqlite3`, and its schema versions. The
//! conversations' turns, their pictures, the grants and the inbox share it,
//! so one transaction covers a reply and its turn; every store that opens
//! it opens it with [`FILE`].

use rusqlite::Connection;

use crate::storage::Schema;

/// `history.sqlite3`'s schema.
pub const FILE: Schema = Schema {
    name: "history",
    // A committed turn survives a crash of hearth; a power cut may lose
    // the last turns but never corrupts the file (FULL syncs every turn:
    // 12× slower per message in `benches/pipeline.rs`).
    pragmas: "PRAGMA synchronous = NORMAL;",
    steps: &[v1],
};

/// The tables as of the first release that kept versions. Idempotent: it
/// also brings files from before versions up, adding turns' pictures.
fn v1(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(super::store::TABLES)?;
    c.execute_batch(super::pictures::SCHEMA)?;
    super::pictures::migrate(c)?;
    c.execute_batch(super::grants::SCHEMA)?;
    c.execute_batch(INBOX_TABLES)
}

/// The durable inbox's tables (the `inbox` module): a message, its state and
/// the parts of its reply already sent.
const INBOX_TABLES: &str = "
    CREATE TABLE IF NOT EXISTS inbox (
        id INTEGER PRIMARY KEY,
        channel TEXT NOT NULL,
        message_id TEXT NOT NULL,
        message TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'received',
        attempts INTEGER NOT NULL DEFAULT 0,
        reply TEXT,
        draft TEXT,
        send_tries INTEGER NOT NULL DEFAULT 0,
        next_try INTEGER,
        first_failure INTEGER,
        error TEXT,
        received INTEGER NOT NULL DEFAULT (unixepoch()),
        updated INTEGER NOT NULL DEFAULT (unixepoch()),
        UNIQUE (channel, message_id)
    );
    DROP INDEX IF EXISTS inbox_by_state;
    CREATE INDEX IF NOT EXISTS inbox_retries ON inbox (next_try) WHERE next_try IS NOT NULL;
    CREATE TABLE IF NOT EXISTS inbox_parts (
        channel TEXT NOT NULL,
        message_id TEXT NOT NULL,
        part INTEGER NOT NULL,
        platform_id TEXT NOT NULL,
        PRIMARY KEY (channel, message_id, part)
    ) WITHOUT ROWID;";
