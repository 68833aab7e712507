//! Backups refused or kept whole: hostile cases, each beside one that works.

use std::path::Path;

use super::restore::restore;
use super::take::take;
use super::{BackupError, Manifest};

/// A data folder with a conversation and a memory.
fn data(dir: &Path) {
    let mut history = crate::history::HistoryStore::open(&dir.join("history.sqlite3")).unwrap();
    history
        .append(
            "c",
            &[
                crate::chat::ChatMessage::user("hi"),
                crate::chat::ChatMessage::assistant("hello"),
            ],
        )
        .unwrap();
    let memory = crate::memory::MemoryStore::open(&dir.join("memory.sqlite3")).unwrap();
    memory
        .store("local", "k", "v", crate::memory::Category::Core)
        .unwrap();
    std::fs::create_dir_all(dir.join("kv")).unwrap();
    std::fs::write(dir.join("kv/abc.kv"), b"state").unwrap();
    std::fs::write(dir.join("kv/abd.kv.tmp"), b"half").unwrap();
}

fn turns(dir: &Path) -> usize {
    let history = crate::history::HistoryStore::open(&dir.join("history.sqlite3")).unwrap();
    history.load("c", 50).unwrap().len()
}

#[test]
fn a_backup_restores_and_what_was_there_is_kept_aside() {
    let root = tempfile::tempdir().unwrap();
    let (live, copy) = (root.path().join("data"), root.path().join("copy"));
    data(&live);
    let config = root.path().join("config.toml");
    std::fs::write(&config, "[log]\nlevel = \"warn\"\n").unwrap();
    let taken = take(&live, Some(&config), &copy, true).unwrap();
    let names: Vec<&str> = taken
        .manifest
        .files
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "history.sqlite3",
            "memory.sqlite3",
            "config.toml",
            "kv/abc.kv"
        ],
        "a save under way is left out"
    );
    assert_eq!(taken.missing, ["scheduler.sqlite3", "lms.sqlite3"]);

    // Hostile: a second backup into the same folder.
    let e = take(&live, None, &copy, false).unwrap_err();
    assert!(matches!(e, BackupError::NotEmpty(_)), "{e}");

    // Later turns, then the restore: the backup's state comes back.
    let mut history = crate::history::HistoryStore::open(&live.join("history.sqlite3")).unwrap();
    history
        .append("c", &[crate::chat::ChatMessage::user("later")])
        .unwrap();
    drop(history);
    std::fs::write(&config, "[log]\nlevel = \"debug\"\n").unwrap();
    let restored = restore(&copy, &live, Some(&config)).unwrap();
    assert_eq!(turns(&live), 2);
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "[log]\nlevel = \"warn\"\n"
    );
    let old = restored.config_set_aside.unwrap();
    assert!(std::fs::read_to_string(old).unwrap().contains("debug"));
    assert_eq!(turns(&restored.set_aside), 3, "the replaced data is kept");
    assert_eq!(std::fs::read(live.join("kv/abc.kv")).unwrap(), b"state");
}

#[test]
fn a_damaged_or_foreign_backup_is_refused_and_nothing_changes() {
    let root = tempfile::tempdir().unwrap();
    let (live, copy) = (root.path().join("data"), root.path().join("copy"));
    data(&live);
    take(&live, None, &copy, false).unwrap();
    let mut history = crate::history::HistoryStore::open(&live.join("history.sqlite3")).unwrap();
    history
        .append("c", &[crate::chat::ChatMessage::user("later")])
        .unwrap();
    drop(history);

    // One byte changed in the copy of the history.
    let file = copy.join("history.sqlite3");
    let mut bytes = std::fs::read(&file).unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    let e = restore(&copy, &live, None).unwrap_err();
    assert!(matches!(e, BackupError::Damaged { .. }), "{e}");
    assert!(e.to_string().contains("history.sqlite3"), "{e}");
    assert_eq!(turns(&live), 3, "the data folder was not touched");
    bytes[n - 10] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();

    // A manifest that names a file outside the backup.
    let mut manifest = Manifest::read(&copy).unwrap();
    let good = manifest.clone();
    manifest.files[0].path = "../data/history.sqlite3".into();
    manifest.write(&copy).unwrap();
    let e = restore(&copy, &live, None).unwrap_err();
    assert!(matches!(e, BackupError::NotABackup { .. }), "{e}");

    // A database from a newer hearth, its checksum made to match.
    let newer = rusqlite::Connection::open(&file).unwrap();
    newer.pragma_update(None, "user_version", 99).unwrap();
    drop(newer);
    let mut manifest = good.clone();
    manifest.files[0] = super::Entry::of(&copy, "history.sqlite3", Some(99)).unwrap();
    manifest.write(&copy).unwrap();
    let e = restore(&copy, &live, None).unwrap_err();
    assert!(matches!(e, BackupError::Newer { found: 99, .. }), "{e}");
    assert_eq!(turns(&live), 3);

    // A folder without a manifest is no backup.
    let e = restore(root.path(), &live, None).unwrap_err();
    assert!(matches!(e, BackupError::NotABackup { .. }), "{e}");

    // Positive control: the backup as taken restores.
    let back = rusqlite::Connection::open(&file).unwrap();
    back.pragma_update(None, "user_version", 1).unwrap();
    drop(back);
    let mut manifest = good;
    manifest.files[0] = super::Entry::of(&copy, "history.sqlite3", Some(1)).unwrap();
    manifest.write(&copy).unwrap();
    restore(&copy, &live, None).unwrap();
    assert_eq!(turns(&live), 2);
}
