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
    assert_eq!(
        taken.missing,
        ["scheduler.sqlite3", "lms.sqlite3", "documents.sqlite3"]
    );

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

/// A manifest may name only what a data folder holds: a name such as
/// `.bashrc` or `kv/../x` is refused before anything moves.
#[test]
fn a_manifest_naming_other_files_is_refused() {
    for (path, ok) in [
        ("history.sqlite3", true),
        ("config.toml", true),
        ("kv/0123abcd.kv", true),
        ("kv/a-b_c.kv", true),
        (".bashrc", false),
        ("history.sqlite3-wal", false),
        ("kv/x.kv.tmp", false),
        ("kv/.kv", false),
        ("kv/sub/x.kv", false),
        ("kv/../x.kv", false),
        ("kv", false),
        ("/etc/x.kv", false),
        ("models/evil.gguf", false),
        ("replaced-by-restore-1/history.sqlite3", false),
    ] {
        assert_eq!(super::manifest::restorable(path), ok, "{path}");
    }
    let root = tempfile::tempdir().unwrap();
    let (live, copy) = (root.path().join("data"), root.path().join("copy"));
    data(&live);
    take(&live, None, &copy, true).unwrap();
    let good = Manifest::read(&copy).unwrap();
    std::fs::write(copy.join("autostart.sh"), "#!/bin/sh\n").unwrap();
    let mut manifest = good.clone();
    manifest
        .files
        .push(super::Entry::of(&copy, "autostart.sh", None).unwrap());
    manifest.write(&copy).unwrap();
    let e = restore(&copy, &live, None).unwrap_err();
    assert!(matches!(e, BackupError::NotABackup { .. }), "{e}");
    assert!(e.to_string().contains("autostart.sh"), "{e}");
    assert!(!live.join("autostart.sh").exists());
    // Positive control: the manifest as written restores.
    good.write(&copy).unwrap();
    restore(&copy, &live, None).unwrap();
    assert_eq!(std::fs::read(live.join("kv/abc.kv")).unwrap(), b"state");
}

/// A backup whose file, or whose `kv` folder, is a link to a file elsewhere
/// (the user's SSH key, say) is refused: a restore reads only the backup's
/// own files, and the link's target never lands in the data folder.
#[test]
fn links_in_a_backup_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let (live, copy) = (root.path().join("data"), root.path().join("copy"));
    data(&live);
    take(&live, None, &copy, true).unwrap();
    let good = Manifest::read(&copy).unwrap();
    let secret = root.path().join("id_ed25519");
    std::fs::write(&secret, b"PRIVATE KEY").unwrap();

    // The cache file itself a link, its manifest entry made to match.
    let kv = copy.join("kv/abc.kv");
    let saved = std::fs::read(&kv).unwrap();
    std::fs::remove_file(&kv).unwrap();
    std::os::unix::fs::symlink(&secret, &kv).unwrap();
    let mut manifest = good.clone();
    let at = manifest.files.iter().position(|f| f.path == "kv/abc.kv");
    manifest.files[at.unwrap()] = super::Entry::of(&copy, "kv/abc.kv", None).unwrap();
    manifest.write(&copy).unwrap();
    let e = restore(&copy, &live, None).unwrap_err();
    assert!(matches!(e, BackupError::Damaged { .. }), "{e}");
    assert!(e.to_string().contains("link"), "{e}");
    assert_eq!(std::fs::read(live.join("kv/abc.kv")).unwrap(), b"state");

    // The kv folder a link to a folder holding the key under a cache's name.
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::copy(&secret, elsewhere.join("abc.kv")).unwrap();
    std::fs::remove_file(&kv).unwrap();
    std::fs::remove_dir(copy.join("kv")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, copy.join("kv")).unwrap();
    let e = restore(&copy, &live, None).unwrap_err();
    assert!(matches!(e, BackupError::Damaged { .. }), "{e}");
    assert!(e.to_string().contains("link"), "the checksum matched: {e}");
    assert_eq!(std::fs::read(live.join("kv/abc.kv")).unwrap(), b"state");

    // Positive control: the real folder and file back, it restores.
    std::fs::remove_file(copy.join("kv")).unwrap();
    std::fs::create_dir(copy.join("kv")).unwrap();
    std::fs::write(&kv, &saved).unwrap();
    good.write(&copy).unwrap();
    restore(&copy, &live, None).unwrap();
    assert_eq!(std::fs::read(live.join("kv/abc.kv")).unwrap(), b"state");
}

/// A trigger planted in a backup's database (SQLite's integrity check
/// passes it, and a rewritten manifest matches) would fire as hearth
/// writes: the restore is refused, naming it, and nothing changes. The
/// same backup without it restores.
#[test]
fn a_trigger_planted_in_a_backup_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let (live, copy) = (root.path().join("data"), root.path().join("copy"));
    data(&live);
    take(&live, None, &copy, false).unwrap();
    let good = Manifest::read(&copy).unwrap();
    let file = copy.join("memory.sqlite3");
    let clean = std::fs::read(&file).unwrap();
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = DELETE;
         CREATE TRIGGER wipe AFTER INSERT ON memories BEGIN DELETE FROM memories; END;
         CREATE VIEW everything AS SELECT * FROM memories;",
    )
    .unwrap();
    drop(conn);
    let mut manifest = good.clone();
    let at = manifest
        .files
        .iter()
        .position(|f| f.path == "memory.sqlite3")
        .unwrap();
    manifest.files[at] = super::Entry::of(&copy, "memory.sqlite3", Some(1)).unwrap();
    manifest.write(&copy).unwrap();
    let e = restore(&copy, &live, None).unwrap_err();
    assert!(matches!(e, BackupError::Damaged { .. }), "{e}");
    let said = e.to_string();
    assert!(
        said.contains("trigger wipe") && said.contains("view everything"),
        "{said}"
    );
    assert_eq!(turns(&live), 2, "the data folder was not touched");
    // Positive control: the database as hearth wrote it restores.
    std::fs::write(&file, &clean).unwrap();
    good.write(&copy).unwrap();
    restore(&copy, &live, None).unwrap();
}

/// A destination another user could write in is refused before anything
/// is written (they could swap files before a restore); a new folder and an
/// empty private one of our own are taken.
#[test]
fn a_destination_others_may_write_in_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = tempfile::tempdir().unwrap();
    let live = root.path().join("data");
    data(&live);
    let shared = root.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = take(&live, None, &shared, false).unwrap_err();
    assert!(matches!(e, BackupError::Unsafe { .. }), "{e}");
    assert!(e.to_string().contains("others may write"), "{e}");
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0);
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&shared, &link).unwrap();
    let e = take(&live, None, &link, false).unwrap_err();
    assert!(e.to_string().contains("link"), "{e}");
    // As root, a folder of another user (the files would still be hearth's,
    // but its owner could rename them away and put others in their place).
    if unsafe { libc::geteuid() } == 0 {
        let theirs = root.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        let e = take(&live, None, &theirs, false).unwrap_err();
        assert!(e.to_string().contains("belongs to user 65534"), "{e}");
    }
    // Positive controls: a new folder, and an empty one of our own.
    take(&live, None, &root.path().join("new"), false).unwrap();
    let mine = root.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
    take(&live, None, &mine, false).unwrap();
}

/// What is installed is what was checked: the backup's files are copied
/// once, checked as copied, and a change to the backup folder after that
/// cannot reach the data folder. Here the change comes before the copy,
/// so the checksum catches it; the staging folder is gone either way.
#[test]
fn a_restore_leaves_no_staging_folder_behind() {
    let root = tempfile::tempdir().unwrap();
    let (live, copy) = (root.path().join("data"), root.path().join("copy"));
    data(&live);
    take(&live, None, &copy, false).unwrap();
    std::fs::write(copy.join("memory.sqlite3"), b"swapped").unwrap();
    assert!(restore(&copy, &live, None).is_err());
    let staging = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".restore-staging")
            })
            .count()
    };
    assert_eq!(staging(&live), 0);
}
