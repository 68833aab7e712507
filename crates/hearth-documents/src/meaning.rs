//! Documents by meaning: vectors beside each piece (`chunk_vectors`,
//! schema step 3), made in the background by the loop every store shares
//! ([`hearth_core::embed::index`]), and a search that weighs what a piece
//! means against the question before the words they share.
//!
//! A piece (about 1,200 characters) is embedded as [`windows`] of a few
//! sentences, and it is as near a question as its nearest window: one
//! vector for the whole piece drowns its one answering sentence in the rest
//! of the page (measured: `tests/documents_meaning.rs`).
//!
//! As for memories: a piece's score is its similarity to the question plus
//! a twentieth of its keyword relevance, so shared words only break
//! near-ties; a piece not embedded yet counts [`MEANING_FLOOR`] for its
//! meaning. A search reads the vectors of the asker's scopes only, and of
//! the loaded model only (a changed model's vectors are dropped and made
//! again). When the model fails, search goes by words and says so in the log.

use std::sync::Arc;

use hearth_core::embed::{BATCH, Backlog, BacklogError, Embed, dot, encode};
use rusqlite::{Connection, params};

use super::store::{DocumentError, DocumentStore, Found};

/// How much keyword relevance (0..1) adds to a meaning score.
const KEYWORD_WEIGHT: f32 = 0.05;
/// Pieces less similar than this are not brought in by meaning alone.
pub const MEANING_FLOOR: f32 = 0.2;
/// A window: whole sentences up to about this many characters.
const WINDOW_CHARS: usize = 200;
/// Windows of one piece embedded, at most.
const MOST_WINDOWS: usize = 12;

pub(super) fn v3(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS chunk_vectors (
             chunk INTEGER NOT NULL,
             part INTEGER NOT NULL,
             model TEXT NOT NULL,
             vector BLOB NOT NULL,
             PRIMARY KEY (chunk, part)
         );
         CREATE TRIGGER IF NOT EXISTS chunks_vectors_ad AFTER DELETE ON chunks BEGIN
             DELETE FROM chunk_vectors WHERE chunk = old.id;
         END;",
    )
}

impl DocumentStore {
    /// Finds by meaning too, with `model`'s vectors.
    pub fn with_meaning(mut self, model: Arc<dyn Embed>) -> Self {
        self.meaning = Some(model);
        self
    }

    /// Embeds up to `most` pieces with no vector from the loaded model,
    /// newest first; how many (0 without a model).
    pub fn embed_missing(&self, most: usize) -> Result<usize, DocumentError> {
        let Some(model) = &self.meaning else {
            return Ok(0);
        };
        let id = model.model_id();
        let rows: Vec<(i64, String)> = {
            let conn = self.conn();
            let mut q = conn
                .prepare_cached(
                    "SELECT c.id, c.text FROM chunks c
                     WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk = c.id AND v.model = ?1)
                     ORDER BY c.id DESC LIMIT ?2",
                )
                .map_err(|e| self.err(e))?;
            let rows = q
                .query_map(params![id, most as i64], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(|e| self.err(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.err(e))?
        };
        let mut done = 0;
        for (chunk, text) in rows {
            let parts = windows(&text);
            let mut made = Vec::with_capacity(parts.len());
            for batch in parts.chunks(BATCH) {
                made.extend(model.embed(batch.to_vec())?);
            }
            let conn = self.conn();
            for (part, vector) in made.iter().enumerate() {
                // A piece deleted meanwhile gets no vector.
                conn.execute(
                    "INSERT OR REPLACE INTO chunk_vectors (chunk, part, model, vector)
                     SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1)",
                    params![chunk, part as i64, id, encode(vector)],
                )
                .map_err(|e| self.err(e))?;
            }
            done += 1;
        }
        Ok(done)
    }

    /// The vector of `question`, when there is a model and it answered.
    fn asked(&self, question: &str) -> Option<(Vec<f32>, &str)> {
        let model = self.meaning.as_ref()?;
        match model.embed(vec![question.to_string()]) {
            Ok(mut v) if !v.is_empty() => Some((v.swap_remove(0), model.model_id())),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!("documents by meaning failed; searching by words only: {e}");
                None
            }
        }
    }

    /// `words` (found by the question's words, best first) fused with the
    /// pieces of `scopes` (or of document `only`) nearest the question's
    /// meaning; the best `limit`. `None` without a model.
    pub(super) fn fuse(
        &self,
        scopes: &[&str],
        question: &str,
        only: Option<i64>,
        words: Vec<Found>,
        limit: usize,
    ) -> Result<Option<Vec<Found>>, DocumentError> {
        // Every turn comes here: a person with nothing embedded costs no
        // call to the model.
        if question.trim().is_empty() || !self.any_vectors(scopes, only)? {
            return Ok(None);
        }
        let Some((asked, model)) = self.asked(question) else {
            return Ok(None);
        };
        let near = self.nearest(scopes, only, (&asked, model), limit * 4)?;
        let best_rank = words.iter().map(|f| f.rank).fold(0.0, f64::min);
        let keyword = |f: &Found| {
            if best_rank < 0.0 {
                (f.rank / best_rank) as f32
            } else {
                0.0
            }
        };
        let mut all: Vec<Found> = Vec::new();
        for mut f in words {
            let meant = near
                .iter()
                .find(|(n, _)| n.chunk == f.chunk)
                .map(|(_, s)| *s);
            let score = meant.unwrap_or(MEANING_FLOOR) + KEYWORD_WEIGHT * keyword(&f);
            f.similarity = meant;
            f.rank = -f64::from(score);
            all.push(f);
        }
        for (mut f, similarity) in near {
            if similarity < MEANING_FLOOR || all.iter().any(|a| a.chunk == f.chunk) {
                continue;
            }
            f.similarity = Some(similarity);
            f.rank = -f64::from(similarity);
            all.push(f);
        }
        all.sort_by(|a, b| a.rank.total_cmp(&b.rank));
        all.truncate(limit);
        Ok(Some(all))
    }

    /// Whether any piece of `scopes` (or of document `only`) has a vector.
    fn any_vectors(&self, scopes: &[&str], only: Option<i64>) -> Result<bool, DocumentError> {
        let conn = self.conn();
        let mut q = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM documents d JOIN chunks c ON c.document = d.id
                 JOIN chunk_vectors v ON v.chunk = c.id
                 WHERE d.scope = ?1 AND (?2 IS NULL OR d.id = ?2))",
            )
            .map_err(|e| self.err(e))?;
        for scope in scopes {
            let found: bool = q
                .query_row(params![scope, only], |r| r.get(0))
                .map_err(|e| self.err(e))?;
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The `most` pieces of `scopes` (or of document `only`) whose vectors
    /// from `model` are nearest `asked`, with their similarity.
    fn nearest(
        &self,
        scopes: &[&str],
        only: Option<i64>,
        (asked, model): (&[f32], &str),
        most: usize,
    ) -> Result<Vec<(Found, f32)>, DocumentError> {
        let conn = self.conn();
        let mut q = conn
            .prepare_cached(
                "SELECT c.id, d.id, d.name, c.page, c.text, v.vector
                 FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk
                 JOIN documents d ON d.id = c.document
                 WHERE d.scope = ?1 AND v.model = ?2 AND (?3 IS NULL OR d.id = ?3)",
            )
            .map_err(|e| self.err(e))?;
        let mut near = Vec::new();
        for scope in scopes {
            let mut rows = q
                .query(params![scope, model, only])
                .map_err(|e| self.err(e))?;
            while let Some(r) = rows.next().map_err(|e| self.err(e))? {
                let blob = r
                    .get_ref(5)
                    .and_then(|v| Ok(v.as_blob()?))
                    .map_err(|e| self.err(e))?;
                let Some(similarity) = dot(blob, asked) else {
                    continue;
                };
                let found = Found {
                    chunk: r.get(0).map_err(|e| self.err(e))?,
                    document: r.get(1).map_err(|e| self.err(e))?,
                    name: r.get(2).map_err(|e| self.err(e))?,
                    page: r.get::<_, i64>(3).map_err(|e| self.err(e))? as usize,
                    text: r.get(4).map_err(|e| self.err(e))?,
                    rank: 0.0,
                    similarity: None,
                };
                near.push((found, similarity));
            }
        }
        // A piece is as near as its nearest window.
        near.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut seen = std::collections::HashSet::new();
        near.retain(|(f, _)| seen.insert(f.chunk));
        near.truncate(most);
        Ok(near)
    }
}

/// `text` as windows of whole sentences of up to [`WINDOW_CHARS`] (a
/// longer sentence is cut), at most [`MOST_WINDOWS`].
pub fn windows(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let sentences = text.split_inclusive(['.', '!', '?', '\n']);
    for sentence in sentences.map(str::trim).filter(|s| !s.is_empty()) {
        if !current.is_empty() && current.chars().count() + sentence.chars().count() > WINDOW_CHARS
        {
            out.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(sentence);
        while current.chars().count() > WINDOW_CHARS {
            let rest: String = current.chars().skip(WINDOW_CHARS).collect();
            out.push(current.chars().take(WINDOW_CHARS).collect());
            current = rest;
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out.truncate(MOST_WINDOWS);
    out
}

impl Backlog for DocumentStore {
    fn what(&self) -> &'static str {
        "document pieces"
    }

    fn has_model(&self) -> bool {
        self.meaning.is_some()
    }

    fn drop_other_vectors(&self) -> Result<usize, BacklogError> {
        let Some(model) = &self.meaning else {
            return Ok(0);
        };
        let conn = self.conn();
        let gone = conn.execute(
            "DELETE FROM chunk_vectors WHERE model != ?1",
            params![model.model_id()],
        )?;
        Ok(gone)
    }

    fn embed_missing(&self, most: usize) -> Result<usize, BacklogError> {
        // A piece is several windows: a quarter as many pieces as texts.
        DocumentStore::embed_missing(self, (most / 4).max(1)).map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_hold_whole_sentences_and_cut_only_a_long_one() {
        let text = format!("{}. Short one. {}", "a".repeat(150), "b".repeat(450));
        let w = windows(&text);
        assert_eq!(w[0], format!("{}. Short one.", "a".repeat(150)));
        assert_eq!(w[1], "b".repeat(200), "a long sentence is cut");
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(w.iter().all(|w| w.chars().count() <= WINDOW_CHARS), "{w:?}");
        assert!(windows("  ").is_empty());
    }
}
