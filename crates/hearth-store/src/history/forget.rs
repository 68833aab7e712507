//! Forgetting by `[retention]`: each conversation's oldest messages past
//! its limit, conversations quiet for too long, and the pictures only
//! forgotten messages showed.

use rusqlite::{Connection, params};

/// Keeps the newest `keep` messages of every conversation, forgets every
/// conversation with no message since `days` before `now` (0: none), and
/// the pictures no message shows any more; how many messages went.
pub fn forget(conn: &Connection, keep: usize, days: u32, now: i64) -> rusqlite::Result<usize> {
    let mut gone = conn.execute(
        "DELETE FROM messages WHERE id IN (SELECT id FROM
             (SELECT id, row_number() OVER (PARTITION BY conversation ORDER BY id DESC) AS n
              FROM messages)
           WHERE n > ?1)",
        params![keep as i64],
    )?;
    if days > 0 {
        gone += conn.execute(
            "DELETE FROM messages WHERE conversation IN
                 (SELECT conversation FROM messages GROUP BY conversation HAVING max(created) < ?1)",
            params![now - i64::from(days) * 86_400],
        )?;
    }
    super::pictures::forget_unshown(conn)?;
    Ok(gone)
}

#[cfg(test)]
mod tests {
    use crate::chat::ChatMessage;
    use crate::history::HistoryStore;

    #[test]
    fn long_and_quiet_conversations_are_cut_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = HistoryStore::path_in(dir.path());
        let mut store = HistoryStore::open(&path).unwrap().keeping(100);
        for i in 0..30 {
            store
                .append("long", &[ChatMessage::user(format!("m{i}"))])
                .unwrap();
        }
        store.append("quiet", &[ChatMessage::user("old")]).unwrap();
        store.append("fresh", &[ChatMessage::user("new")]).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE messages SET created = created - 400 * 86400 WHERE conversation = 'quiet'",
            [],
        )
        .unwrap();
        let now = chrono::Utc::now().timestamp();
        // Positive control: limits above what is there forget nothing.
        assert_eq!(super::forget(&conn, 30, 0, now).unwrap(), 0);
        assert_eq!(super::forget(&conn, 10, 365, now).unwrap(), 20 + 1);
        let long = store.load("long", 100).unwrap();
        assert_eq!(long.len(), 10);
        assert_eq!(long[9].content, "m29", "the newest are kept");
        assert!(store.load("quiet", 100).unwrap().is_empty());
        assert_eq!(store.load("fresh", 100).unwrap().len(), 1);
    }
}
