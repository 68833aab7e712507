//! What hearth fetched itself (a course's files): which version of each it
//! keeps, so a file is read again only when its site changes it.
//!
//! `fetched` has a row per file per scope: its origin (`lms:<source>`), the
//! site's key and version, its size, and the document it became (none when
//! it could not be read: that version is not fetched again either). A new
//! version replaces the document of the old one.

use rusqlite::{Connection, OptionalExtension, params};

use super::{DocumentError, DocumentStore};

pub(super) fn v2(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS fetched (
             scope TEXT NOT NULL,
             origin TEXT NOT NULL,
             key TEXT NOT NULL,
             version TEXT NOT NULL,
             bytes INTEGER NOT NULL,
             document INTEGER,
             PRIMARY KEY (scope, origin, key)
         );",
    )
}

/// One fetched file, as recorded.
#[derive(Debug, Clone, Copy)]
pub struct Fetch<'a> {
    pub scope: &'a str,
    pub origin: &'a str,
    pub key: &'a str,
    pub version: &'a str,
}

impl DocumentStore {
    /// The version of `origin`'s file `key` kept (or refused) under `scope`.
    pub fn fetched_version(
        &self,
        scope: &str,
        origin: &str,
        key: &str,
    ) -> Result<Option<String>, DocumentError> {
        self.conn()
            .query_row(
                "SELECT version FROM fetched WHERE scope = ?1 AND origin = ?2 AND key = ?3",
                params![scope, origin, key],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The bytes of `origin`'s files whose documents are still kept.
    pub fn fetched_bytes(&self, scope: &str, origin: &str) -> Result<u64, DocumentError> {
        self.conn()
            .query_row(
                "SELECT coalesce(sum(f.bytes), 0) FROM fetched f JOIN documents d ON d.id = f.document
                 WHERE f.scope = ?1 AND f.origin = ?2",
                params![scope, origin],
                |r| r.get::<_, i64>(0),
            )
            .map(|b| b.max(0) as u64)
            .map_err(|e| self.err(e))
    }

    /// Records that `fetch` became `document` (`None`: not readable). The
    /// document of its previous version goes, unless something else still
    /// holds it.
    pub fn record_fetched(
        &self,
        fetch: Fetch<'_>,
        bytes: u64,
        document: Option<i64>,
    ) -> Result<(), DocumentError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let Fetch {
            scope,
            origin,
            key,
            version,
        } = fetch;
        let before: Option<Option<i64>> = tx
            .query_row(
                "SELECT document FROM fetched WHERE scope = ?1 AND origin = ?2 AND key = ?3",
                params![scope, origin, key],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        tx.execute(
            "INSERT OR REPLACE INTO fetched (scope, origin, key, version, bytes, document)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![scope, origin, key, version, bytes as i64, document],
        )
        .map_err(|e| self.err(e))?;
        if let Some(old) = before.flatten().filter(|old| Some(*old) != document) {
            let held: i64 = tx
                .query_row(
                    "SELECT count(*) FROM fetched WHERE document = ?1",
                    params![old],
                    |r| r.get(0),
                )
                .map_err(|e| self.err(e))?;
            if held == 0 {
                tx.execute(
                    "DELETE FROM documents WHERE id = ?1 AND source = ?2",
                    params![old, origin],
                )
                .map_err(|e| self.err(e))?;
                tx.execute(
                    "DELETE FROM chunks WHERE document = ?1 AND NOT EXISTS (SELECT 1 FROM documents WHERE id = ?1)",
                    params![old],
                )
                .map_err(|e| self.err(e))?;
            }
        }
        tx.commit().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Extracted, Kind};

    fn doc(text: &str) -> Extracted {
        Extracted {
            kind: Kind::Text,
            pages: vec![text.to_string()],
            cut: false,
        }
    }

    #[test]
    fn a_new_version_replaces_the_old_document_and_the_same_one_is_known() {
        let dir = tempfile::tempdir().unwrap();
        let store = DocumentStore::open(&dir.path().join("d.sqlite3")).unwrap();
        let f = |version| Fetch {
            scope: "telegram:42",
            origin: "lms:uni",
            key: "file:1",
            version,
        };
        assert_eq!(
            store
                .fetched_version("telegram:42", "lms:uni", "file:1")
                .unwrap(),
            None
        );
        let (one, _) = store
            .add(
                "telegram:42",
                "syllabus.pdf",
                "lms:uni",
                &doc("late work loses points"),
                1,
            )
            .unwrap();
        store.record_fetched(f("1:10"), 10, Some(one)).unwrap();
        assert_eq!(
            store
                .fetched_version("telegram:42", "lms:uni", "file:1")
                .unwrap()
                .as_deref(),
            Some("1:10")
        );
        assert_eq!(store.fetched_bytes("telegram:42", "lms:uni").unwrap(), 10);
        // Another person's scope knows nothing of it.
        assert_eq!(
            store
                .fetched_version("telegram:43", "lms:uni", "file:1")
                .unwrap(),
            None
        );
        let (two, _) = store
            .add(
                "telegram:42",
                "syllabus.pdf",
                "lms:uni",
                &doc("late work is refused"),
                2,
            )
            .unwrap();
        store.record_fetched(f("2:12"), 12, Some(two)).unwrap();
        let ids: Vec<i64> = store
            .list(&["telegram:42"])
            .unwrap()
            .iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(ids, vec![two], "the old version went");
        assert!(
            store
                .search(&["telegram:42"], "points", None, 5)
                .unwrap()
                .is_empty()
        );
        // A file the person also sent is theirs: a new version leaves it.
        let (sent, _) = store
            .add("telegram:42", "notes.txt", "sent", &doc("my notes"), 3)
            .unwrap();
        store.record_fetched(f("3:8"), 8, Some(sent)).unwrap();
        store.record_fetched(f("4:8"), 8, None).unwrap();
        assert!(
            store
                .list(&["telegram:42"])
                .unwrap()
                .iter()
                .any(|d| d.id == sent)
        );
        assert_eq!(store.fetched_bytes("telegram:42", "lms:uni").unwrap(), 0);
    }
}
