//! Opening hearth's SQLite files (history, memory, scheduler, LMS): the
//! folder is created, the journal is WAL (readers never block the writer),
//! a busy timeout rides out a second process, and the store's schema is
//! applied. Each store's error type wraps [`OpenError`].

use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// How long a statement waits for a lock held by another connection.
const BUSY_TIMEOUT_MS: u32 = 5_000;

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create the data dir {}: {source}; fix: set `[data] dir` to a writable folder", .path.display())]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot make the database {} private: {source}; fix: check that the data dir is writable and yours (`[data] dir`)", .path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("database {}: {source}; fix: check that the data dir is writable (`[data] dir`)", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

/// Opens (creating if needed) the database at `path` and applies `schema`
/// (SQL run once per open, so it must be idempotent: `IF NOT EXISTS`).
pub fn open(path: &Path, schema: &str) -> Result<Connection, OpenError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::file_modes::make_private_dir(dir).map_err(|source| OpenError::Dir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    crate::file_modes::prepare_database(path).map_err(|source| OpenError::File {
        path: path.to_path_buf(),
        source,
    })?;
    let sqlite = |source| OpenError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let conn = Connection::open(path).map_err(sqlite)?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL;\nPRAGMA busy_timeout = {BUSY_TIMEOUT_MS};\n{schema}"
    ))
    .map_err(sqlite)?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_the_folder_and_applies_the_schema_once_per_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/t.sqlite3");
        let schema = "CREATE TABLE IF NOT EXISTS t (x INTEGER);";
        let conn = open(&path, schema).unwrap();
        conn.execute("INSERT INTO t VALUES (1)", []).unwrap();
        drop(conn);
        let conn = open(&path, schema).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1, "reopening kept the data");
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "not a database\n".repeat(512)).unwrap();
        let e = open(&blocker.join("db.sqlite3"), "").unwrap_err();
        assert!(matches!(e, OpenError::Dir { .. }), "{e}");
        let e = open(&blocker, "").unwrap_err();
        assert!(e.to_string().contains("file"), "{e}");
    }
}
