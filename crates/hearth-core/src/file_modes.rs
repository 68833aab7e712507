//! Files only hearth's user may read: folders 0700, files 0600, whatever
//! the umask. The databases hold conversations and memories, the offset and
//! KV files what was said, received media what was sent; none of it is for
//! other accounts on the machine.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates `dir` (and missing parents) and makes it 0700.
pub fn make_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    std::fs::set_permissions(dir, Permissions::from_mode(0o700))
}

/// Opens `path` for writing (truncated), created 0600; an existing file is
/// made 0600 too.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(0o600))?;
    Ok(file)
}

/// Writes `bytes` to a private file at `path`.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    create_private_file(path)?.write_all(bytes)
}

/// Replaces `path` with `bytes` so that a crash or a power cut leaves the
/// old file or the new one, whole, never an empty or torn one: written
/// beside it as `NAME.tmp` with `mode` (whatever the umask), flushed to
/// disk, renamed over it, and the folder's entry flushed too.
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::io::Write;
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    file.set_permissions(Permissions::from_mode(mode))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// Makes the SQLite database at `path` private before SQLite opens it:
/// created empty and 0600 when missing (its `-wal` and `-shm` take its
/// mode), and an existing one, with its companions, set to 0600.
///
/// An existing file is never opened here: closing any descriptor of a
/// file drops every POSIX lock this process holds on it, so opening and
/// closing a database that another connection of this process has open
/// would take that connection's locks away, and another process (the
/// command line beside the daemon) could then checkpoint and delete the
/// write-ahead log under it: the daemon kept reading a deleted log's
/// stale pages (found by tests/calendar_feed.rs, a revoked feed still
/// served).
pub fn prepare_database(path: &Path) -> io::Result<()> {
    if std::fs::symlink_metadata(path).is_err() {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_os_string();
        name.push(suffix);
        match std::fs::set_permissions(&name, Permissions::from_mode(0o600)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_replaced_file_has_the_mode_asked_for_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("offset");
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, Permissions::from_mode(0o644)).unwrap();
        replace_file(&f, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(mode(&f), 0o600);
        replace_file(&f, b"newer", 0o640).unwrap();
        assert_eq!(mode(&f), 0o640);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["offset"]);
    }

    #[test]
    fn folders_and_files_are_private_even_when_they_existed_open() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        make_private_dir(&sub).unwrap();
        assert_eq!(mode(&sub), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        let f = dir.path().join("f");
        std::fs::write(&f, "x").unwrap();
        std::fs::set_permissions(&f, Permissions::from_mode(0o644)).unwrap();
        write_private(&f, b"y").unwrap();
        assert_eq!(mode(&f), 0o600);
        let db = dir.path().join("h.sqlite3");
        std::fs::write(dir.path().join("h.sqlite3-wal"), "").unwrap();
        prepare_database(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&dir.path().join("h.sqlite3-wal")), 0o600);
    }
}
