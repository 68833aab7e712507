//! How full each store is: its size on disk, what it holds, and the limit
//! that keeps it there (`hearth status`, `/status`).

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::config::Config;

/// One store's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    pub store: &'static str,
    /// Bytes on disk (a database with its write-ahead log); `None` for a
    /// store kept inside another's file.
    pub bytes: Option<u64>,
    /// What it holds now, in words.
    pub holds: String,
    /// What keeps it bounded, in words.
    pub limit: String,
}

/// Every store of the data folder `config` names, read without writing
/// (a running daemon is not disturbed; a missing file holds nothing).
pub fn usage(config: &Config) -> Vec<Usage> {
    let dir = &config.data_dir;
    let r = &config.retention;
    let history = dir.join("history.sqlite3");
    let [h, inbox, memory, lms, jobs, documents] = rows(dir);
    let (kv_bytes, kv_files) = folder(&dir.join(crate::backup::KV_DIR));
    let (model_bytes, model_files) = folder(&dir.join("models"));
    let at = |v: &Vec<i64>, i: usize| v.get(i).copied().unwrap_or(0);
    let quiet = match r.history_days {
        0 => "kept however quiet".to_string(),
        d => format!("forgotten after {d} quiet days"),
    };
    vec![
        Usage {
            store: "history",
            bytes: Some(database_bytes(&history)),
            holds: format!(
                "{} messages in {} conversations (longest {}), {} pictures",
                at(&h, 0),
                at(&h, 1),
                at(&h, 2),
                at(&h, 3)
            ),
            limit: format!("{} per conversation; {quiet}", r.history_messages),
        },
        Usage {
            store: "inbox",
            bytes: None,
            holds: format!("{} finished, {} not yet", at(&inbox, 0), at(&inbox, 1)),
            limit: format!("finished kept {} days", r.inbox_days),
        },
        Usage {
            store: "memory",
            bytes: Some(database_bytes(&dir.join("memory.sqlite3"))),
            holds: format!("{} entries", at(&memory, 0)),
            limit: format!("{} entries", r.memory_entries),
        },
        Usage {
            store: "lms",
            bytes: Some(database_bytes(&dir.join("lms.sqlite3"))),
            holds: format!(
                "{} items on their sites, {} gone, {} reminders sent",
                at(&lms, 0),
                at(&lms, 1),
                at(&lms, 2)
            ),
            limit: format!("gone items and past reminders kept {} days", r.lms_days),
        },
        Usage {
            store: "documents",
            bytes: Some(database_bytes(&dir.join("documents.sqlite3"))),
            holds: format!(
                "{} documents, {:.1} MB of text",
                at(&documents, 0),
                at(&documents, 1) as f64 / f64::from(1 << 20)
            ),
            limit: format!("{} MB of text, the oldest forgotten first", r.documents_mb),
        },
        Usage {
            store: "scheduler",
            bytes: Some(database_bytes(&dir.join("scheduler.sqlite3"))),
            holds: format!("{} jobs", at(&jobs, 0)),
            limit: format!("{} jobs", config.scheduler.max_jobs),
        },
        Usage {
            store: "kv caches",
            bytes: Some(kv_bytes),
            holds: format!("{kv_files} saved conversations"),
            limit: format!("{} MiB on disk", config.engine.disk_cache_mb),
        },
        Usage {
            store: "models",
            bytes: Some(model_bytes),
            holds: format!("{model_files} files"),
            limit: "what you pull (`hearth models`)".to_string(),
        },
    ]
}

/// The counts each store's line shows: history, inbox, memory, LMS,
/// scheduler and documents, in that order (zeros for a missing file).
fn rows(dir: &Path) -> [Vec<i64>; 6] {
    let count = |name: &str, sql: &str| counts(&dir.join(name), sql).unwrap_or_default();
    [
        count(
            "history.sqlite3",
            "SELECT count(*), count(DISTINCT conversation),
                coalesce((SELECT max(n) FROM (SELECT count(*) AS n FROM messages GROUP BY conversation)), 0),
                (SELECT count(*) FROM pictures)
             FROM messages",
        ),
        count(
            "history.sqlite3",
            "SELECT count(*) FILTER (WHERE state IN ('answered', 'superseded', 'cancelled', 'failed')),
                count(*) FILTER (WHERE state NOT IN ('answered', 'superseded', 'cancelled', 'failed'))
             FROM inbox",
        ),
        count("memory.sqlite3", "SELECT count(*) FROM memories"),
        count(
            "lms.sqlite3",
            "SELECT count(*) FILTER (WHERE present), count(*) FILTER (WHERE NOT present),
                (SELECT count(*) FROM reminders) FROM items",
        ),
        count("scheduler.sqlite3", "SELECT count(*) FROM jobs"),
        count(
            "documents.sqlite3",
            "SELECT (SELECT count(*) FROM documents),
                (SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM chunks)",
        ),
    ]
}

/// The lines as a table under `heading`, sizes in MiB, with the data
/// folder's total.
pub fn render(heading: &str, lines: &[Usage]) -> String {
    let mut out = format!("{heading}\n");
    let total: u64 = lines.iter().filter_map(|u| u.bytes).sum();
    for u in lines {
        let size = match u.bytes {
            Some(b) => mib(b),
            None => "(in history)".to_string(),
        };
        out.push_str(&format!(
            "  {:<10} {:>12}  {}; limit: {}\n",
            u.store, size, u.holds, u.limit
        ));
    }
    out.push_str(&format!("  {:<10} {:>12}\n", "total", mib(total)));
    out
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The numbers one row of `sql` gives, read-only; `None` when the file
/// is not there or cannot be read.
fn counts(path: &Path, sql: &str) -> Option<Vec<i64>> {
    if !path.exists() {
        return None;
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    conn.busy_timeout(std::time::Duration::from_secs(2)).ok()?;
    conn.query_row(sql, [], |row| {
        (0..row.as_ref().column_count())
            .map(|i| row.get::<_, i64>(i))
            .collect()
    })
    .ok()
}

/// A database's bytes with its write-ahead log.
fn database_bytes(path: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .filter_map(|suffix| {
            let mut p = path.as_os_str().to_os_string();
            p.push(suffix);
            std::fs::metadata(p).ok()
        })
        .map(|m| m.len())
        .sum()
}

/// Bytes and files under `dir`, not following links.
fn folder(dir: &Path) -> (u64, usize) {
    let mut total = (0, 0);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return total;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            let (b, f) = folder(&entry.path());
            total = (total.0 + b, total.1 + f);
        } else if meta.is_file() {
            total = (total.0 + meta.len(), total.1 + 1);
        }
    }
    total
}
