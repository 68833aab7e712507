//! Sweeps forget exactly what is past its limit, in every store, and
//! nothing within it.

use std::path::Path;

use super::{Swept, sweep, usage};
use crate::chat::ChatMessage;
use crate::config::{Config, Environment, RetentionConfig};

const DAY: i64 = 86_400;

/// A data folder with 3 conversations of 12 messages (one quiet for 400
/// days), 30 memories, 2 finished inbox records (one 40 days old) and one
/// waiting, and an LMS item gone for 200 days beside one still there.
fn data(dir: &Path, now: i64) {
    let mut history = crate::history::HistoryStore::open(&dir.join("history.sqlite3"))
        .unwrap()
        .keeping(1_000);
    for c in ["a", "b", "quiet"] {
        for i in 0..12 {
            history
                .append(c, &[ChatMessage::user(format!("{c}{i}"))])
                .unwrap();
        }
    }
    let conn = rusqlite::Connection::open(dir.join("history.sqlite3")).unwrap();
    conn.execute(
        "UPDATE messages SET created = ?1 WHERE conversation = 'quiet'",
        [now - 400 * DAY],
    )
    .unwrap();
    for (id, state, age) in [
        ("1", "answered", 40),
        ("2", "answered", 1),
        ("3", "received", 90),
    ] {
        conn.execute(
            "INSERT INTO inbox (channel, message_id, message, state, updated) VALUES ('t', ?1, '{}', ?2, ?3)",
            rusqlite::params![id, state, now - age * DAY],
        )
        .unwrap();
    }
    let memory = crate::memory::MemoryStore::open(&dir.join("memory.sqlite3")).unwrap();
    for i in 0..30 {
        memory
            .store(
                "s",
                &format!("k{i}"),
                &format!("fact {i}"),
                crate::memory::Category::Conversation,
            )
            .unwrap();
    }
    let lms = crate::lms::SeenStore::open_in(dir).unwrap();
    let then = chrono::DateTime::from_timestamp(now - 200 * DAY, 0).unwrap();
    let item =
        |id: &str| crate::lms::LmsItem::new("school", id, crate::lms::ItemKind::Assignment, id);
    lms.record("school", &[item("gone"), item("stays")], then, false)
        .unwrap();
    let now_utc = chrono::DateTime::from_timestamp(now, 0).unwrap();
    lms.record("school", &[item("stays")], now_utc, false)
        .unwrap();
    // Three documents of 0.6 MB of text each, a day apart.
    let documents = crate::documents::DocumentStore::open(&dir.join("documents.sqlite3")).unwrap();
    for (i, name) in ["old.txt", "mid.txt", "new.txt"].iter().enumerate() {
        let text = format!("{name} {}", "word ".repeat(120_000));
        let doc = crate::documents::Extracted {
            kind: crate::documents::Kind::Text,
            pages: vec![text],
            cut: false,
        };
        let added = now - (3 - i as i64) * DAY;
        documents.add("s", name, "sent", &doc, added).unwrap();
    }
}

fn config(dir: &Path, retention: &str) -> Config {
    let file = dir.join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[data]\ndir = \"{}\"\n[retention]\n{retention}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    Config::load_file(&file, &Environment::with_home(dir)).unwrap()
}

fn integrity(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let verdict: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(verdict, "ok", "{}", path.display());
}

#[test]
fn a_sweep_forgets_what_is_past_each_limit_and_nothing_else() {
    let root = tempfile::tempdir().unwrap();
    let now = chrono::Utc::now().timestamp();
    let generous = config(
        root.path(),
        "history_messages = 12\nhistory_days = 500\nmemory_entries = 30\ninbox_days = 60\nlms_days = 365\ndocuments_mb = 2",
    );
    data(&generous.data_dir, now);
    // Positive control: limits that hold everything forget nothing.
    assert_eq!(
        sweep(&generous.data_dir, &generous.retention, now).unwrap(),
        Swept::default()
    );
    let tight = config(
        root.path(),
        "history_messages = 10\nhistory_days = 365\nmemory_entries = 20\ninbox_days = 30\nlms_days = 180\ndocuments_mb = 1",
    );
    let swept = sweep(&tight.data_dir, &tight.retention, now).unwrap();
    assert_eq!(
        swept,
        Swept {
            // 2 from each of 3 conversations, then the quiet one's 10.
            history: 2 * 3 + 10,
            memory: 10,
            inbox: 1,
            lms: 1,
            // 1 MB holds one of the three (0.6 MB each): the newest.
            documents: 2,
            inbox_keys: vec![("t".to_string(), "1".to_string())],
        }
    );
    // A second sweep finds nothing more.
    assert_eq!(
        sweep(&tight.data_dir, &tight.retention, now)
            .unwrap()
            .total(),
        0
    );
    for db in [
        "history.sqlite3",
        "memory.sqlite3",
        "lms.sqlite3",
        "documents.sqlite3",
    ] {
        integrity(&tight.data_dir.join(db));
    }
    let lines = usage(&tight);
    let holds = |store: &str| {
        lines
            .iter()
            .find(|u| u.store == store)
            .map(|u| u.holds.clone())
            .unwrap()
    };
    assert!(
        holds("history").starts_with("20 messages in 2 conversations (longest 10)"),
        "{lines:?}"
    );
    assert_eq!(
        holds("inbox"),
        "1 finished, 1 not yet",
        "a message not answered is never forgotten"
    );
    assert_eq!(holds("memory"), "20 entries");
    assert!(
        holds("lms").starts_with("1 items on their sites, 0 gone"),
        "{lines:?}"
    );
    let shown = super::render("data folder", &lines);
    assert!(
        shown.contains("limit: 10 per conversation; forgotten after 365 quiet days"),
        "{shown}"
    );
}

#[test]
fn a_folder_without_databases_is_swept_and_shown_as_empty() {
    let root = tempfile::tempdir().unwrap();
    let c = config(root.path(), "");
    assert_eq!(
        sweep(&c.data_dir, &RetentionConfig::default(), 0).unwrap(),
        Swept::default()
    );
    assert!(
        !c.data_dir.join("history.sqlite3").exists(),
        "a sweep creates nothing"
    );
    let lines = usage(&c);
    assert!(lines.iter().all(|u| u.bytes.unwrap_or(0) == 0), "{lines:?}");
}
