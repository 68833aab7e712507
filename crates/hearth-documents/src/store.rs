//! `documents.sqlite3`: the documents people sent, by person, in pieces.
//!
//! `documents` holds one row per file per scope (the same file sent again
//! is the same document); `chunks` its pieces with their pages, indexed by
//! the external-content FTS5 table `chunks_fts` (kept in step by triggers).
//! Every read names the scopes it may see, so nobody's documents are found
//! for another person.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::{Extracted, chunk};

#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("documents database {}: {source}; fix: check that the data dir is writable (`[data] dir`)", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Open(#[from] hearth_store::storage::OpenError),
    #[error(transparent)]
    Meaning(#[from] hearth_core::embed::EmbedError),
}

/// `documents.sqlite3`'s schema.
pub const FILE: hearth_store::storage::Schema = hearth_store::storage::Schema {
    name: "documents",
    pragmas: "",
    steps: &[v1, super::fetched::v2, super::meaning::v3],
};

fn v1(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS documents (
             id INTEGER PRIMARY KEY AUTOINCREMENT,
             scope TEXT NOT NULL,
             name TEXT NOT NULL,
             kind TEXT NOT NULL,
             pages INTEGER NOT NULL,
             chars INTEGER NOT NULL,
             cut INTEGER NOT NULL,
             sha256 TEXT NOT NULL,
             source TEXT NOT NULL,
             added INTEGER NOT NULL,
             UNIQUE (scope, sha256)
         );
         CREATE TABLE IF NOT EXISTS chunks (
             id INTEGER PRIMARY KEY AUTOINCREMENT,
             document INTEGER NOT NULL,
             seq INTEGER NOT NULL,
             page INTEGER NOT NULL,
             text TEXT NOT NULL
         );
         CREATE INDEX IF NOT EXISTS chunks_by_document ON chunks (document, seq);
         CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
             text, content = 'chunks', content_rowid = 'id'
         );
         CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
             INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
         END;
         CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
             INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
         END;",
    )
}

/// A document as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub id: i64,
    pub scope: String,
    pub name: String,
    pub kind: String,
    pub pages: usize,
    pub chars: usize,
    /// Only its first part was read (over a limit).
    pub cut: bool,
    /// How it came: `sent`, `added`, or `lms:<source>`.
    pub source: String,
    /// Unix seconds.
    pub added: i64,
}

/// A piece found for a question.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The piece's row.
    pub chunk: i64,
    pub document: i64,
    pub name: String,
    pub page: usize,
    pub text: String,
    /// Lower is better: FTS5's BM25 rank, or the negated fused score when
    /// found by meaning too.
    pub rank: f64,
    /// How near its meaning is to the question's (cosine), when it has a
    /// vector and the search had a model.
    pub similarity: Option<f32>,
}

/// Pieces of about this many characters are stored.
pub const CHUNK_CHARS: usize = 1_200;

pub struct DocumentStore {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// The embedding model, when documents are found by meaning too.
    pub(crate) meaning: Option<std::sync::Arc<dyn hearth_core::embed::Embed>>,
}

impl DocumentStore {
    /// The database file inside a data dir.
    pub fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join("documents.sqlite3")
    }

    pub fn open(path: &Path) -> Result<Self, DocumentError> {
        Ok(Self {
            conn: Mutex::new(hearth_store::storage::open(path, &FILE)?),
            path: path.to_path_buf(),
            meaning: None,
        })
    }

    pub(crate) fn err(&self, source: rusqlite::Error) -> DocumentError {
        DocumentError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    pub(crate) fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `doc` under `scope`; the same file kept there before is that
    /// document again. Its id, and whether it is new.
    pub fn add(
        &self,
        scope: &str,
        name: &str,
        source: &str,
        doc: &Extracted,
        now: i64,
    ) -> Result<(i64, bool), DocumentError> {
        let mut hash = Sha256::new();
        for page in &doc.pages {
            hash.update(page.as_bytes());
            hash.update(b"\x0c");
        }
        let sha = hearth_core::hex::hex(&hash.finalize());
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let known: Option<i64> = tx
            .query_row(
                "SELECT id FROM documents WHERE scope = ?1 AND sha256 = ?2",
                params![scope, sha],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        if let Some(id) = known {
            return Ok((id, false));
        }
        let chars: usize = doc.pages.iter().map(|p| p.chars().count()).sum();
        tx.execute(
            "INSERT INTO documents (scope, name, kind, pages, chars, cut, sha256, source, added)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                scope,
                name,
                doc.kind.arg(),
                doc.pages.len() as i64,
                chars as i64,
                doc.cut,
                sha,
                source,
                now
            ],
        )
        .map_err(|e| self.err(e))?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare("INSERT INTO chunks (document, seq, page, text) VALUES (?1, ?2, ?3, ?4)")
                .map_err(|e| self.err(e))?;
            for c in chunk::pages(&doc.pages, CHUNK_CHARS) {
                insert
                    .execute(params![id, c.seq as i64, c.page as i64, c.text])
                    .map_err(|e| self.err(e))?;
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok((id, true))
    }

    /// Every scope that has a document.
    pub fn scopes(&self) -> Result<Vec<String>, DocumentError> {
        let conn = self.conn();
        let mut q = conn
            .prepare("SELECT DISTINCT scope FROM documents ORDER BY scope")
            .map_err(|e| self.err(e))?;
        let rows = q.query_map([], |r| r.get(0)).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The documents of `scopes`, newest first.
    pub fn list(&self, scopes: &[&str]) -> Result<Vec<Listed>, DocumentError> {
        let conn = self.conn();
        let mut out = Vec::new();
        for scope in scopes {
            let mut q = conn
                .prepare(
                    "SELECT id, scope, name, kind, pages, chars, cut, added, source FROM documents
                     WHERE scope = ?1 ORDER BY added DESC, id DESC",
                )
                .map_err(|e| self.err(e))?;
            let rows = q
                .query_map(params![scope], |r| {
                    Ok(Listed {
                        id: r.get(0)?,
                        scope: r.get(1)?,
                        name: r.get(2)?,
                        kind: r.get(3)?,
                        pages: r.get::<_, i64>(4)? as usize,
                        chars: r.get::<_, i64>(5)? as usize,
                        cut: r.get(6)?,
                        added: r.get(7)?,
                        source: r.get(8)?,
                    })
                })
                .map_err(|e| self.err(e))?;
            for row in rows {
                out.push(row.map_err(|e| self.err(e))?);
            }
        }
        out.sort_by(|a, b| b.added.cmp(&a.added).then(b.id.cmp(&a.id)));
        Ok(out)
    }

    /// The pieces of `scopes`' documents (or of one, `only`) that best
    /// answer `question`, best first, at most `limit`: by meaning and words
    /// with an embedding model ([`super::meaning`]), by words without.
    pub fn search(
        &self,
        scopes: &[&str],
        question: &str,
        only: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Found>, DocumentError> {
        if self.meaning.is_none() {
            return self.by_words(scopes, question, only, limit);
        }
        let words = self.by_words(scopes, question, only, limit * 4)?;
        match self.fuse(scopes, question, only, words.clone(), limit)? {
            Some(fused) => Ok(fused),
            None => Ok(words.into_iter().take(limit).collect()),
        }
    }

    /// The pieces that best match `question`'s words.
    fn by_words(
        &self,
        scopes: &[&str],
        question: &str,
        only: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Found>, DocumentError> {
        let Some(query) = fts_query(question) else {
            return Ok(Vec::new());
        };
        let conn = self.conn();
        let mut out = Vec::new();
        for scope in scopes {
            let mut q = conn
                .prepare(
                    "SELECT d.id, d.name, c.page, c.text, bm25(chunks_fts) AS rank, c.id
                     FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
                     JOIN documents d ON d.id = c.document
                     WHERE chunks_fts MATCH ?1 AND d.scope = ?2 AND (?3 IS NULL OR d.id = ?3)
                     ORDER BY rank LIMIT ?4",
                )
                .map_err(|e| self.err(e))?;
            let rows = q
                .query_map(params![query, scope, only, limit as i64], |r| {
                    Ok(Found {
                        chunk: r.get(5)?,
                        document: r.get(0)?,
                        name: r.get(1)?,
                        page: r.get::<_, i64>(2)? as usize,
                        text: r.get(3)?,
                        rank: r.get(4)?,
                        similarity: None,
                    })
                })
                .map_err(|e| self.err(e))?;
            for row in rows {
                out.push(row.map_err(|e| self.err(e))?);
            }
        }
        out.sort_by(|a, b| a.rank.total_cmp(&b.rank));
        out.truncate(limit);
        Ok(out)
    }

    /// The first pieces of document `id` in `scopes`, in order, up to
    /// `chars` characters: a short document whole.
    pub fn opening(
        &self,
        scopes: &[&str],
        id: i64,
        chars: usize,
    ) -> Result<Vec<Found>, DocumentError> {
        let conn = self.conn();
        let mut name = None;
        for scope in scopes {
            name = conn
                .query_row(
                    "SELECT name FROM documents WHERE id = ?1 AND scope = ?2",
                    params![id, scope],
                    |r| r.get::<_, String>(0),
                )
                .optional()
                .map_err(|e| self.err(e))?;
            if name.is_some() {
                break;
            }
        }
        let Some(name) = name else {
            return Ok(Vec::new());
        };
        let mut q = conn
            .prepare("SELECT page, text, id FROM chunks WHERE document = ?1 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let rows = q
            .query_map(params![id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        let mut used = 0;
        for row in rows {
            let (page, text, chunk) = row.map_err(|e| self.err(e))?;
            used += text.chars().count();
            if used > chars && !out.is_empty() {
                break;
            }
            out.push(Found {
                chunk,
                document: id,
                name: name.clone(),
                page: page as usize,
                text,
                rank: 0.0,
                similarity: None,
            });
        }
        Ok(out)
    }

    /// Forgets document `id` if it is one of `scopes`'; whether it was.
    pub fn forget(&self, scopes: &[&str], id: i64) -> Result<bool, DocumentError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let mut gone = 0;
        for scope in scopes {
            gone += tx
                .execute(
                    "DELETE FROM documents WHERE id = ?1 AND scope = ?2",
                    params![id, scope],
                )
                .map_err(|e| self.err(e))?;
        }
        if gone > 0 {
            tx.execute("DELETE FROM chunks WHERE document = ?1", params![id])
                .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(gone > 0)
    }
}

/// Forgets the oldest documents until the text of those left is at most
/// `max_bytes` (`[retention] documents_mb`), in the sweep's transaction on
/// `c`; how many went. Their pieces go with them.
pub fn forget_beyond(c: &Connection, max_bytes: u64) -> rusqlite::Result<usize> {
    let mut q = c.prepare(
        "SELECT d.id, (SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM chunks WHERE document = d.id)
         FROM documents d ORDER BY d.added DESC, d.id DESC",
    )?;
    let sizes: Vec<(i64, i64)> = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut kept: u64 = 0;
    let mut gone = 0;
    for (id, bytes) in sizes {
        kept += bytes.max(0) as u64;
        if kept > max_bytes {
            c.execute("DELETE FROM chunks WHERE document = ?1", params![id])?;
            c.execute("DELETE FROM documents WHERE id = ?1", params![id])?;
            gone += 1;
        }
    }
    Ok(gone)
}

/// Words that say nothing about what a question is after.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "about", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "me", "my", "of", "on", "or", "says", "say", "tell", "that", "the",
    "this", "to", "was", "what", "when", "where", "which", "who", "why", "with", "you", "your",
    "document", "file", "page", "pdf",
];

/// The words of `text` a search looks for: lower case, without the
/// words that say nothing, each once, at most 32.
pub fn words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
    {
        if !STOPWORDS.contains(&w.as_str()) && !words.contains(&w) && words.len() < 32 {
            words.push(w);
        }
    }
    words
}

/// `question`'s words as an FTS5 query that cannot fail to parse (each word
/// quoted, any of them may match), or `None` when it has no words.
fn fts_query(question: &str) -> Option<String> {
    let words = words(question);
    (!words.is_empty()).then(|| {
        words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kind;

    fn doc(pages: &[&str]) -> Extracted {
        Extracted {
            kind: Kind::Pdf,
            pages: pages.iter().map(|p| p.to_string()).collect(),
            cut: false,
        }
    }

    #[test]
    fn a_piece_is_found_by_its_words_with_its_page_and_only_in_its_scope() {
        let dir = tempfile::tempdir().unwrap();
        let store = DocumentStore::open(&DocumentStore::path_in(dir.path())).unwrap();
        let syllabus = doc(&[
            "Welcome to Statistics.",
            "Late submissions lose ten percent per day.",
        ]);
        let (id, new) = store
            .add("telegram:1", "syllabus.pdf", "sent", &syllabus, 100)
            .unwrap();
        assert!(new);
        assert_eq!(
            store
                .add("telegram:1", "again.pdf", "sent", &syllabus, 101)
                .unwrap(),
            (id, false)
        );
        let found = store
            .search(
                &["telegram:1"],
                "What is the late submission policy?",
                None,
                5,
            )
            .unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].name.as_str(), found[0].page), ("syllabus.pdf", 2));
        // Another person's question never sees it; the control above did.
        assert!(
            store
                .search(&["telegram:2"], "late submission", None, 5)
                .unwrap()
                .is_empty()
        );
        assert!(store.list(&["telegram:2"]).unwrap().is_empty());
        assert!(!store.forget(&["telegram:2"], id).unwrap());
        assert!(store.forget(&["telegram:1"], id).unwrap());
        assert!(
            store
                .search(&["telegram:1"], "late submission", None, 5)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn past_the_cap_the_oldest_documents_go_with_their_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let path = DocumentStore::path_in(dir.path());
        let store = DocumentStore::open(&path).unwrap();
        let page = "word ".repeat(200);
        for (i, name) in ["old.txt", "mid.txt", "new.txt"].iter().enumerate() {
            let text = format!("{name} {page}");
            store
                .add("s", name, "sent", &doc(&[&text]), i as i64)
                .unwrap();
        }
        let c = hearth_store::storage::open(&path, &FILE).unwrap();
        // Room for two of the three (each about 1,008 bytes).
        assert_eq!(forget_beyond(&c, 2_100).unwrap(), 1);
        let names: Vec<String> = store
            .list(&["s"])
            .unwrap()
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["new.txt", "mid.txt"]);
        assert!(store.search(&["s"], "old", None, 5).unwrap().is_empty());
        let pieces: i64 = c
            .query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(pieces, 2);
        assert_eq!(forget_beyond(&c, 2_100).unwrap(), 0);
    }

    #[test]
    fn questions_of_any_shape_make_a_query_that_parses() {
        let dir = tempfile::tempdir().unwrap();
        let store = DocumentStore::open(&DocumentStore::path_in(dir.path())).unwrap();
        store
            .add("s", "a.txt", "sent", &doc(&["NEAR AND OR NOT * \" ( )"]), 1)
            .unwrap();
        for q in ["\"", "NEAR(", "a AND", "*", "", "what is the", "OR OR"] {
            store.search(&["s"], q, None, 3).unwrap();
        }
    }
}
