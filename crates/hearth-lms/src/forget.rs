//! Forgetting by `[retention] lms_days`: items gone from their site that
//! long, and reminders for dates that long past. Items still on the site
//! are kept whatever their age: forgetting one would announce it again.

use rusqlite::{Connection, params};

/// Deletes what is older than `days` before `now`; how many rows went.
pub fn forget(conn: &Connection, days: u32, now: i64) -> rusqlite::Result<usize> {
    let before = now - i64::from(days) * 86_400;
    let items = conn.execute(
        "DELETE FROM items WHERE present = 0 AND coalesce(last_seen, first_seen) < ?1",
        params![before],
    )?;
    let reminders = conn.execute("DELETE FROM reminders WHERE due < ?1", params![before])?;
    Ok(items + reminders)
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};

    use crate::{ItemKind, LmsItem, SeenStore};

    fn item(id: &str) -> LmsItem {
        LmsItem::new("school", id, ItemKind::Assignment, format!("Essay {id}"))
    }

    #[test]
    fn items_gone_long_ago_are_forgotten_and_present_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeenStore::open_in(dir.path()).unwrap();
        let start = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        store
            .record("school", &[item("a"), item("b")], start, false)
            .unwrap();
        // "a" leaves the site; "b" stays, polled for a year.
        let later = start + Duration::days(365);
        store
            .record("school", &[item("b")], start + Duration::days(1), false)
            .unwrap();
        store.record("school", &[item("b")], later, false).unwrap();
        let conn = rusqlite::Connection::open(dir.path().join("lms.sqlite3")).unwrap();
        // Positive control: within the limit nothing goes.
        assert_eq!(super::forget(&conn, 400, later.timestamp()).unwrap(), 0);
        assert_eq!(super::forget(&conn, 180, later.timestamp()).unwrap(), 1);
        let ids: Vec<String> = conn
            .prepare("SELECT id FROM items")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(ids, ["b"], "the item still on the site stays, however old");
    }
}
