//! Opening hearth's SQLite files (history, memory, scheduler, LMS): the
//! folder is created, the journal is WAL (readers never block the writer),
//! a busy timeout rides out a second process, and the file is brought to
//! the schema this hearth writes.
//!
//! Each file carries its schema version (`PRAGMA user_version`): the
//! number of [`Schema::steps`] that have run on it. An older file is copied
//! aside first (SQLite's `VACUUM INTO`, a consistent copy), then moved
//! forward in one transaction: it ends at the new version or, on any
//! error, exactly as it was. A file from a newer hearth is refused before
//! anything is written to it. Each store's error type wraps [`OpenError`].

use std::path::{Path, PathBuf};

use rusqlite::{Connection, TransactionBehavior};

/// How long a statement waits for a lock held by another connection.
const BUSY_TIMEOUT_MS: u32 = 5_000;

/// One step of a file's schema: run once, inside the upgrade's transaction.
pub type Step = fn(&Connection) -> rusqlite::Result<()>;

/// One database file's tables, and how older files are brought up to them.
pub struct Schema {
    /// What the file holds, for messages ("history", "memory", …).
    pub name: &'static str,
    /// Per-connection settings, run on every open (`PRAGMA synchronous`).
    pub pragmas: &'static str,
    /// The steps from an empty file up, oldest first; a file's version is
    /// how many have run on it. The first is idempotent (`IF NOT EXISTS`,
    /// columns added only when missing): it also adopts files written
    /// before versions were kept, which all read version 0.
    pub steps: &'static [Step],
}

impl Schema {
    /// The version this hearth writes.
    pub fn version(&self) -> u32 {
        self.steps.len() as u32
    }
}

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
    #[error("the {name} database {} was written by a newer hearth (schema version {found}; this hearth knows up to {known}) and was left untouched; fix: run that newer hearth, or restore a backup made with this version (`hearth restore`)", .path.display())]
    Newer {
        name: &'static str,
        path: PathBuf,
        found: u32,
        known: u32,
    },
    #[error("cannot copy the {name} database {} to {} before upgrading it: {source}; nothing was changed; fix: free space in the data dir (`[data] dir`)", .path.display(), .backup.display())]
    Backup {
        name: &'static str,
        path: PathBuf,
        backup: PathBuf,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(transparent)]
    Upgrade(Box<UpgradeError>),
}

/// A step of an upgrade failed; the transaction left the file as it was.
#[derive(Debug, thiserror::Error)]
#[error("cannot upgrade the {name} database {} from schema version {from} to {to}: {source}; nothing was changed, and a copy from before is at {}; fix: free space in the data dir, or report this with the copy", .path.display(), .backup.as_deref().unwrap_or(Path::new("(none: the file was empty)")).display())]
pub struct UpgradeError {
    pub name: &'static str,
    pub path: PathBuf,
    pub from: u32,
    pub to: u32,
    pub backup: Option<PathBuf>,
    pub source: rusqlite::Error,
}

/// Opens (creating if needed) the database at `path`, brought to `schema`.
pub fn open(path: &Path, schema: &Schema) -> Result<Connection, OpenError> {
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
    let mut conn = Connection::open(path).map_err(sqlite)?;
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS.into()))
        .map_err(sqlite)?;
    // Before anything is written: a newer file is left as it is.
    let found = version(&conn).map_err(sqlite)?;
    refuse_newer(path, schema, found)?;
    conn.execute_batch(&format!("PRAGMA journal_mode = WAL;\n{}", schema.pragmas))
        .map_err(sqlite)?;
    if found < schema.version() {
        upgrade(&mut conn, path, schema)?;
    }
    Ok(conn)
}

fn version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

fn refuse_newer(path: &Path, schema: &Schema, found: u32) -> Result<(), OpenError> {
    if found > schema.version() {
        return Err(OpenError::Newer {
            name: schema.name,
            path: path.to_path_buf(),
            found,
            known: schema.version(),
        });
    }
    Ok(())
}

/// Runs the steps `path` lacks, in one transaction, after copying a file
/// that holds anything aside.
fn upgrade(conn: &mut Connection, path: &Path, schema: &Schema) -> Result<(), OpenError> {
    let sqlite = |source| OpenError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let from = version(conn).map_err(sqlite)?;
    let tables: u32 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(sqlite)?;
    // The copy cannot be made inside a transaction; it holds version
    // `from` whatever happens next.
    let backup = if tables > 0 {
        Some(copy_aside(conn, path, schema.name, from)?)
    } else {
        None
    };
    // Writers wait here; another process may have upgraded the file since.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sqlite)?;
    let now = version(&tx).map_err(sqlite)?;
    refuse_newer(path, schema, now)?;
    let to = schema.version();
    if now == to {
        drop(tx);
        if let Some(b) = &backup {
            let _ = std::fs::remove_file(b);
        }
        return Ok(());
    }
    let steps = schema.steps[now as usize..]
        .iter()
        .try_for_each(|step| step(&tx))
        .and_then(|()| tx.pragma_update(None, "user_version", to))
        .and_then(|()| tx.commit());
    if let Err(source) = steps {
        return Err(OpenError::Upgrade(Box::new(UpgradeError {
            name: schema.name,
            path: path.to_path_buf(),
            from: now,
            to,
            backup,
            source,
        })));
    }
    if let Some(b) = &backup {
        tracing::info!(
            "upgraded the {} database {} from schema version {now} to {to}; the file as it was is at {}",
            schema.name,
            path.display(),
            b.display()
        );
    }
    Ok(())
}

/// A consistent copy of the open file beside it, private like it:
/// `NAME.sqlite3.vN-SECONDS.backup`.
fn copy_aside(
    conn: &Connection,
    path: &Path,
    name: &'static str,
    from: u32,
) -> Result<PathBuf, OpenError> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut file = path.as_os_str().to_os_string();
    file.push(format!(".v{from}-{secs}.backup"));
    let backup = PathBuf::from(file);
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| OpenError::Backup {
        name,
        path: path.to_path_buf(),
        backup: backup.clone(),
        source,
    };
    // Created empty and 0600 first: `VACUUM INTO` fills an empty file.
    crate::file_modes::prepare_database(&backup).map_err(|e| failed(e.into()))?;
    let copied = conn.execute("VACUUM INTO ?1", [backup.to_string_lossy()]);
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&backup);
        return Err(failed(e.into()));
    }
    Ok(backup)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(c: &Connection) -> rusqlite::Result<()> {
        c.execute_batch("CREATE TABLE IF NOT EXISTS t (x INTEGER);")
    }
    fn v2(c: &Connection) -> rusqlite::Result<()> {
        c.execute_batch("ALTER TABLE t ADD COLUMN y TEXT NOT NULL DEFAULT 'new';")
    }
    fn broken(c: &Connection) -> rusqlite::Result<()> {
        c.execute_batch("UPDATE t SET x = -1; ALTER TABLE nowhere ADD COLUMN z;")
    }
    const ONE: Schema = Schema {
        name: "test",
        pragmas: "",
        steps: &[v1],
    };
    const TWO: Schema = Schema {
        name: "test",
        pragmas: "PRAGMA synchronous = NORMAL;",
        steps: &[v1, v2],
    };
    const BROKEN: Schema = Schema {
        name: "test",
        pragmas: "",
        steps: &[v1, broken],
    };

    fn count(c: &Connection, sql: &str) -> i64 {
        c.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    fn backups(dir: &Path) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".backup"))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn a_new_file_gets_the_schema_and_its_version_and_no_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/t.sqlite3");
        let conn = open(&path, &ONE).unwrap();
        conn.execute("INSERT INTO t VALUES (1)", []).unwrap();
        drop(conn);
        let conn = open(&path, &ONE).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(
            count(&conn, "SELECT count(*) FROM t"),
            1,
            "reopening kept the data"
        );
        assert_eq!(version(&conn).unwrap(), 1);
        assert!(backups(path.parent().unwrap()).is_empty());
    }

    #[test]
    fn a_file_from_before_versions_and_an_older_one_move_forward_with_a_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite3");
        // Written before versions were kept: tables, version 0.
        let old = Connection::open(&path).unwrap();
        old.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7), (8);")
            .unwrap();
        drop(old);
        let conn = open(&path, &ONE).unwrap();
        assert_eq!(version(&conn).unwrap(), 1, "adopted");
        drop(conn);
        let first = backups(dir.path());
        assert_eq!(first.len(), 1, "{first:?}");
        // Then a release with a second step.
        let conn = open(&path, &TWO).unwrap();
        assert_eq!(version(&conn).unwrap(), 2);
        assert_eq!(
            count(&conn, "SELECT count(*) FROM t WHERE y = 'new'"),
            2,
            "every row kept"
        );
        let all = backups(dir.path());
        assert_eq!(all.len(), 2, "{all:?}");
        let copy = all.iter().find(|p| !first.contains(p)).unwrap();
        assert!(copy.to_string_lossy().contains(".v1-"), "{copy:?}");
        let copy = Connection::open(copy).unwrap();
        assert_eq!(version(&copy).unwrap(), 1, "the copy is the file as it was");
        assert_eq!(count(&copy, "SELECT count(*) FROM t"), 2);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&all[1]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // Positive control: a file already at the version is not copied.
        drop(open(&path, &TWO).unwrap());
        assert_eq!(backups(dir.path()).len(), 2);
    }

    #[test]
    fn a_step_that_fails_leaves_the_file_as_it_was_and_names_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite3");
        let conn = open(&path, &ONE).unwrap();
        conn.execute("INSERT INTO t VALUES (5)", []).unwrap();
        drop(conn);
        let e = open(&path, &BROKEN).unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(&e, OpenError::Upgrade(u) if u.from == 1 && u.to == 2),
            "{e:?}"
        );
        assert!(
            text.contains(".v1-") && text.contains("nothing was changed"),
            "{text}"
        );
        let conn = open(&path, &ONE).unwrap();
        assert_eq!(version(&conn).unwrap(), 1);
        assert_eq!(
            count(&conn, "SELECT x FROM t"),
            5,
            "the first half of the step was undone"
        );
    }

    #[test]
    fn a_file_from_a_newer_hearth_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite3");
        let newer = Connection::open(&path).unwrap();
        newer
            .execute_batch(
                "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1); PRAGMA user_version = 3;",
            )
            .unwrap();
        drop(newer);
        let before = std::fs::read(&path).unwrap();
        let e = open(&path, &TWO).unwrap_err();
        assert!(
            matches!(
                e,
                OpenError::Newer {
                    found: 3,
                    known: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("newer hearth"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "not a byte changed");
        assert!(backups(dir.path()).is_empty());
        // Positive control: the same file at a version this hearth knows.
        let known = Connection::open(&path).unwrap();
        known.pragma_update(None, "user_version", 2).unwrap();
        drop(known);
        let conn = open(&path, &TWO).unwrap();
        assert_eq!(count(&conn, "SELECT count(*) FROM t"), 1);
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "not a database\n".repeat(512)).unwrap();
        let e = open(&blocker.join("db.sqlite3"), &ONE).unwrap_err();
        assert!(matches!(e, OpenError::Dir { .. }), "{e}");
        let e = open(&blocker, &ONE).unwrap_err();
        assert!(e.to_string().contains("file"), "{e}");
    }
}
