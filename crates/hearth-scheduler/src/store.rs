//! Jobs in SQLite (`scheduler.sqlite3`), so they survive restarts.
//!
//! Each row keeps its next run time. A row that no longer parses (a time
//! zone or cron expression this build rejects) is logged and skipped, never
//! fatal. The file is shared with `hearth cron` (WAL, busy timeout): jobs
//! the command line adds are picked up by a running daemon within a minute.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::job::{Delivery, Job, Payload, Schedule};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("scheduler database {}: {source}; fix: check that the data dir is writable (`[data] dir`)", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Open(#[from] crate::storage::OpenError),
}

/// `scheduler.sqlite3`'s schema.
pub const FILE: crate::storage::Schema = crate::storage::Schema {
    name: "scheduler",
    pragmas: "",
    steps: &[v1, v2],
};

/// The tables as of the first release that kept versions. Idempotent: it
/// also brings files from before jobs had owners up.
fn v1(c: &Connection) -> rusqlite::Result<()> {
    let has_jobs = c
        .prepare("SELECT 1 FROM sqlite_master WHERE name = 'jobs'")?
        .exists([])?;
    let has_owner = c
        .prepare("SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'owner'")?
        .exists([])?;
    if has_jobs && !has_owner {
        c.execute_batch("ALTER TABLE jobs ADD COLUMN owner TEXT")?;
    }
    c.execute_batch(SCHEMA)
}

/// Version 2: a job can be paused (the web page's pause and resume, and
/// `hearth cron pause`); a paused job is never due.
fn v2(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch("ALTER TABLE jobs ADD COLUMN paused INTEGER NOT NULL DEFAULT 0")
}

const SCHEMA: &str = "
                 CREATE TABLE IF NOT EXISTS jobs (
                     id INTEGER PRIMARY KEY AUTOINCREMENT,
                     name TEXT,
                     kind TEXT NOT NULL,
                     spec TEXT NOT NULL,
                     timezone TEXT NOT NULL,
                     payload TEXT NOT NULL,
                     channel TEXT NOT NULL,
                     recipient TEXT NOT NULL,
                     thread TEXT,
                     next_run INTEGER NOT NULL,
                     last_run INTEGER,
                     last_error TEXT,
                     created INTEGER NOT NULL,
                     owner TEXT
                 );
                 CREATE INDEX IF NOT EXISTS jobs_by_next_run ON jobs (next_run);";

pub struct JobStore {
    conn: Mutex<Connection>,
    path: PathBuf,
}

const COLUMNS: &str = "id, name, kind, spec, timezone, payload, channel, recipient, thread, next_run, last_run, last_error, owner, paused";

impl JobStore {
    pub fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join("scheduler.sqlite3")
    }

    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Ok(Self {
            conn: Mutex::new(crate::storage::open(path, &FILE)?),
            path: path.to_path_buf(),
        })
    }

    /// Stores a job that first runs at `next_run`; its id.
    #[allow(clippy::too_many_arguments)]
    pub fn insert(
        &self,
        name: Option<&str>,
        schedule: &Schedule,
        timezone: chrono_tz::Tz,
        payload: &Payload,
        delivery: &Delivery,
        next_run: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<i64, StoreError> {
        let (kind, spec) = schedule.parts();
        let payload = serde_json::to_string(payload).unwrap_or_else(|_| "{}".into());
        self.with(|c| {
            c.execute(
                "INSERT INTO jobs (name, kind, spec, timezone, payload, channel, recipient, thread, next_run, created, owner)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    name,
                    kind,
                    spec,
                    timezone.name(),
                    payload,
                    delivery.channel,
                    delivery.to,
                    delivery.thread,
                    next_run.timestamp(),
                    now.timestamp(),
                    delivery.owner
                ],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    /// Every job, soonest first.
    pub fn list(&self) -> Result<Vec<Job>, StoreError> {
        self.select(
            &format!("SELECT {COLUMNS} FROM jobs ORDER BY next_run, id"),
            params![],
        )
    }

    /// Jobs due at `now` (a paused job never is).
    pub fn due(&self, now: DateTime<Utc>) -> Result<Vec<Job>, StoreError> {
        self.select(
            &format!(
                "SELECT {COLUMNS} FROM jobs WHERE next_run <= ?1 AND paused = 0 ORDER BY next_run, id"
            ),
            params![now.timestamp()],
        )
    }

    pub fn get(&self, id: i64) -> Result<Option<Job>, StoreError> {
        Ok(self
            .select(
                &format!("SELECT {COLUMNS} FROM jobs WHERE id = ?1"),
                params![id],
            )?
            .pop())
    }

    pub fn count(&self) -> Result<usize, StoreError> {
        self.with(|c| c.query_row("SELECT COUNT(*) FROM jobs", [], |r| r.get::<_, i64>(0)))
            .map(|n| n.max(0) as usize)
    }

    /// The jobs that `owner` set in `channel` (a job without an owner
    /// belongs to its chat's own person).
    /// The jobs of `owner` on `channel`; with `None`, of everyone on it.
    pub fn count_owned(&self, channel: &str, owner: Option<&str>) -> Result<usize, StoreError> {
        self.with(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM jobs WHERE channel = ?1 AND (?2 IS NULL OR COALESCE(owner, recipient) = ?2)",
                params![channel, owner],
                |r| r.get::<_, i64>(0),
            )
        })
        .map(|n| n.max(0) as usize)
    }

    /// The soonest next run of any job not paused.
    pub fn earliest(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let secs = self.with(|c| {
            c.query_row("SELECT MIN(next_run) FROM jobs WHERE paused = 0", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .optional()
        })?;
        Ok(secs.flatten().and_then(|s| DateTime::from_timestamp(s, 0)))
    }

    /// Records that a job ran at `ran` and next runs at `next_run`.
    pub fn reschedule(
        &self,
        id: i64,
        next_run: DateTime<Utc>,
        ran: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET next_run = ?2, last_run = ?3 WHERE id = ?1",
                params![id, next_run.timestamp(), ran.timestamp()],
            )
            .map(|_| ())
        })
    }

    /// Records how the last run ended (`None`: it succeeded).
    pub fn record_result(&self, id: i64, error: Option<&str>) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET last_error = ?2 WHERE id = ?1",
                params![id, error],
            )
            .map(|_| ())
        })
    }

    /// Pauses or resumes a job, resuming at `next_run`; whether it exists.
    pub fn set_paused(
        &self,
        id: i64,
        paused: bool,
        next_run: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET paused = ?2, next_run = ?3 WHERE id = ?1",
                params![id, paused, next_run.timestamp()],
            )
        })
        .map(|n| n > 0)
    }

    /// Removes a job; whether it existed.
    pub fn remove(&self, id: i64) -> Result<bool, StoreError> {
        self.with(|c| c.execute("DELETE FROM jobs WHERE id = ?1", params![id]))
            .map(|n| n > 0)
    }

    fn select(&self, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<Job>, StoreError> {
        let rows = self.with(|c| {
            let mut stmt = c.prepare_cached(sql)?;
            let rows = stmt.query_map(params, job_from_row)?;
            rows.collect::<Result<Vec<_>, _>>()
        })?;
        Ok(rows.into_iter().flatten().collect())
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, StoreError> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        f(&conn).map_err(|source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        })
    }
}

/// A row as a job; `None` (logged) when a field no longer parses.
fn job_from_row(row: &rusqlite::Row<'_>) -> Result<Option<Job>, rusqlite::Error> {
    let id: i64 = row.get(0)?;
    let kind: String = row.get(2)?;
    let spec: String = row.get(3)?;
    let tz: String = row.get(4)?;
    let payload: String = row.get(5)?;
    let next_run: i64 = row.get(9)?;
    let last_run: Option<i64> = row.get(10)?;
    let (Some(schedule), Ok(timezone), Ok(payload), Some(next_run)) = (
        Schedule::from_parts(&kind, &spec),
        tz.parse::<chrono_tz::Tz>(),
        serde_json::from_str::<Payload>(&payload),
        DateTime::from_timestamp(next_run, 0),
    ) else {
        tracing::warn!(
            id,
            kind,
            spec,
            tz,
            "skipping a scheduled job that no longer parses"
        );
        return Ok(None);
    };
    Ok(Some(Job {
        id,
        name: row.get(1)?,
        schedule,
        timezone,
        payload,
        delivery: Delivery {
            channel: row.get(6)?,
            to: row.get(7)?,
            thread: row.get(8)?,
            owner: row.get(12)?,
        },
        next_run,
        last_run: last_run.and_then(|s| DateTime::from_timestamp(s, 0)),
        last_error: row.get(11)?,
        paused: row.get(13)?,
    }))
}
