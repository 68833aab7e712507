//! `backup.json`: what a backup holds, written last, so that a folder with
//! one is a whole backup.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{BackupError, CONFIG, DATABASES, KV_DIR, io};

/// The manifest's name in a backup folder.
pub const NAME: &str = "backup.json";

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// The hearth version that took it.
    pub hearth: String,
    /// When, in seconds since the Unix epoch.
    pub taken: i64,
    /// Every file, by its path inside the backup.
    pub files: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// Inside the backup folder, `/`-separated (`kv/…` for a KV cache).
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    /// A database's schema version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<u32>,
}

impl Entry {
    /// Describes the file `path` inside the backup `root`.
    pub fn of(root: &Path, path: &str, schema: Option<u32>) -> Result<Self, BackupError> {
        let file = root.join(path);
        let (bytes, sha256) = digest(&file)?;
        Ok(Self {
            path: path.to_string(),
            bytes,
            sha256,
            schema,
        })
    }
}

/// A file's size and SHA-256, in hex.
pub fn digest(file: &Path) -> Result<(u64, String), BackupError> {
    let mut f = std::fs::File::open(file).map_err(io(file))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io(file))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    Ok((bytes, crate::hex::hex(&hasher.finalize())))
}

impl Manifest {
    pub fn write(&self, root: &Path) -> Result<(), BackupError> {
        let path = root.join(NAME);
        let text = serde_json::to_string_pretty(self).map_err(|e| BackupError::Io {
            path: path.clone(),
            source: e.into(),
        })?;
        crate::file_modes::replace_file(&path, text.as_bytes(), 0o600).map_err(io(&path))
    }

    pub fn read(root: &Path) -> Result<Self, BackupError> {
        let path = root.join(NAME);
        let not = |reason: String| BackupError::NotABackup {
            path: root.to_path_buf(),
            reason,
        };
        let text =
            std::fs::read_to_string(&path).map_err(|e| not(format!("cannot read {NAME}: {e}")))?;
        let manifest: Self =
            serde_json::from_str(&text).map_err(|e| not(format!("{NAME}: {e}")))?;
        for entry in &manifest.files {
            if !restorable(&entry.path) {
                return Err(not(format!(
                    "{NAME} names {}, which is none of the databases, {CONFIG} or {KV_DIR}/NAME.kv",
                    entry.path
                )));
            }
        }
        Ok(manifest)
    }
}

/// Whether a backup may hold `path`: one of the databases, the config, or a
/// saved cache directly under `kv/`. Nothing else is ever put into a data
/// folder, whatever a manifest names.
pub fn restorable(path: &str) -> bool {
    if path == CONFIG || DATABASES.iter().any(|(name, _)| *name == path) {
        return true;
    }
    let Some(name) = path
        .strip_prefix(KV_DIR)
        .and_then(|rest| rest.strip_prefix('/'))
    else {
        return false;
    };
    let stem = name.strip_suffix(".kv").unwrap_or("");
    !stem.is_empty()
        && stem
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
