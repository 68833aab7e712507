//! The seen-store's other two tables: the outbox of notices that belong to
//! no single item (the first poll's "tracking N items" line), and each
//! source's last poll, for `hearth lms status`.
//!
//! Both live in `lms.sqlite3` beside the items, so a queued line survives a
//! restart exactly like a pending item does.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::{LmsError, SeenStore};

/// A line waiting in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    pub seq: i64,
    pub source: String,
    pub text: String,
}

/// What the store knows about one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceStatus {
    pub source: String,
    /// The last poll tried, and the last one that worked.
    pub last_poll: Option<DateTime<Utc>>,
    pub last_ok: Option<DateTime<Utc>>,
    /// Why the last poll failed (with its fix); `None` when it worked.
    pub last_error: Option<String>,
    /// What the source skipped on its last good poll (a refused function).
    pub notes: Vec<String>,
    /// Items it listed last time.
    pub tracked: usize,
    /// Notices not yet delivered: new or changed items, outbox lines.
    pub waiting: usize,
}

impl SeenStore {
    /// Remembers how a poll of `source` went: `error` is `None` when it worked.
    pub fn polled(
        &self,
        source: &str,
        now: DateTime<Utc>,
        error: Option<&str>,
        notes: &[String],
    ) -> Result<(), LmsError> {
        let conn = self.lock();
        let done = match error {
            None => conn.execute(
                "INSERT INTO sources (source, last_poll, last_ok, last_error, notes)
                 VALUES (?1, ?2, ?2, NULL, ?3)
                 ON CONFLICT (source) DO UPDATE SET last_poll = ?2, last_ok = ?2,
                     last_error = NULL, notes = ?3",
                params![source, now.timestamp(), notes.join("\n")],
            ),
            Some(error) => conn.execute(
                "INSERT INTO sources (source, last_poll, last_error) VALUES (?1, ?2, ?3)
                 ON CONFLICT (source) DO UPDATE SET last_poll = ?2, last_error = ?3",
                params![source, now.timestamp(), error],
            ),
        };
        done.map(drop).map_err(|e| self.err(e))
    }

    /// Each named source as the store knows it, in the order given.
    pub fn status(&self, sources: &[&str]) -> Result<Vec<SourceStatus>, LmsError> {
        let conn = self.lock();
        let at = |t: Option<i64>| t.and_then(|t| DateTime::from_timestamp(t, 0));
        let mut out = Vec::new();
        for source in sources {
            let row: Option<(i64, Option<i64>, Option<String>, String)> = conn
                .query_row(
                    "SELECT last_poll, last_ok, last_error, notes FROM sources WHERE source = ?1",
                    [source],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .optional()
                .map_err(|e| self.err(e))?;
            let (tracked, waiting): (usize, usize) = conn
                .query_row(
                    "SELECT
                        (SELECT COUNT(*) FROM items WHERE source = ?1 AND present = 1),
                        (SELECT COUNT(*) FROM items WHERE source = ?1 AND present = 1
                            AND notified_hash IS NOT hash)
                        + (SELECT COUNT(*) FROM outbox WHERE source = ?1)",
                    [source],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(|e| self.err(e))?;
            let (last_poll, last_ok, last_error, notes) = match row {
                Some((poll, ok, error, notes)) => (Some(poll), ok, error, notes),
                None => (None, None, None, String::new()),
            };
            out.push(SourceStatus {
                source: source.to_string(),
                last_poll: at(last_poll),
                last_ok: at(last_ok),
                last_error,
                notes: notes.lines().map(str::to_string).collect(),
                tracked,
                waiting,
            });
        }
        Ok(out)
    }

    /// Lines of `source` waiting in the outbox, oldest first.
    pub fn queued(&self, source: &str) -> Result<Vec<Queued>, LmsError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare("SELECT seq, source, text FROM outbox WHERE source = ?1 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([source], |r| {
                Ok(Queued {
                    seq: r.get(0)?,
                    source: r.get(1)?,
                    text: r.get(2)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The outbox line `seq` was delivered.
    pub fn unqueue(&self, seq: i64) -> Result<(), LmsError> {
        self.lock()
            .execute("DELETE FROM outbox WHERE seq = ?1", [seq])
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Whether some occurrence of `series` in `source` was already told.
    pub fn series_told(&self, source: &str, series: &str) -> Result<bool, LmsError> {
        self.lock()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM items WHERE source = ?1
                    AND notified_item IS NOT NULL
                    AND json_extract(notified_item, '$.series') = ?2)",
                params![source, series],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ItemKind, LmsItem};

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap()
    }

    #[test]
    fn a_first_poll_records_the_past_silently_and_queues_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeenStore::open_in(dir.path()).unwrap();
        let mut past = LmsItem::new("s", "1", ItemKind::Assignment, "Old");
        past.due = Some(at(500));
        let mut future = LmsItem::new("s", "2", ItemKind::Assignment, "New");
        future.due = Some(at(5_000));
        let undated = LmsItem::new("s", "3", ItemKind::News, "Undated");
        let items = [past, future, undated];
        let r = store.record("s", &items, at(1_000), true).unwrap();
        assert_eq!((r.first, r.silenced), (true, 1));
        let pending: Vec<String> = store
            .pending("s")
            .unwrap()
            .into_iter()
            .map(|p| p.item.id)
            .collect();
        assert_eq!(pending, ["2", "3"]);
        let queued = store.queued("s").unwrap();
        assert_eq!(queued.len(), 1);
        assert!(queued[0].text.contains("3 items"), "{}", queued[0].text);
        store.polled("s", at(1_000), None, &[]).unwrap();

        // The second poll is no first poll: a past item is pending as usual.
        let mut late = LmsItem::new("s", "4", ItemKind::Assignment, "Late find");
        late.due = Some(at(900));
        let r = store.record("s", &[late], at(2_000), true).unwrap();
        assert_eq!((r.first, r.silenced), (false, 0));
        store.unqueue(queued[0].seq).unwrap();
        assert!(store.queued("s").unwrap().is_empty());
        let status = store.status(&["s", "never"]).unwrap();
        assert_eq!((status[0].tracked, status[0].waiting), (1, 1));
        assert_eq!(status[1].last_poll, None);
    }

    #[test]
    fn a_failed_poll_keeps_the_last_good_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeenStore::open_in(dir.path()).unwrap();
        store
            .polled("s", at(10), None, &["skipped forums".into()])
            .unwrap();
        store
            .polled("s", at(20), Some("network error; fix: check"), &[])
            .unwrap();
        let s = &store.status(&["s"]).unwrap()[0];
        assert_eq!(s.last_poll, Some(at(20)));
        assert_eq!(s.last_ok, Some(at(10)));
        assert_eq!(s.last_error.as_deref(), Some("network error; fix: check"));
        assert_eq!(s.notes, ["skipped forums"]);
    }
}
