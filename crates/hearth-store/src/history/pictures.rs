//! The pictures of a conversation's turns, kept in the history's own file
//! (private, 0600, like the rest of it): each by its SHA-256 once, and a
//! turn lists the ones it showed. A picture goes when the last turn that
//! showed it is pruned or forgotten; it never enters a workspace.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use crate::chat::{ChatMessage, Image};

pub(super) const SCHEMA: &str = "
                 CREATE TABLE IF NOT EXISTS pictures (
                     digest TEXT PRIMARY KEY,
                     bytes BLOB NOT NULL
                 );";

/// Brings a history written before pictures up to date: its turns gain a
/// list of pictures (none). Idempotent; nothing is lost.
pub fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let has_column = conn
        .prepare("SELECT 1 FROM pragma_table_info('messages') WHERE name = 'images'")?
        .exists([])?;
    if !has_column {
        conn.execute_batch("ALTER TABLE messages ADD COLUMN images TEXT")?;
    }
    Ok(())
}

/// Stores `message`'s pictures; what its row's `images` column holds
/// (`None` for a turn without any).
pub(super) fn store(conn: &Connection, message: &ChatMessage) -> rusqlite::Result<Option<String>> {
    if message.images.is_empty() {
        return Ok(None);
    }
    let mut insert =
        conn.prepare_cached("INSERT OR IGNORE INTO pictures (digest, bytes) VALUES (?1, ?2)")?;
    let mut digests = Vec::with_capacity(message.images.len());
    for image in &message.images {
        let digest = image.digest();
        insert.execute(params![digest, &image.bytes[..]])?;
        digests.push(digest);
    }
    Ok(Some(serde_json::Value::from(digests).to_string()))
}

/// The pictures a row's `images` column names, in order. One that is gone
/// (a damaged file) is skipped with a warning: the turn's text still loads.
pub(super) fn load(
    conn: &Connection,
    column: Option<&str>,
    cache: &mut HashMap<String, Image>,
) -> rusqlite::Result<Vec<Image>> {
    let Some(column) = column else {
        return Ok(Vec::new());
    };
    let digests: Vec<String> = serde_json::from_str(column).unwrap_or_else(|e| {
        tracing::warn!(
            "a history row's picture list is unreadable ({e}); its pictures are left out"
        );
        Vec::new()
    });
    let mut select = conn.prepare_cached("SELECT bytes FROM pictures WHERE digest = ?1")?;
    let mut out = Vec::with_capacity(digests.len());
    for digest in digests {
        if let Some(image) = cache.get(&digest) {
            out.push(image.clone());
            continue;
        }
        match select
            .query_row(params![digest], |r| r.get::<_, Vec<u8>>(0))
            .optional()?
        {
            Some(bytes) => {
                let image = Image::new(bytes);
                cache.insert(digest, image.clone());
                out.push(image);
            }
            None => tracing::warn!(digest, "a picture of the history is missing; left out"),
        }
    }
    Ok(out)
}

/// Deletes the pictures no turn shows any more; how many.
pub(super) fn forget_unshown(conn: &Connection) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "DELETE FROM pictures WHERE digest NOT IN
             (SELECT j.value FROM messages, json_each(messages.images) AS j
              WHERE messages.images IS NOT NULL)",
    )?
    .execute([])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{HISTORY_LIMIT, HistoryStore};

    fn seen(text: &str, bytes: &[u8]) -> ChatMessage {
        ChatMessage {
            images: vec![Image::new(bytes.to_vec())],
            ..ChatMessage::user(text)
        }
    }

    fn kept(path: &std::path::Path) -> i64 {
        Connection::open(path)
            .and_then(|c| c.query_row("SELECT count(*) FROM pictures", [], |r| r.get(0)))
            .unwrap_or(-1)
    }

    #[test]
    fn a_history_written_before_pictures_opens_with_every_turn() {
        let dir = tempfile::tempdir().unwrap();
        let path = HistoryStore::path_in(dir.path());
        {
            // The schema as it was: no `images` column, no pictures table.
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
                     conversation TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
                     created INTEGER NOT NULL DEFAULT (unixepoch()));
                 INSERT INTO messages (conversation, role, content)
                     VALUES ('a', 'user', 'old q'), ('a', 'assistant', 'old r');",
            )
            .unwrap();
        }
        let mut store = HistoryStore::open(&path).unwrap();
        store.append("a", &[seen("new q", b"PIC")]).unwrap();
        drop(store);
        // Opened again: the migration runs once and changes nothing more.
        let store = HistoryStore::open(&path).unwrap();
        let a = store.load("a", 50).unwrap();
        let got: Vec<(&str, usize)> = a
            .iter()
            .map(|m| (m.content.as_str(), m.images.len()))
            .collect();
        assert_eq!(got, [("old q", 0), ("old r", 0), ("new q", 1)]);
        assert_eq!(&a[2].images[0].bytes[..], b"PIC");
    }

    #[test]
    fn a_picture_lives_as_long_as_a_turn_that_shows_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = HistoryStore::path_in(dir.path());
        let mut store = HistoryStore::open(&path).unwrap();
        store.append("a", &[seen("mine", b"SHARED")]).unwrap();
        store.append("b", &[seen("theirs", b"SHARED")]).unwrap();
        store.append("b", &[seen("only b", b"B ONLY")]).unwrap();
        assert_eq!(kept(&path), 2, "one copy of the same bytes");
        store.clear("b").unwrap();
        assert_eq!(kept(&path), 1, "a still shows the shared one");
        assert_eq!(store.load("a", 50).unwrap()[0].images.len(), 1);
        // Pruned out of the newest HISTORY_LIMIT turns: gone with them.
        for i in 0..HISTORY_LIMIT {
            store
                .append("a", &[ChatMessage::assistant(format!("r{i}"))])
                .unwrap();
        }
        assert_eq!(kept(&path), 0);
        // A refused picture is taken off the newest user turn only.
        store.append("c", &[seen("first", b"ONE")]).unwrap();
        store.append("c", &[seen("second", b"TWO")]).unwrap();
        assert!(store.forget_last_pictures("c").unwrap());
        let c = store.load("c", 50).unwrap();
        assert_eq!((c[0].images.len(), c[1].images.len()), (1, 0));
        assert_eq!(kept(&path), 1);
        assert!(!store.forget_last_pictures("c").unwrap());
    }
}
