//! The SQLite memory store: entries in a table, searched through FTS5.
//!
//! `memories` holds the entries, unique by (scope, key); `memories_fts` is an
//! external-content FTS5 index over their text, kept in step by triggers.
//! Recall ranks with FTS5's `bm25()` and reports a relevance in 0..1 (see
//! [`relevance`]). The connection sits behind a mutex: every call is one
//! short statement, and the file is shared with the `hearth memory` CLI
//! (WAL, busy timeout).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::entry::{Category, MemoryEntry, Recalled};
use super::meaning::Embed;
use super::query;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("memory database {}: {source}; fix: check that the data dir is writable (`[data] dir`)", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Open(#[from] crate::storage::OpenError),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Meaning(#[from] super::meaning::EmbedError),
}

/// `memory.sqlite3`'s schema.
pub const FILE: crate::storage::Schema = crate::storage::Schema {
    name: "memory",
    pragmas: "",
    steps: &[v1, super::vectors::v2],
};

/// The tables as of the first release that kept versions (idempotent).
fn v1(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(SCHEMA)
}

const SCHEMA: &str = "
                 CREATE TABLE IF NOT EXISTS memories (
                     id INTEGER PRIMARY KEY AUTOINCREMENT,
                     key TEXT NOT NULL,
                     scope TEXT NOT NULL,
                     content TEXT NOT NULL,
                     category TEXT NOT NULL,
                     created INTEGER NOT NULL,
                     updated INTEGER NOT NULL,
                     UNIQUE (scope, key)
                 );
                 CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
                     content, content = 'memories', content_rowid = 'id'
                 );
                 CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
                     INSERT INTO memories_fts (rowid, content) VALUES (new.id, new.content);
                 END;
                 CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
                     INSERT INTO memories_fts (memories_fts, rowid, content)
                         VALUES ('delete', old.id, old.content);
                 END;
                 CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
                     INSERT INTO memories_fts (memories_fts, rowid, content)
                         VALUES ('delete', old.id, old.content);
                     INSERT INTO memories_fts (rowid, content) VALUES (new.id, new.content);
                 END;";

pub struct MemoryStore {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// Finds entries by meaning too, when an embedding model is loaded
    /// (see [`super::hybrid`]).
    pub(super) meaning: Option<Arc<dyn Embed>>,
}

/// How many FTS candidates are ranked per result asked for.
const CANDIDATES_PER_RESULT: usize = 4;

impl MemoryStore {
    /// The database file inside a data dir.
    pub fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join("memory.sqlite3")
    }

    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, MemoryError> {
        Ok(Self {
            conn: Mutex::new(crate::storage::open(path, &FILE)?),
            path: path.to_path_buf(),
            meaning: None,
        })
    }

    /// Recall by meaning as well as by words, with vectors from `model`.
    pub fn with_meaning(mut self, model: Arc<dyn Embed>) -> Self {
        self.meaning = Some(model);
        self
    }

    /// Stores `content` under (`scope`, `key`), replacing an entry with the
    /// same key (its `created` time is kept).
    pub fn store(
        &self,
        scope: &str,
        key: &str,
        content: &str,
        category: Category,
    ) -> Result<(), MemoryError> {
        if key.trim().is_empty() {
            return Err(MemoryError::Invalid(
                "a memory needs a non-empty key".into(),
            ));
        }
        if content.trim().is_empty() {
            return Err(MemoryError::Invalid("a memory needs some content".into()));
        }
        let now = chrono::Utc::now().timestamp();
        self.with(|c| {
            c.execute(
                "INSERT INTO memories (key, scope, content, category, created, updated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                 ON CONFLICT (scope, key) DO UPDATE SET
                     content = excluded.content,
                     category = excluded.category,
                     updated = excluded.updated",
                params![key, scope, content, category.as_str(), now],
            )
            .map(|_| ())
        })
    }

    /// Stores `content` under `key` unless another memory holds the key:
    /// then under `key` with a unique suffix. Never replaces anything; the
    /// same content stored twice under one key is kept once. The key used.
    pub fn store_new(
        &self,
        scope: &str,
        key: &str,
        content: &str,
        category: Category,
    ) -> Result<String, MemoryError> {
        let same: Option<String> = self.with(|c| {
            c.query_row(
                "SELECT key FROM memories WHERE scope = ?1 AND content = ?3
                     AND (key = ?2 OR substr(key, 1, length(?2) + 1) = ?2 || '~')",
                params![scope, key, content],
                |r| r.get(0),
            )
            .optional()
        })?;
        if let Some(same) = same {
            return Ok(same);
        }
        if self.get(scope, key)?.is_some() {
            let unique = format!("{key}~{}", uuid::Uuid::new_v4().simple());
            tracing::warn!(key, "a memory already has this key; saving under {unique}");
            self.store(scope, &unique, content, category)?;
            return Ok(unique);
        }
        self.store(scope, key, content, category)?;
        Ok(key.to_string())
    }

    /// Up to `limit` entries of `scope` that share words with `query`, or
    /// (with an embedding model) mean what it means, the most relevant
    /// first. Any text is a valid query.
    pub fn recall(
        &self,
        query_text: &str,
        limit: usize,
        scope: &str,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let asked = self.asked(query_text);
        self.recall_with(query_text, asked.as_deref(), limit, scope)
    }

    /// Recall by words only (no embedding model, or an empty question).
    pub(super) fn recall_by_words(
        &self,
        query_text: &str,
        limit: usize,
        scope: &str,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let mut found = self.by_words(query_text, limit, scope)?;
        found.truncate(limit);
        Ok(found.into_iter().map(|(_, r)| r).collect())
    }

    /// Entries of `scope` that share words with `query`, with their row
    /// ids, the most relevant first: up to [`CANDIDATES_PER_RESULT`] for
    /// each of `limit`.
    pub(super) fn by_words(
        &self,
        query_text: &str,
        limit: usize,
        scope: &str,
    ) -> Result<Vec<(i64, Recalled)>, MemoryError> {
        let terms = query::terms(query_text);
        let Some(expression) = query::fts_expression(&terms) else {
            return Ok(Vec::new());
        };
        let candidates = limit.saturating_mul(CANDIDATES_PER_RESULT).max(limit) as i64;
        let rows = self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT m.key, m.content, m.category, m.scope, m.created, m.updated,
                        bm25(memories_fts), m.id
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                 WHERE memories_fts MATCH ?1 AND m.scope = ?2
                 ORDER BY bm25(memories_fts) LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![expression, scope, candidates], |row| {
                Ok((entry_from_row(row)?, row.get::<_, f64>(6)?, row.get(7)?))
            })?;
            rows.collect::<Result<Vec<_>, _>>()
        })?;
        let mut found: Vec<(i64, Recalled)> = rows
            .into_iter()
            .filter_map(|(entry, bm25, id)| {
                let entry = entry?;
                let score = relevance(query::coverage(&terms, &entry.content), bm25);
                Some((id, Recalled { entry, score }))
            })
            .collect();
        found.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
        Ok(found)
    }

    /// Removes (`scope`, `key`); whether it existed.
    pub fn forget(&self, scope: &str, key: &str) -> Result<bool, MemoryError> {
        self.with(|c| {
            c.execute(
                "DELETE FROM memories WHERE scope = ?1 AND key = ?2",
                params![scope, key],
            )
        })
        .map(|n| n > 0)
    }

    /// One entry by key.
    pub fn get(&self, scope: &str, key: &str) -> Result<Option<MemoryEntry>, MemoryError> {
        self.with(|c| {
            c.query_row(
                "SELECT key, content, category, scope, created, updated FROM memories
                 WHERE scope = ?1 AND key = ?2",
                params![scope, key],
                entry_from_row,
            )
            .optional()
        })
        .map(Option::flatten)
    }

    /// Entries, newest first, optionally of one scope and one category.
    pub fn list(
        &self,
        scope: Option<&str>,
        category: Option<Category>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let rows = self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT key, content, category, scope, created, updated FROM memories
                 WHERE (?1 IS NULL OR scope = ?1) AND (?2 IS NULL OR category = ?2)
                 ORDER BY updated DESC, id DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(
                params![scope, category.map(Category::as_str), limit as i64],
                entry_from_row,
            )?;
            rows.collect::<Result<Vec<_>, _>>()
        })?;
        Ok(rows.into_iter().flatten().collect())
    }

    /// Entries of any scope whose text holds `text` (any case; all when
    /// empty), newest first, at most `limit`.
    pub fn find(&self, text: &str, limit: usize) -> Result<Vec<MemoryEntry>, MemoryError> {
        let rows = self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT key, content, category, scope, created, updated FROM memories
                 WHERE ?1 = '' OR instr(lower(content), lower(?1)) > 0
                 ORDER BY updated DESC, id DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![text, limit as i64], entry_from_row)?;
            rows.collect::<Result<Vec<_>, _>>()
        })?;
        Ok(rows.into_iter().flatten().collect())
    }

    /// Every scope that holds an entry.
    pub fn scopes(&self) -> Result<Vec<String>, MemoryError> {
        self.with(|c| {
            let mut stmt =
                c.prepare_cached("SELECT DISTINCT scope FROM memories ORDER BY scope")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect()
        })
    }

    pub(super) fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, MemoryError> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        f(&conn).map_err(|source| MemoryError::Sqlite {
            path: self.path.clone(),
            source,
        })
    }
}

/// Relevance in 0..1 from the share of query words an entry contains and
/// its BM25 rank. BM25 alone is not comparable across stores: with few
/// entries its IDF collapses towards zero, so a store holding one fact
/// would never recall it. Word coverage carries most of the weight and
/// BM25 (negative, lower is better; mapped by r/(1+r)) orders the rest.
pub fn relevance(coverage: f64, bm25: f64) -> f64 {
    let r = (-bm25).max(0.0);
    let ranked = if r.is_finite() { r / (1.0 + r) } else { 1.0 };
    (0.6 * coverage.clamp(0.0, 1.0) + 0.4 * ranked).clamp(0.0, 1.0)
}

/// A row as an entry; `None` (logged) when its category is unknown, so one
/// bad row never hides the others.
pub(super) fn entry_from_row(
    row: &rusqlite::Row<'_>,
) -> Result<Option<MemoryEntry>, rusqlite::Error> {
    let category: String = row.get(2)?;
    let Ok(category) = category.parse() else {
        tracing::warn!(category, "skipping a memory with an unknown category");
        return Ok(None);
    };
    Ok(Some(MemoryEntry {
        key: row.get(0)?,
        content: row.get(1)?,
        category,
        scope: row.get(3)?,
        created: row.get(4)?,
        updated: row.get(5)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open() -> (tempfile::TempDir, MemoryStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::open(&MemoryStore::path_in(dir.path())).unwrap();
        (dir, store)
    }

    #[test]
    fn recall_finds_facts_by_keyword_with_scores() {
        let (_dir, m) = open();
        m.store(
            "u1",
            "colour",
            "My favourite colour is green",
            Category::Core,
        )
        .unwrap();
        m.store("u1", "dog", "I have a dog called Rex", Category::Core)
            .unwrap();
        m.store(
            "u1",
            "food",
            "Favourite food: kimchi stew",
            Category::Custom,
        )
        .unwrap();
        let hits = m.recall("what's my favourite colour?", 5, "u1").unwrap();
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert_eq!(hits[0].entry.key, "colour");
        assert_eq!(hits[1].entry.key, "food");
        assert!(hits[0].score > hits[1].score, "{hits:?}");
        for h in &hits {
            assert!((0.0..=1.0).contains(&h.score), "{h:?}");
        }
        assert!(hits[0].score >= 0.6, "both words present: {hits:?}");
        assert!(hits[1].score < 0.6, "one word of two: {hits:?}");
        assert_eq!(m.recall("rex", 5, "u1").unwrap()[0].entry.key, "dog");
        assert!(m.recall("pizza", 5, "u1").unwrap().is_empty());
    }

    #[test]
    fn no_input_breaks_the_query() {
        let (_dir, m) = open();
        m.store(
            "u",
            "k",
            "quotes \" and stars * and NEAR(a b)",
            Category::Custom,
        )
        .unwrap();
        for q in [
            "\"",
            "\"unbalanced",
            "a AND",
            "OR",
            "NOT x",
            "(",
            "*",
            "col:x",
            "^start",
            "-",
            "",
            "NEAR(",
            "'; DROP TABLE memories; --",
            "🙂",
        ] {
            assert!(m.recall(q, 5, "u").is_ok(), "{q}");
        }
        assert_eq!(m.recall("NEAR stars", 5, "u").unwrap().len(), 1);
    }

    #[test]
    fn find_looks_in_every_scope_by_plain_text() {
        let (_dir, m) = open();
        m.store("alice", "a", "Locker code 4411", Category::Core)
            .unwrap();
        m.store("bob", "b", "likes tea", Category::Core).unwrap();
        let scopes = |q: &str| -> Vec<String> {
            m.find(q, 10)
                .unwrap()
                .into_iter()
                .map(|e| e.scope)
                .collect()
        };
        assert_eq!(scopes("locker"), ["alice"]);
        assert_eq!(scopes("%"), Vec::<String>::new(), "not a pattern");
        assert_eq!(scopes("").len(), 2);
    }

    #[test]
    fn scopes_are_separate_and_store_replaces_by_key() {
        let (_dir, m) = open();
        m.store("alice", "pw", "alice's locker code is 4411", Category::Core)
            .unwrap();
        m.store("bob", "pw", "bob's locker code is 9922", Category::Core)
            .unwrap();
        let a = m.recall("locker code", 5, "alice").unwrap();
        assert_eq!(a.len(), 1);
        assert!(a[0].entry.content.contains("4411"));
        m.store("alice", "pw", "alice's locker code is 1234", Category::Core)
            .unwrap();
        let a = m.recall("locker", 5, "alice").unwrap();
        assert_eq!(a.len(), 1, "replaced, not added");
        assert!(a[0].entry.content.contains("1234"));
        assert!(
            m.recall("4411", 5, "alice").unwrap().is_empty(),
            "old text unindexed"
        );
        assert!(m.forget("alice", "pw").unwrap());
        assert!(!m.forget("alice", "pw").unwrap());
        assert!(m.recall("locker", 5, "alice").unwrap().is_empty());
        assert_eq!(m.list(None, None, 10).unwrap().len(), 1);
        assert_eq!(
            m.list(Some("bob"), Some(Category::Core), 10).unwrap().len(),
            1
        );
        assert!(
            m.list(Some("bob"), Some(Category::Daily), 10)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn entries_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = MemoryStore::path_in(dir.path());
        MemoryStore::open(&path)
            .unwrap()
            .store(
                "s",
                "k",
                "the boiler was serviced in March",
                Category::Daily,
            )
            .unwrap();
        let m = MemoryStore::open(&path).unwrap();
        assert_eq!(m.recall("boiler", 1, "s").unwrap().len(), 1);
        assert_eq!(m.get("s", "k").unwrap().unwrap().category, Category::Daily);
    }

    #[test]
    fn empty_keys_and_contents_are_refused() {
        let (_dir, m) = open();
        assert!(matches!(
            m.store("s", " ", "x", Category::Custom),
            Err(MemoryError::Invalid(_))
        ));
        assert!(matches!(
            m.store("s", "k", "", Category::Custom),
            Err(MemoryError::Invalid(_))
        ));
    }
}
