//! Memory vectors in SQLite: `memory_vectors` holds one vector per memory
//! row, with the model that made it, beside the rows it describes.
//!
//! Triggers drop a row's vector when the row goes (forget, retention) or
//! its text changes, so a vector always describes the text it sits beside
//! and vectors go when their rows go. A search reads only the vectors of
//! one scope and one model: nobody's vectors are searched for another
//! person, and two models' vectors never mix (a row whose vector came from
//! another model counts as missing and is embedded again).

use hearth_core::embed::{dot, encode};
use rusqlite::{Connection, params};

/// The vectors table and its triggers (schema step 2).
pub(super) fn v2(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS memory_vectors (
             id INTEGER PRIMARY KEY,
             model TEXT NOT NULL,
             vector BLOB NOT NULL
         );
         CREATE TRIGGER IF NOT EXISTS memories_vectors_ad AFTER DELETE ON memories BEGIN
             DELETE FROM memory_vectors WHERE id = old.id;
         END;
         CREATE TRIGGER IF NOT EXISTS memories_vectors_au AFTER UPDATE OF content ON memories
         WHEN new.content IS NOT old.content BEGIN
             DELETE FROM memory_vectors WHERE id = old.id;
         END;",
    )
}

/// Up to `limit` rows (of `scope`, or of every scope) with no vector from
/// `model`, newest first: their ids and text.
pub(super) fn missing(
    c: &Connection,
    model: &str,
    scope: Option<&str>,
    limit: usize,
) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut stmt = c.prepare_cached(
        "SELECT m.id, m.content FROM memories m
         LEFT JOIN memory_vectors v ON v.id = m.id AND v.model = ?1
         WHERE v.id IS NULL AND (?2 IS NULL OR m.scope = ?2)
         ORDER BY m.id DESC LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![model, scope, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    rows.collect()
}

/// Keeps `vector` for row `id` unless its text is no longer `content` (it
/// changed while the vector was made); whether it was kept.
pub(super) fn put(
    c: &Connection,
    model: &str,
    (id, content): (i64, &str),
    vector: &[f32],
) -> rusqlite::Result<bool> {
    c.execute(
        "INSERT OR REPLACE INTO memory_vectors (id, model, vector)
         SELECT ?1, ?2, ?3 WHERE EXISTS
             (SELECT 1 FROM memories WHERE id = ?1 AND content = ?4)",
        params![id, model, encode(vector), content],
    )
    .map(|n| n > 0)
}

/// Every row of `scope` with a vector from `model`, and its cosine
/// similarity to `query` (a vector of length 1, as the model's are).
pub(super) fn similar(
    c: &Connection,
    model: &str,
    scope: &str,
    query: &[f32],
) -> rusqlite::Result<Vec<(i64, f32)>> {
    let mut stmt = c.prepare_cached(
        "SELECT v.id, v.vector FROM memory_vectors v JOIN memories m ON m.id = v.id
         WHERE m.scope = ?1 AND v.model = ?2",
    )?;
    let mut rows = stmt.query(params![scope, model])?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        let blob = row.get_ref(1)?.as_blob()?;
        if let Some(similarity) = dot(blob, query) {
            found.push((row.get(0)?, similarity));
        }
    }
    Ok(found)
}

/// Rows with a vector from `model`, and rows in all.
pub(super) fn counts(c: &Connection, model: &str) -> rusqlite::Result<(u64, u64)> {
    c.query_row(
        "SELECT (SELECT count(*) FROM memory_vectors WHERE model = ?1),
                (SELECT count(*) FROM memories)",
        params![model],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Drops the vectors of every model but `model`: a changed model's old
/// vectors are never read again.
pub(super) fn drop_others(c: &Connection, model: &str) -> rusqlite::Result<usize> {
    c.execute(
        "DELETE FROM memory_vectors WHERE model != ?1",
        params![model],
    )
}
