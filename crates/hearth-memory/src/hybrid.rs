//! Recall by words and by meaning, fused.
//!
//! With an embedding model, a search embeds the question and compares it
//! with the vectors of the asker's scope only ([`super::vectors`]). Each
//! entry's score is its meaning (cosine similarity) plus a twentieth of
//! its keyword relevance: words only break near-ties (a name, a code), so
//! an entry that shares words with the question cannot pass one that means
//! what was asked. (A fifth, tried first, put word-sharing distractors
//! first: 13 of 24 right on the paraphrase bench against 18 of 24 by
//! meaning alone.) Entries of the scope not yet
//! embedded are embedded first (a few; the rest wait for
//! [`super::indexer`]), and an entry with no vector yet keeps its keyword
//! score. When the model fails, recall falls back to words and says so.

use std::collections::HashMap;

use super::entry::{MemoryEntry, Recalled};
use super::store::{MemoryError, MemoryStore, entry_from_row};
use super::vectors;
use rusqlite::OptionalExtension;

/// How much keyword relevance (0..1) adds to a meaning score.
pub const KEYWORD_WEIGHT: f64 = 0.05;
/// Entries less similar than this are not brought in by meaning alone
/// (all-MiniLM-L6-v2 puts unrelated sentences below it).
pub const MEANING_FLOOR: f32 = 0.2;
/// Rows of the scope embedded before a search, at most.
const EMBED_BEFORE_SEARCH: usize = 64;
/// Texts sent to the model at once.
pub const BATCH: usize = 16;
/// The most characters of one memory that are embedded: a longer memory is
/// found by its beginning (about 2,000 tokens, four reads of MiniLM), so no
/// single memory can hold the model for long.
pub const EMBEDDED_CHARS: usize = 8_000;
/// Candidates by meaning per result asked for.
const CANDIDATES_PER_RESULT: usize = 4;

impl MemoryStore {
    /// Recall in `scope` by words and by the meaning `asked` (the
    /// question's vector; by words only when it could not be made).
    pub(super) fn recall_hybrid(
        &self,
        query: &str,
        asked: Option<&[f32]>,
        limit: usize,
        scope: &str,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let words = self.by_words(query, limit, scope)?;
        let near = match asked.map(|a| self.similar(a, scope)).transpose() {
            Ok(near) => near.unwrap_or_default(),
            Err(e) => {
                tracing::warn!("memory by meaning failed; searching by words only: {e}");
                Vec::new()
            }
        };
        let chosen = choose(&words, &near, limit);
        let missing: Vec<i64> = chosen
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !words.iter().any(|(w, _)| w == id))
            .collect();
        let mut entries = self.by_ids(&missing)?;
        entries.extend(words.into_iter().map(|(id, r)| (id, r.entry)));
        Ok(chosen
            .into_iter()
            .filter_map(|(id, score)| {
                let entry = entries.remove(&id)?;
                Some(Recalled { entry, score })
            })
            .collect())
    }

    /// [`MemoryStore::recall`] with the question's vector made already
    /// (`None`: by words only).
    pub(super) fn recall_with(
        &self,
        query: &str,
        asked: Option<&[f32]>,
        limit: usize,
        scope: &str,
    ) -> Result<Vec<Recalled>, MemoryError> {
        if self.meaning.is_some() && !query.trim().is_empty() {
            return self.recall_hybrid(query, asked, limit, scope);
        }
        self.recall_by_words(query, limit, scope)
    }

    /// The question's vector from the loaded model; `None` without one, or
    /// when it failed (said in the log: recall then goes by words).
    pub(super) fn asked(&self, query: &str) -> Option<Vec<f32>> {
        let model = self.meaning.as_ref()?;
        if query.trim().is_empty() {
            return None;
        }
        match model.embed(vec![query.to_string()]) {
            Ok(mut v) if !v.is_empty() => Some(v.swap_remove(0)),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!("memory by meaning failed; searching by words only: {e}");
                None
            }
        }
    }

    /// [`MemoryStore::recall`] in each of `scopes` (the question embedded
    /// once), all of them together.
    pub fn recall_each(
        &self,
        query: &str,
        limit: usize,
        scopes: &[&str],
    ) -> Result<Vec<Recalled>, MemoryError> {
        let asked = self.asked(query);
        let mut found = Vec::new();
        for scope in scopes {
            found.extend(self.recall_with(query, asked.as_deref(), limit, scope)?);
        }
        Ok(found)
    }

    /// The owner's search over every scope (`hearth memory search`, the web
    /// page): each scope's best by [`MemoryStore::recall`], then entries
    /// whose text holds `query` as written; at most `limit`, best first.
    pub fn search_everywhere(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let scopes = self.scopes()?;
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let mut found = self.recall_each(query, limit, &scopes)?;
        found.sort_by(|a, b| b.score.total_cmp(&a.score));
        for entry in self.find(query.trim(), limit)? {
            let known = found
                .iter()
                .any(|r| r.entry.scope == entry.scope && r.entry.key == entry.key);
            if !known {
                found.push(Recalled { entry, score: 0.0 });
            }
        }
        found.truncate(limit);
        Ok(found)
    }

    /// Every embedded entry of `scope` and its similarity to `asked`, once
    /// the scope's entries without a vector (a few) are embedded.
    fn similar(&self, asked: &[f32], scope: &str) -> Result<Vec<(i64, f32)>, MemoryError> {
        let Some(model) = &self.meaning else {
            return Ok(Vec::new());
        };
        self.embed_missing(Some(scope), EMBED_BEFORE_SEARCH)?;
        self.with(|c| vectors::similar(c, model.model_id(), scope, asked))
    }

    /// Embeds up to `most` entries (of `scope`, or of everyone) that have
    /// no vector from the loaded model yet, [`BATCH`] at a time; how many
    /// it embedded (0 without a model).
    pub fn embed_missing(&self, scope: Option<&str>, most: usize) -> Result<usize, MemoryError> {
        let Some(model) = &self.meaning else {
            return Ok(0);
        };
        let id = model.model_id();
        let rows = self.with(|c| vectors::missing(c, id, scope, most))?;
        let mut done = 0;
        for batch in rows.chunks(BATCH) {
            let texts = batch
                .iter()
                .map(|(_, t)| t.chars().take(EMBEDDED_CHARS).collect())
                .collect();
            let made = model.embed(texts)?;
            self.with(|c| {
                for ((row, text), vector) in batch.iter().zip(&made) {
                    done += usize::from(vectors::put(c, id, (*row, text), vector)?);
                }
                Ok(())
            })?;
        }
        Ok(done)
    }

    /// Entries with a vector from the loaded model, and entries in all;
    /// `None` without a model.
    pub fn vector_counts(&self) -> Result<Option<(u64, u64)>, MemoryError> {
        let Some(model) = &self.meaning else {
            return Ok(None);
        };
        self.with(|c| vectors::counts(c, model.model_id()))
            .map(Some)
    }

    /// Drops vectors made by any other model than the loaded one; how
    /// many.
    pub fn drop_other_vectors(&self) -> Result<usize, MemoryError> {
        let Some(model) = &self.meaning else {
            return Ok(0);
        };
        self.with(|c| vectors::drop_others(c, model.model_id()))
    }

    /// The entries with these row ids, by id.
    fn by_ids(&self, ids: &[i64]) -> Result<HashMap<i64, MemoryEntry>, MemoryError> {
        let mut found = HashMap::new();
        self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT key, content, category, scope, created, updated FROM memories
                 WHERE id = ?1",
            )?;
            for id in ids {
                if let Some(Some(entry)) = stmt.query_row([id], entry_from_row).optional()? {
                    found.insert(*id, entry);
                }
            }
            Ok(())
        })?;
        Ok(found)
    }
}

/// The `limit` best row ids and their scores, from the keyword hits
/// (`words`, with their relevance) and every embedded entry's similarity
/// (`near`).
fn choose(words: &[(i64, Recalled)], near: &[(i64, f32)], limit: usize) -> Vec<(i64, f64)> {
    let similarity: HashMap<i64, f32> = near.iter().copied().collect();
    let keyword: HashMap<i64, f64> = words.iter().map(|(id, r)| (*id, r.score)).collect();
    let mut by_meaning: Vec<(i64, f32)> = near
        .iter()
        .copied()
        .filter(|(_, s)| *s >= MEANING_FLOOR)
        .collect();
    by_meaning.sort_by(|a, b| b.1.total_cmp(&a.1));
    by_meaning.truncate(limit.saturating_mul(CANDIDATES_PER_RESULT));
    let mut ids: Vec<i64> = words.iter().map(|(id, _)| *id).collect();
    ids.extend(
        by_meaning
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !keyword.contains_key(id)),
    );
    let mut scored: Vec<(i64, f64)> = ids
        .into_iter()
        .map(|id| {
            let words = keyword.get(&id).copied().unwrap_or(0.0);
            let score = match similarity.get(&id) {
                Some(s) => (f64::from(s.max(0.0)) + KEYWORD_WEIGHT * words).min(1.0),
                None => words,
            };
            (id, score)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(limit);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Category;
    use crate::meaning::{Embed, EmbedError};
    use std::sync::Arc;

    /// A model whose vector of a text says which of a few topics it names
    /// (so "medicine" and "penicillin" meet), under its own name.
    struct Topics(&'static str);

    impl Embed for Topics {
        fn model_id(&self) -> &str {
            self.0
        }

        fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
            const TOPICS: [&[&str]; 3] =
                [&["medicine", "penicillin"], &["car", "vehicle"], &["tea"]];
            Ok(texts
                .iter()
                .map(|t| {
                    let t = t.to_lowercase();
                    let mut v: Vec<f32> = TOPICS
                        .iter()
                        .map(|words| f32::from(u8::from(words.iter().any(|w| t.contains(w)))))
                        .collect();
                    v.push(0.1);
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                    v.iter().map(|x| x / norm).collect()
                })
                .collect())
        }
    }

    fn store_with(dir: &std::path::Path, model: &'static str) -> MemoryStore {
        let path = dir.join("memory.sqlite3");
        MemoryStore::open(&path)
            .unwrap()
            .with_meaning(Arc::new(Topics(model)))
    }

    #[test]
    fn vectors_go_with_their_rows_and_a_changed_text_is_embedded_again() {
        let dir = tempfile::tempdir().unwrap();
        let m = store_with(dir.path(), "a");
        m.store(
            "ada",
            "allergy",
            "I'm allergic to penicillin",
            Category::Core,
        )
        .unwrap();
        m.store("ada", "car", "The car is on level 3", Category::Core)
            .unwrap();
        assert_eq!(m.embed_missing(None, 10).unwrap(), 2);
        assert_eq!(m.vector_counts().unwrap(), Some((2, 2)));
        let found = m.recall("which medicine?", 1, "ada").unwrap();
        assert_eq!(found[0].entry.key, "allergy");
        // Forgetting (as retention does) takes the vector with the row.
        assert!(m.forget("ada", "allergy").unwrap());
        assert_eq!(m.vector_counts().unwrap(), Some((1, 1)));
        // A new text drops the old vector; the next search embeds the new.
        m.store("ada", "car", "I drink tea", Category::Core)
            .unwrap();
        assert_eq!(m.vector_counts().unwrap(), Some((0, 1)));
        assert_eq!(m.recall("tea?", 1, "ada").unwrap()[0].entry.key, "car");
        assert_eq!(m.vector_counts().unwrap(), Some((1, 1)));
    }

    #[test]
    fn another_model_embeds_everything_again_and_never_reads_the_old_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let old = store_with(dir.path(), "old");
        old.store(
            "ada",
            "allergy",
            "I'm allergic to penicillin",
            Category::Core,
        )
        .unwrap();
        old.embed_missing(None, 10).unwrap();
        let new = store_with(dir.path(), "new");
        assert_eq!(new.vector_counts().unwrap(), Some((0, 1)));
        assert_eq!(new.drop_other_vectors().unwrap(), 1);
        // The old model's vectors are gone; the new one's are made.
        assert_eq!(old.vector_counts().unwrap(), Some((0, 1)));
        assert_eq!(new.embed_missing(None, 10).unwrap(), 1);
        assert_eq!(
            new.recall("medicine", 1, "ada").unwrap()[0].entry.key,
            "allergy"
        );
    }

    #[test]
    fn nobody_is_shown_another_scopes_memory_by_meaning() {
        let dir = tempfile::tempdir().unwrap();
        let m = store_with(dir.path(), "a");
        m.store(
            "ada",
            "allergy",
            "I'm allergic to penicillin",
            Category::Core,
        )
        .unwrap();
        m.store("bob", "car", "The car is on level 3", Category::Core)
            .unwrap();
        // Bob asks about Ada's topic: nothing of hers, in any form.
        assert!(
            m.recall("which medicine?", 5, "bob")
                .unwrap()
                .iter()
                .all(|r| r.entry.scope == "bob")
        );
        assert!(m.recall("which medicine?", 5, "bob").unwrap().is_empty());
        // Control: each finds their own.
        assert_eq!(
            m.recall("which medicine?", 5, "ada").unwrap()[0].entry.key,
            "allergy"
        );
        assert_eq!(
            m.recall("my vehicle?", 5, "bob").unwrap()[0].entry.key,
            "car"
        );
    }

    fn hit(id: i64, score: f64) -> (i64, Recalled) {
        let entry = MemoryEntry {
            key: id.to_string(),
            content: String::new(),
            category: Category::Core,
            scope: "s".into(),
            created: 0,
            updated: 0,
        };
        (id, Recalled { entry, score })
    }

    #[test]
    fn meaning_beats_shared_words_and_words_break_a_tie() {
        // 1 shares the question's words; 2 means it; 3 means it as much
        // as 2 and shares a word too.
        let words = [hit(1, 1.0), hit(3, 0.3)];
        let near = [(1, 0.5), (2, 0.6), (3, 0.6), (4, 0.1)];
        let chosen = choose(&words, &near, 3);
        let ids: Vec<i64> = chosen.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, vec![3, 2, 1]);
        assert!((chosen[0].1 - 0.615).abs() < 1e-6);
    }

    #[test]
    fn an_unrelated_entry_is_not_brought_in_and_an_unembedded_one_keeps_its_words() {
        let chosen = choose(&[hit(7, 0.5)], &[(4, 0.1)], 5);
        assert_eq!(chosen, vec![(7, 0.5)]);
    }
}
