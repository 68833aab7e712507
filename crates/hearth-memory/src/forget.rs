//! Forgetting past `[retention] memory_entries`: what was saved from
//! conversations goes first, then daily notes, then custom entries, and
//! core facts last; within each, the least recently updated first.

use rusqlite::{Connection, params};

/// Deletes entries until at most `entries` remain; how many went.
pub fn forget_beyond(conn: &Connection, entries: u32) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM memories WHERE id IN (SELECT id FROM memories
           ORDER BY CASE category WHEN 'conversation' THEN 0 WHEN 'daily' THEN 1
                                  WHEN 'custom' THEN 2 ELSE 3 END, updated, id
           LIMIT max(0, (SELECT count(*) FROM memories) - ?1))",
        params![entries],
    )
}

#[cfg(test)]
mod tests {
    use crate::{Category, MemoryStore};

    #[test]
    fn conversation_entries_go_first_and_core_facts_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = MemoryStore::path_in(dir.path());
        let store = MemoryStore::open(&path).unwrap();
        store
            .store("s", "name", "The user is Ana", Category::Core)
            .unwrap();
        for i in 0..20 {
            store
                .store(
                    "s",
                    &format!("said{i}"),
                    &format!("said {i}"),
                    Category::Conversation,
                )
                .unwrap();
        }
        let conn = rusqlite::Connection::open(&path).unwrap();
        // Positive control: room for everything, nothing goes.
        assert_eq!(super::forget_beyond(&conn, 21).unwrap(), 0);
        assert_eq!(super::forget_beyond(&conn, 5).unwrap(), 16);
        assert!(store.get("s", "name").unwrap().is_some(), "core is kept");
        let mut kept: Vec<String> = store
            .list(None, None, 100)
            .unwrap()
            .into_iter()
            .map(|e| e.key)
            .collect();
        kept.sort();
        assert_eq!(kept, ["name", "said16", "said17", "said18", "said19"]);
        // The full-text index forgot them too.
        let indexed: i64 = conn
            .query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'said'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexed, 4);
    }
}
