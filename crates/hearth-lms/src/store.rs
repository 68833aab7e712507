//! The seen-store: what each source listed, and what the user was told.
//!
//! `lms.sqlite3` under the data dir keeps one row per `(source, id)` with the
//! item's current content hash and the hash last *delivered*. An item is
//! pending while the two differ, so a failed delivery is simply tried again
//! on the next poll, and a restart changes nothing. Reminders are rows keyed
//! by the due date they were for, so a moved due date arms them again.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::{LmsError, LmsItem};

/// What [`SeenStore::record`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// This was the source's first successful poll.
    pub first: bool,
    /// Items recorded as told without a notice (past, on a first poll).
    pub silenced: usize,
}

/// An item whose current form the user has not been told.
#[derive(Debug, Clone)]
pub struct Pending {
    pub item: LmsItem,
    /// What was last delivered; `None` for an item never notified.
    pub previous: Option<LmsItem>,
}

/// `lms.sqlite3`'s schema.
pub const FILE: crate::storage::Schema = crate::storage::Schema {
    name: "LMS",
    pragmas: "",
    steps: &[v1, v2, v3],
};

/// The tables as of the first release that kept versions (idempotent).
fn v1(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(SCHEMA)
}

/// When each item was last on its site, so that one gone for
/// `[retention] lms_days` is forgotten; an item present now counts as
/// seen at the upgrade (unknown before it).
fn v2(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(
        "ALTER TABLE items ADD COLUMN last_seen INTEGER;
         UPDATE items SET last_seen = CASE WHEN present THEN unixepoch() ELSE first_seen END;",
    )
}

/// When each item last changed as a user sees it (for the calendar
/// feed's `LAST-MODIFIED` and the brief's "changed since"; an existing
/// item counts as changed when first seen) and whether a first poll
/// recorded it without a notice; the calendar feed's secret; the briefs
/// queued, one a day; the events written to the person's CalDAV calendar.
fn v3(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(
        "ALTER TABLE items ADD COLUMN changed_at INTEGER;
         UPDATE items SET changed_at = first_seen;
         ALTER TABLE items ADD COLUMN quiet INTEGER NOT NULL DEFAULT 0;
         CREATE TABLE calendar_feed (
             token TEXT PRIMARY KEY,
             created INTEGER NOT NULL
         );
         CREATE TABLE briefs (
             day TEXT PRIMARY KEY,
             queued_at INTEGER NOT NULL,
             sent INTEGER NOT NULL
         );
         CREATE TABLE caldav_written (
             uid TEXT PRIMARY KEY,
             hash TEXT NOT NULL
         );",
    )
}

const SCHEMA: &str = "
             CREATE TABLE IF NOT EXISTS items (
                 source TEXT NOT NULL,
                 id TEXT NOT NULL,
                 hash TEXT NOT NULL,
                 item TEXT NOT NULL,
                 notified_hash TEXT,
                 notified_item TEXT,
                 due INTEGER,
                 present INTEGER NOT NULL DEFAULT 1,
                 first_seen INTEGER NOT NULL,
                 PRIMARY KEY (source, id)
             );
             CREATE INDEX IF NOT EXISTS items_by_due ON items (due);
             CREATE TABLE IF NOT EXISTS reminders (
                 source TEXT NOT NULL,
                 id TEXT NOT NULL,
                 due INTEGER NOT NULL,
                 before_secs INTEGER NOT NULL,
                 sent_at INTEGER NOT NULL,
                 PRIMARY KEY (source, id, due, before_secs)
             );
             CREATE TABLE IF NOT EXISTS outbox (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 source TEXT NOT NULL,
                 text TEXT NOT NULL,
                 queued_at INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS sources (
                 source TEXT PRIMARY KEY,
                 last_poll INTEGER NOT NULL,
                 last_ok INTEGER,
                 last_error TEXT,
                 notes TEXT NOT NULL DEFAULT ''
             );";

pub struct SeenStore {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl SeenStore {
    /// Opens (creating if needed) `lms.sqlite3` in `data_dir`.
    pub fn open_in(data_dir: &Path) -> Result<Self, LmsError> {
        Self::open(&data_dir.join("lms.sqlite3"))
    }

    pub fn open(path: &Path) -> Result<Self, LmsError> {
        let conn = crate::storage::open(path, &FILE).map_err(|e| LmsError::Store {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
        })
    }

    pub(super) fn err(&self, e: impl std::fmt::Display) -> LmsError {
        LmsError::Store {
            path: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records what `source` lists now. Items it no longer lists stay (their
    /// notice history matters) but drop out of reminders and `upcoming`.
    ///
    /// On the source's first poll with `silence_past`, items whose date is
    /// already past are recorded as told, and one line saying so is queued
    /// in the outbox, in the same transaction.
    pub fn record(
        &self,
        source: &str,
        items: &[LmsItem],
        now: DateTime<Utc>,
        silence_past: bool,
    ) -> Result<Recorded, LmsError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let first: bool = tx
            .query_row(
                "SELECT NOT EXISTS (SELECT 1 FROM items WHERE source = ?1)
                    AND NOT EXISTS (SELECT 1 FROM sources WHERE source = ?1 AND last_ok IS NOT NULL)",
                [source],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        tx.execute("UPDATE items SET present = 0 WHERE source = ?1", [source])
            .map_err(|e| self.err(e))?;
        let mut silenced = 0;
        for item in items {
            let json = serde_json::to_string(item).map_err(|e| self.err(e))?;
            let hash = item.content_hash();
            let silent =
                first && silence_past && item.due.or(item.updated).is_some_and(|d| d < now);
            silenced += usize::from(silent);
            tx.execute(
                "INSERT INTO items (source, id, hash, item, due, present, first_seen, last_seen, changed_at, notified_hash, notified_item, quiet)
                 VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?6, ?6, ?7, ?8, ?9)
                 ON CONFLICT (source, id) DO UPDATE SET
                     changed_at = CASE WHEN items.hash IS excluded.hash THEN items.changed_at ELSE excluded.last_seen END,
                     hash = excluded.hash, item = excluded.item, due = excluded.due, present = 1,
                     last_seen = excluded.last_seen",
                params![
                    source,
                    item.id,
                    hash,
                    json,
                    item.due.map(|d| d.timestamp()),
                    now.timestamp(),
                    silent.then_some(&hash),
                    silent.then_some(&json),
                    silent,
                ],
            )
            .map_err(|e| self.err(e))?;
        }
        if silenced > 0 {
            tx.execute(
                "INSERT INTO outbox (source, text, queued_at) VALUES (?1, ?2, ?3)",
                params![
                    source,
                    super::notice::tracking(source, items.len(), silenced),
                    now.timestamp()
                ],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(Recorded { first, silenced })
    }

    /// Items of `source` whose current form was never delivered, oldest first.
    pub fn pending(&self, source: &str) -> Result<Vec<Pending>, LmsError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare(
                "SELECT item, notified_item FROM items
                 WHERE source = ?1 AND present = 1 AND notified_hash IS NOT hash
                 ORDER BY first_seen, id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([source], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (item, previous) = row.map_err(|e| self.err(e))?;
            out.push(Pending {
                item: serde_json::from_str(&item).map_err(|e| self.err(e))?,
                previous: previous.and_then(|p| serde_json::from_str(&p).ok()),
            });
        }
        Ok(out)
    }

    /// The user was told about `item` in this form.
    pub fn mark_notified(&self, item: &LmsItem) -> Result<(), LmsError> {
        let json = serde_json::to_string(item).map_err(|e| self.err(e))?;
        self.lock()
            .execute(
                "UPDATE items SET notified_hash = ?3, notified_item = ?4 WHERE source = ?1 AND id = ?2",
                params![item.source, item.id, item.content_hash(), json],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Notified items of `source` still listed, due after `now` and at most
    /// `within` later: the candidates for a reminder.
    pub fn due_within(
        &self,
        source: &str,
        now: DateTime<Utc>,
        within: Duration,
    ) -> Result<Vec<LmsItem>, LmsError> {
        let until = now.timestamp() + within.as_secs() as i64;
        self.items_where(
            "source = ?1 AND present = 1 AND notified_hash IS NOT NULL AND due > ?2 AND due <= ?3",
            params![source, now.timestamp(), until],
        )
    }

    /// Items of every source still listed and due in `[from, until]`, soonest first.
    pub fn upcoming(
        &self,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<LmsItem>, LmsError> {
        self.items_where(
            "present = 1 AND due >= ?1 AND due <= ?2",
            params![from.timestamp(), until.timestamp()],
        )
    }

    /// Items of every source first seen since `since`, newest first, at
    /// most `limit`.
    pub fn recent(&self, since: DateTime<Utc>, limit: u32) -> Result<Vec<LmsItem>, LmsError> {
        self.items_in_order(
            "first_seen >= ?1",
            &format!("first_seen DESC, source, id LIMIT {limit}"),
            params![since.timestamp()],
        )
    }

    fn items_where(
        &self,
        filter: &str,
        args: impl rusqlite::Params,
    ) -> Result<Vec<LmsItem>, LmsError> {
        self.items_in_order(filter, "due, source, id", args)
    }

    fn items_in_order(
        &self,
        filter: &str,
        order: &str,
        args: impl rusqlite::Params,
    ) -> Result<Vec<LmsItem>, LmsError> {
        let conn = self.lock();
        let sql = format!("SELECT item FROM items WHERE {filter} ORDER BY {order}");
        let mut stmt = conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(args, |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let json = row.map_err(|e| self.err(e))?;
            out.push(serde_json::from_str(&json).map_err(|e| self.err(e))?);
        }
        Ok(out)
    }

    /// Whether the reminder `before` ahead of `item`'s current due date went out.
    pub fn reminded(&self, item: &LmsItem, before: Duration) -> Result<bool, LmsError> {
        let Some(due) = item.due else { return Ok(true) };
        self.lock()
            .query_row(
                "SELECT 1 FROM reminders WHERE source = ?1 AND id = ?2 AND due = ?3 AND before_secs = ?4",
                params![item.source, item.id, due.timestamp(), before.as_secs() as i64],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.err(e))
    }

    /// Marks reminders of `item`'s current due date as sent.
    pub fn mark_reminded(
        &self,
        item: &LmsItem,
        befores: &[Duration],
        now: DateTime<Utc>,
    ) -> Result<(), LmsError> {
        let Some(due) = item.due else { return Ok(()) };
        let conn = self.lock();
        for before in befores {
            conn.execute(
                "INSERT OR IGNORE INTO reminders (source, id, due, before_secs, sent_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    item.source,
                    item.id,
                    due.timestamp(),
                    before.as_secs() as i64,
                    now.timestamp()
                ],
            )
            .map_err(|e| self.err(e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ItemKind;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap()
    }

    #[test]
    fn pending_until_marked_and_again_after_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeenStore::open_in(dir.path()).unwrap();
        let mut a = LmsItem::new("s", "1", ItemKind::Assignment, "Essay");
        a.due = Some(at(2_000_000));
        store
            .record("s", std::slice::from_ref(&a), at(0), false)
            .unwrap();
        assert_eq!(store.pending("s").unwrap().len(), 1);
        store
            .record("s", std::slice::from_ref(&a), at(10), false)
            .unwrap();
        assert_eq!(store.pending("s").unwrap().len(), 1, "unsent stays pending");
        store.mark_notified(&a).unwrap();
        assert!(store.pending("s").unwrap().is_empty());

        let mut moved = a.clone();
        moved.due = Some(at(3_000_000));
        store
            .record("s", std::slice::from_ref(&moved), at(20), false)
            .unwrap();
        let p = store.pending("s").unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(
            p[0].previous.as_ref().and_then(|i| i.due),
            Some(at(2_000_000))
        );

        drop(store);
        let reopened = SeenStore::open_in(dir.path()).unwrap();
        assert_eq!(
            reopened.pending("s").unwrap().len(),
            1,
            "state survives a reopen"
        );
    }

    #[test]
    fn reminders_are_per_due_date() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeenStore::open_in(dir.path()).unwrap();
        let mut a = LmsItem::new("s", "1", ItemKind::Assignment, "Essay");
        a.due = Some(at(100_000));
        let hour = Duration::from_secs(3600);
        assert!(!store.reminded(&a, hour).unwrap());
        store.mark_reminded(&a, &[hour], at(0)).unwrap();
        assert!(store.reminded(&a, hour).unwrap());
        a.due = Some(at(200_000));
        assert!(!store.reminded(&a, hour).unwrap(), "a new due date re-arms");
    }
}
