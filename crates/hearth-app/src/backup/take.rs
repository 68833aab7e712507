//! `hearth backup PATH`: a consistent copy of the data folder, taken while
//! the daemon may be writing to it.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::manifest::{Entry, Manifest};
use super::{BackupError, CONFIG, DATABASES, KV_DIR, io};

/// What was copied.
#[derive(Debug)]
pub struct Taken {
    pub manifest: Manifest,
    /// Databases the data folder did not have yet.
    pub missing: Vec<&'static str>,
}

/// Copies `data_dir`'s databases, `config` (the file in use, if any) and,
/// with `kv`, the saved KV caches into the new or empty folder `dest`.
pub fn take(
    data_dir: &Path,
    config: Option<&Path>,
    dest: &Path,
    kv: bool,
) -> Result<Taken, BackupError> {
    prepare(dest)?;
    let mut files = Vec::new();
    let mut missing = Vec::new();
    for (name, _) in DATABASES {
        let from = data_dir.join(name);
        if !from.is_file() {
            missing.push(name);
            continue;
        }
        let version = copy_database(&from, &dest.join(name))?;
        files.push(Entry::of(dest, name, Some(version))?);
    }
    if let Some(config) = config {
        copy_file(config, &dest.join(CONFIG))?;
        files.push(Entry::of(dest, CONFIG, None)?);
    }
    if kv {
        files.extend(copy_kv(&data_dir.join(KV_DIR), dest)?);
    }
    let manifest = Manifest {
        hearth: env!("CARGO_PKG_VERSION").to_string(),
        taken: chrono::Utc::now().timestamp(),
        files,
    };
    manifest.write(dest)?;
    Ok(Taken { manifest, missing })
}

/// `dest` made, private, and empty. A folder that is there already must be
/// this user's own and writable by nobody else (checked before anything
/// is written): another user who could write there could swap the
/// backup's files before it is restored.
fn prepare(dest: &Path) -> Result<(), BackupError> {
    use std::os::unix::fs::MetadataExt as _;
    match std::fs::symlink_metadata(dest) {
        Ok(m) => {
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            let why = if m.file_type().is_symlink() {
                Some("it is a link".to_string())
            } else if m.uid() != me {
                Some(format!(
                    "it belongs to user {}, not to hearth's ({me})",
                    m.uid()
                ))
            } else if m.mode() & 0o022 != 0 {
                Some(format!(
                    "others may write in it (mode {:o})",
                    m.mode() & 0o777
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(BackupError::Unsafe {
                    path: dest.to_path_buf(),
                    why,
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(dest)(e)),
    }
    crate::file_modes::make_private_dir(dest).map_err(io(dest))?;
    let mut entries = std::fs::read_dir(dest).map_err(io(dest))?;
    if entries.next().is_some() {
        return Err(BackupError::NotEmpty(dest.to_path_buf()));
    }
    Ok(())
}

/// SQLite's own copy of `from` as one read transaction sees it; the
/// copy's schema version.
fn copy_database(from: &Path, to: &Path) -> Result<u32, BackupError> {
    let sqlite = |source| BackupError::Sqlite {
        path: from.to_path_buf(),
        source,
    };
    let conn =
        Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(sqlite)?;
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(sqlite)?;
    // Created empty and 0600 first: `VACUUM INTO` fills an empty file.
    crate::file_modes::prepare_database(to).map_err(io(to))?;
    conn.execute("VACUUM INTO ?1", [to.to_string_lossy()])
        .map_err(sqlite)?;
    let copy = Connection::open_with_flags(to, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(sqlite)?;
    copy.query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sqlite)
}

fn copy_file(from: &Path, to: &Path) -> Result<(), BackupError> {
    let bytes = std::fs::read(from).map_err(io(from))?;
    crate::file_modes::replace_file(to, &bytes, 0o600).map_err(io(to))
}

/// The saved KV caches: each file is written whole and renamed into place
/// by the engine, so a plain copy of each is consistent; one that goes
/// away meanwhile is left out.
fn copy_kv(dir: &Path, dest: &Path) -> Result<Vec<Entry>, BackupError> {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let into = dest.join(KV_DIR);
    crate::file_modes::make_private_dir(&into).map_err(io(&into))?;
    let mut entries = Vec::new();
    for item in listing.flatten() {
        let is_file = item.file_type().is_ok_and(|t| t.is_file());
        let Some(name) = item.file_name().to_str().map(str::to_string) else {
            continue;
        };
        // `*.kv.tmp` is a save under way: its `*.kv`, when done, is whole.
        if !is_file || !name.ends_with(".kv") {
            continue;
        }
        match std::fs::read(item.path()) {
            Ok(bytes) => {
                let to = into.join(&name);
                crate::file_modes::replace_file(&to, &bytes, 0o600).map_err(io(&to))?;
                entries.push(Entry::of(dest, &format!("{KV_DIR}/{name}"), None)?);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&item.path())(e)),
        }
    }
    Ok(entries)
}
