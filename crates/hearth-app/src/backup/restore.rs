//! `hearth restore PATH`: puts a backup back, with the daemon stopped.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::manifest::{Manifest, digest};
use super::{BackupError, CONFIG, DATABASES, KV_DIR, io};
use crate::lock::DataLock;

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    pub manifest: Manifest,
    /// Where what the data folder held before went.
    pub set_aside: PathBuf,
    /// Where the config in use went, when the backup's replaced it.
    pub config_set_aside: Option<PathBuf>,
}

/// Copies the backup at `from` into a private staging folder inside
/// `data_dir` (each file read once, through a descriptor that refuses a
/// link), checks the copies whole, then, holding `data_dir` as a daemon
/// would, moves its databases and KV caches aside and puts the checked
/// copies in their place. What is installed is what was checked: a file
/// swapped in the backup folder after the check changes nothing. With
/// `config` (the file in use), the backup's config replaces it, and the
/// old one is kept beside it.
pub fn restore(
    from: &Path,
    data_dir: &Path,
    config: Option<&Path>,
) -> Result<Restored, BackupError> {
    let manifest = Manifest::read(from)?;
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
    let staged = data_dir.join(format!(".restore-staging-{stamp}-{}", std::process::id()));
    let result = stage(from, &staged, &manifest)
        .and_then(|()| check(&staged, &manifest))
        .and_then(|()| install_staged(&staged, data_dir, config, &manifest, &stamp));
    let _ = std::fs::remove_dir_all(&staged);
    let (set_aside, config_set_aside) = result?;
    Ok(Restored {
        manifest,
        set_aside,
        config_set_aside,
    })
}

/// Each file of the manifest copied from `from` into `staged`.
fn stage(from: &Path, staged: &Path, manifest: &Manifest) -> Result<(), BackupError> {
    crate::file_modes::make_private_dir(staged).map_err(io(staged))?;
    for entry in &manifest.files {
        let damaged = |reason: String| BackupError::Damaged {
            file: entry.path.clone(),
            reason,
        };
        plain(from, &entry.path).map_err(&damaged)?;
        let target = staged.join(&entry.path);
        if let Some(dir) = target.parent() {
            crate::file_modes::make_private_dir(dir).map_err(io(dir))?;
        }
        install(&from.join(&entry.path), &target)?;
    }
    Ok(())
}

/// Holding the data folder: the old data aside, the staged copies in.
fn install_staged(
    staged: &Path,
    data_dir: &Path,
    config: Option<&Path>,
    manifest: &Manifest,
    stamp: &str,
) -> Result<(PathBuf, Option<PathBuf>), BackupError> {
    let _lock = DataLock::acquire(data_dir, "hearth restore")?;
    let aside = data_dir.join(format!("replaced-by-restore-{stamp}"));
    crate::file_modes::make_private_dir(&aside).map_err(io(&aside))?;
    for (name, _) in DATABASES {
        for suffix in ["", "-wal", "-shm"] {
            move_if_there(&data_dir.join(format!("{name}{suffix}")), &aside)?;
        }
    }
    move_if_there(&data_dir.join(KV_DIR), &aside)?;
    let mut config_set_aside = None;
    for entry in &manifest.files {
        let source = staged.join(&entry.path);
        if entry.path == CONFIG {
            if let Some(config) = config {
                let mut old = config.as_os_str().to_os_string();
                old.push(format!(".replaced-by-restore-{stamp}"));
                let old = PathBuf::from(old);
                if config.exists() {
                    std::fs::copy(config, &old).map_err(io(config))?;
                    config_set_aside = Some(old);
                }
                install(&source, config)?;
            }
            continue;
        }
        let target = data_dir.join(&entry.path);
        if let Some(dir) = target.parent() {
            crate::file_modes::make_private_dir(dir).map_err(io(dir))?;
        }
        std::fs::rename(&source, &target).map_err(io(&target))?;
    }
    // Each database opens as the daemon will open it (an older one is
    // brought forward here, with its copy taken first).
    for (name, schema) in DATABASES {
        let path = data_dir.join(name);
        if path.exists() {
            crate::storage::open(&path, schema)?;
        }
    }
    Ok((aside, config_set_aside))
}

/// Every file there with the size and checksum the manifest gives; every
/// database whole by SQLite's own check and of a schema this hearth opens.
fn check(from: &Path, manifest: &Manifest) -> Result<(), BackupError> {
    for entry in &manifest.files {
        let file = from.join(&entry.path);
        let damaged = |reason: String| BackupError::Damaged {
            file: entry.path.clone(),
            reason,
        };
        plain(from, &entry.path).map_err(&damaged)?;
        let (bytes, sha256) = digest(&file).map_err(|e| damaged(e.to_string()))?;
        if bytes != entry.bytes || sha256 != entry.sha256 {
            return Err(damaged(format!(
                "{bytes} bytes with SHA-256 {sha256}; the manifest says {} bytes, {}",
                entry.bytes, entry.sha256
            )));
        }
        let Some((_, schema)) = DATABASES.iter().find(|(n, _)| *n == entry.path) else {
            continue;
        };
        let conn = Connection::open_with_flags(&file, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| damaged(e.to_string()))?;
        let verdict: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| damaged(e.to_string()))?;
        if verdict != "ok" {
            return Err(damaged(format!("SQLite's integrity check: {verdict}")));
        }
        let found: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| damaged(e.to_string()))?;
        if found > schema.version() {
            return Err(BackupError::Newer {
                file: entry.path.clone(),
                found,
                known: schema.version(),
            });
        }
        super::schema_objects::foreign_in(
            Path::new(&entry.path),
            &conn,
            schema,
            found == schema.version(),
        )
        .map_err(&damaged)?;
    }
    Ok(())
}

/// Refuses a link (or anything but a file) at `path` inside `root` or at
/// a folder on the way to it, so that a restore reads only the backup's own
/// files.
fn plain(root: &Path, path: &str) -> Result<(), String> {
    let mut at = root.to_path_buf();
    let parts: Vec<&str> = path.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let kind = std::fs::symlink_metadata(&at)
            .map_err(|e| e.to_string())?
            .file_type();
        let last = i + 1 == parts.len();
        if kind.is_symlink() || (last && !kind.is_file()) || (!last && !kind.is_dir()) {
            return Err(format!(
                "{} is a link or not a plain file; a backup holds only files",
                at.display()
            ));
        }
    }
    Ok(())
}

fn move_if_there(path: &Path, into: &Path) -> Result<(), BackupError> {
    let Some(name) = path.file_name() else {
        return Ok(());
    };
    match std::fs::rename(path, into.join(name)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path)(e)),
        _ => Ok(()),
    }
}

/// Copies the backup's file `from` (never through a link) to `to`, private.
fn install(from: &Path, to: &Path) -> Result<(), BackupError> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut bytes = Vec::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(from)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(io(from))?;
    crate::file_modes::replace_file(to, &bytes, 0o600).map_err(io(to))
}
