//! A restored database holds only what hearth's schema makes: a trigger or
//! a view planted in a backup (SQLite's integrity check passes them) would
//! run as hearth writes, so a backup whose database has one that a fresh
//! database of the same schema lacks is refused by name.

use std::collections::BTreeSet;
use std::path::Path;

use rusqlite::Connection;

use crate::storage::Schema;

/// The triggers and views of `conn`: (type, name, SQL with its spaces
/// folded).
fn objects(conn: &Connection) -> rusqlite::Result<BTreeSet<(String, String, String)>> {
    let mut statement = conn.prepare(
        "SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE type IN ('trigger', 'view')",
    )?;
    let rows = statement.query_map([], |r| {
        let sql: String = r.get(2)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            sql.split_whitespace().collect::<Vec<_>>().join(" "),
        ))
    })?;
    rows.collect()
}

/// What `conn` (a backup's database of `schema`) holds that a database
/// hearth makes does not: "trigger NAME" or "view NAME", each once. A file
/// of an older version (`current` false) is matched by name alone, since
/// its upgrade may remake what it has.
pub fn foreign(conn: &Connection, schema: &Schema, current: bool) -> Result<Vec<String>, String> {
    let made = made_by(schema)?;
    let found = objects(conn).map_err(|e| e.to_string())?;
    Ok(found
        .into_iter()
        .filter(|(kind, name, sql)| {
            !made
                .iter()
                .any(|(k, n, s)| k == kind && n == name && (s == sql || !current))
        })
        .map(|(kind, name, _)| format!("{kind} {name}"))
        .collect())
}

/// The triggers and views of a fresh database of `schema`, made in a
/// scratch file that is removed again.
fn made_by(schema: &Schema) -> Result<BTreeSet<(String, String, String)>, String> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path = std::env::temp_dir().join(format!(
        "hearth-schema-{}-{}-{stamp}.sqlite3",
        schema.name,
        std::process::id()
    ));
    let made = crate::storage::open(&path, schema)
        .map_err(|e| e.to_string())
        .and_then(|fresh| objects(&fresh).map_err(|e| e.to_string()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    made
}

/// [`foreign`] for the database file at `path`.
pub fn foreign_in(
    path: &Path,
    conn: &Connection,
    schema: &Schema,
    current: bool,
) -> Result<(), String> {
    let planted = foreign(conn, schema, current)?;
    if planted.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} holds {} that hearth's schema does not make; a backup hearth wrote never does",
        path.display(),
        planted.join(", ")
    ))
}
