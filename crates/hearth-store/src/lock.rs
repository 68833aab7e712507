//! One daemon per data folder: an exclusive `flock` on the data folder
//! itself, held for the daemon's life, with the holder written in
//! `<data>/daemon.lock` for the next one to name. The lock is on the folder,
//! not the file, so deleting the file by hand does not let a second daemon
//! in.
//!
//! Two daemons on one folder would both take up the inbox: the second
//! reads the first one's in-flight messages as leftovers of a crash and
//! answers them again. The kernel drops the lock when the process ends
//! however it ends (`kill -9` included), so a stale file never blocks a
//! start; the text inside is only ever read to explain a refusal.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The lock file's name inside the data folder.
pub const FILE: &str = "daemon.lock";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another hearth daemon is using the data folder {} ({holder}); two daemons on one folder would answer the same messages twice. Stop that one first (`systemctl --user stop hearth`, or kill {pid}), or give this one its own `[data] dir`",
        .dir.display(),
        pid = .pid.map_or_else(|| "it".to_string(), |p| p.to_string())
    )]
    Held {
        dir: PathBuf,
        holder: String,
        pid: Option<u32>,
    },
    #[error("cannot lock the data folder {}: {source}; fix: check that `[data] dir` is a writable folder of this user", .dir.display())]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct DataLock {
    _folder: File,
    _file: File,
    path: PathBuf,
}

impl DataLock {
    /// Takes the data folder `dir` for `what` (for example "hearth daemon"),
    /// or says who holds it.
    pub fn acquire(dir: &Path, what: &str) -> Result<Self, LockError> {
        let io = |source| LockError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        crate::file_modes::make_private_dir(dir).map_err(io)?;
        let folder = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir)
            .map_err(io)?;
        let path = dir.join(FILE);
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(folder.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(io(e));
            }
            let text = holder_text(&path);
            return Err(LockError::Held {
                dir: dir.to_path_buf(),
                pid: pid_of(&text),
                holder: describe(&text),
            });
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(io)?;
        if !file.metadata().map_err(io)?.is_file() {
            return Err(io(std::io::Error::other(format!(
                "{} is not a regular file",
                path.display()
            ))));
        }
        let since = chrono::Local::now().format("%Y-%m-%d %H:%M:%S");
        let text = format!("pid {}\n{what} since {since}\n", std::process::id());
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_data().map_err(io)?;
        Ok(Self {
            _folder: folder,
            _file: file,
            path,
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What the holder wrote, without following a link; empty when the file
/// is gone.
fn holder_text(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        let _ = file.take(4096).read_to_string(&mut text);
    }
    text
}

fn pid_of(text: &str) -> Option<u32> {
    text.lines()
        .find_map(|l| l.strip_prefix("pid "))
        .and_then(|p| p.trim().parse().ok())
}

/// "pid 1234, hearth daemon since …", or what can be said without a text.
fn describe(text: &str) -> String {
    match (pid_of(text), text.lines().nth(1)) {
        (Some(pid), Some(what)) => format!("pid {pid}, {what}"),
        (Some(pid), None) => format!("pid {pid}"),
        _ => "a process whose daemon.lock is missing or not written yet".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_told_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataLock::acquire(dir.path(), "hearth daemon").unwrap();
        let e = DataLock::acquire(dir.path(), "hearth daemon").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains(&format!("pid {}", std::process::id()))
                && text.contains("hearth daemon since")
                && text.contains("[data] dir"),
            "{text}"
        );
        drop(first);
        // Released with its holder: the next start takes it.
        DataLock::acquire(dir.path(), "hearth daemon").unwrap();
    }

    #[test]
    fn deleting_the_lock_file_by_hand_does_not_let_a_second_holder_in() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataLock::acquire(dir.path(), "hearth daemon").unwrap();
        std::fs::remove_file(first.path()).unwrap();
        let e = DataLock::acquire(dir.path(), "hearth daemon").unwrap_err();
        assert!(matches!(e, LockError::Held { .. }), "{e}");
        assert!(e.to_string().contains("daemon.lock is missing"), "{e}");
        // Control: once the first lets go, the folder is free again.
        drop(first);
        let lock = DataLock::acquire(dir.path(), "hearth daemon").unwrap();
        assert!(lock.path().is_file());
    }

    #[test]
    fn a_stale_file_left_by_a_killed_holder_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "pid 1\nhearth daemon since then\n").unwrap();
        let lock = DataLock::acquire(dir.path(), "hearth daemon").unwrap();
        let text = std::fs::read_to_string(lock.path()).unwrap();
        assert!(text.starts_with(&format!("pid {}\n", std::process::id())));
    }

    #[test]
    fn a_symlinked_lock_file_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join(FILE)).unwrap();
        assert!(DataLock::acquire(dir.path(), "hearth daemon").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}
