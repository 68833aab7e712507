//! Opening a workspace file so that no link leads out of it.
//!
//! The path is opened relative to the workspace with `openat2` and
//! `RESOLVE_BENEATH` (no `..` or symlink may leave it, checked by the
//! kernel during the open itself, so there is no check-then-use race), and
//! `O_NOFOLLOW` (the file itself may not be a symlink). After the open, the
//! file's real path (from `/proc/self/fd`) must still be in the workspace,
//! it must be a regular file (a FIFO cannot hang the call: the open does not
//! block), and a file about to be written may have no other hard link.
//! Kernels before 5.6 lack `openat2`: there the last two checks stand alone.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why a workspace file was not opened; each names the path as given,
/// relative to the workspace.
#[derive(Debug, thiserror::Error)]
pub enum ConfinedError {
    #[error("{} is outside the workspace", .0.display())]
    Outside(PathBuf),
    #[error("{} is a symbolic link; refused", .0.display())]
    Symlink(PathBuf),
    #[error("{} leads out of the workspace; refused", .0.display())]
    LeadsOut(PathBuf),
    #[error("{} is not a regular file", .0.display())]
    NotAFile(PathBuf),
    #[error("{} is not a folder", .0.display())]
    NotAFolder(PathBuf),
    #[error("{} has another hard link; writing through it is refused", .0.display())]
    HardLink(PathBuf),
    #[error("cannot {doing} {}: {source}", .path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ConfinedError {
    fn io(doing: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        move |source| Self::Io {
            doing,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What the file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Created 0600 when missing; truncated unless appending, but only
    /// after the checks.
    Write {
        append: bool,
    },
}

/// Opens `path` (absolute, inside `workspace`) for `access`.
pub fn open(workspace: &Path, path: &Path, access: Access) -> Result<File, ConfinedError> {
    let relative = relative_in(workspace, path)?;
    let mut flags = libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
    flags |= match access {
        Access::Read => libc::O_RDONLY,
        Access::Write { append: false } => libc::O_WRONLY | libc::O_CREAT,
        Access::Write { append: true } => libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND,
    };
    let file = open_beneath(workspace, relative, flags).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => ConfinedError::Symlink(relative.to_path_buf()),
        Some(libc::EXDEV) => ConfinedError::LeadsOut(relative.to_path_buf()),
        _ => ConfinedError::io("open", relative)(e),
    })?;
    let meta = file
        .metadata()
        .map_err(ConfinedError::io("inspect", relative))?;
    if !meta.is_file() {
        return Err(ConfinedError::NotAFile(relative.to_path_buf()));
    }
    still_inside(workspace, &file, relative)?;
    if let Access::Write { append } = access {
        if meta.nlink() > 1 {
            return Err(ConfinedError::HardLink(relative.to_path_buf()));
        }
        if !append {
            file.set_len(0)
                .map_err(ConfinedError::io("truncate", relative))?;
        }
    }
    Ok(file)
}

/// The text of `relative` in `workspace`, opened through the same checks
/// and read up to `max_bytes`, for hearth's own reads of workspace files
/// (the system prompt's context files and skills): a symlink a command left
/// there cannot make hearth read its config or databases into a prompt.
pub fn read_text(workspace: &Path, relative: &str, max_bytes: u64) -> Option<String> {
    let workspace = workspace.canonicalize().ok()?;
    let (bytes, _) = read_start(&workspace, &workspace.join(relative), max_bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The first `limit` bytes of a workspace file, and its length: a large
/// file is never read past what is shown.
pub fn read_start(
    workspace: &Path,
    path: &Path,
    limit: u64,
) -> Result<(Vec<u8>, u64), ConfinedError> {
    use std::io::Read;
    let file = open(workspace, path, Access::Read)?;
    let len = file
        .metadata()
        .map_err(ConfinedError::io("inspect", path))?
        .len();
    let mut bytes = Vec::with_capacity(len.min(limit) as usize);
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(ConfinedError::io("read", path))?;
    Ok((bytes, len))
}

/// The entries of the folder `path` (absolute, inside `workspace`), read
/// through a descriptor opened with the same discipline as [`open`]: a
/// component swapped for a symlink between the policy's check and the
/// listing cannot lead out, since the kernel resolves the path beneath the
/// workspace during the open and the listing reads that very folder.
pub fn read_dir(workspace: &Path, path: &Path) -> Result<std::fs::ReadDir, ConfinedError> {
    let relative = relative_in(workspace, path)?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let dir = open_beneath(workspace, relative, flags).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => ConfinedError::Symlink(relative.to_path_buf()),
        Some(libc::EXDEV) => ConfinedError::LeadsOut(relative.to_path_buf()),
        // O_NOFOLLOW with O_DIRECTORY answers a final symlink with ENOTDIR.
        Some(libc::ENOTDIR) if path.is_symlink() => ConfinedError::Symlink(relative.to_path_buf()),
        Some(libc::ENOTDIR) => ConfinedError::NotAFolder(relative.to_path_buf()),
        _ => ConfinedError::io("list", relative)(e),
    })?;
    still_inside(workspace, &dir, relative)?;
    let fd = format!("/proc/self/fd/{}", dir.as_raw_fd());
    // The descriptor's own entry in /proc is the opened folder itself, not
    // its path walked again.
    std::fs::read_dir(&fd).map_err(ConfinedError::io("list", relative))
}

/// `path` relative to `workspace` (`.` for the workspace itself).
fn relative_in<'a>(workspace: &Path, path: &'a Path) -> Result<&'a Path, ConfinedError> {
    let relative = path
        .strip_prefix(workspace)
        .map_err(|_| ConfinedError::Outside(path.to_path_buf()))?;
    Ok(if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    })
}

/// Refuses an opened `file` whose real path (from `/proc/self/fd`) is not
/// in the workspace.
fn still_inside(workspace: &Path, file: &File, relative: &Path) -> Result<(), ConfinedError> {
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(ConfinedError::io("resolve", relative))?;
    if real.starts_with(workspace) {
        Ok(())
    } else {
        Err(ConfinedError::LeadsOut(relative.to_path_buf()))
    }
}

fn open_beneath(workspace: &Path, relative: &Path, flags: i32) -> std::io::Result<File> {
    let dir = File::open(workspace)?;
    let name = CString::new(relative.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL in the path"))?;
    // SAFETY: open_how is plain data; the syscall gets valid pointers.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.mode = if flags & libc::O_CREAT != 0 { 0o600 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd >= 0 {
        // SAFETY: a descriptor the kernel just gave us.
        return Ok(unsafe { File::from_raw_fd(fd as i32) });
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() != Some(libc::ENOSYS) {
        return Err(error);
    }
    // No openat2: a plain open, judged by the checks after it.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(unsafe { File::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_of_the_workspace_are_refused_and_files_inside_open() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(root.join("secret"), "s").unwrap();
        std::fs::write(ws.join("ok.txt"), "fine").unwrap();
        std::os::unix::fs::symlink(root.join("secret"), ws.join("link")).unwrap();
        std::os::unix::fs::symlink(&root, ws.join("up")).unwrap();
        std::fs::hard_link(root.join("secret"), ws.join("hard")).unwrap();
        let write = Access::Write { append: false };
        assert!(open(&ws, &ws.join("ok.txt"), Access::Read).is_ok());
        assert!(open(&ws, &ws.join("new.txt"), write).is_ok());
        for (path, access) in [
            ("link", Access::Read),
            ("link", write),
            ("up/secret", Access::Read),
            ("up/new", write),
            ("hard", write),
        ] {
            let e = open(&ws, &ws.join(path), access).unwrap_err();
            assert!(
                matches!(
                    e,
                    ConfinedError::Symlink(_)
                        | ConfinedError::LeadsOut(_)
                        | ConfinedError::HardLink(_)
                ),
                "{path}: {e:?}"
            );
            assert!(e.to_string().contains("refused"), "{path}: {e}");
        }
        assert!(!root.join("new").exists());
        assert_eq!(read_text(&ws, "ok.txt", 100).as_deref(), Some("fine"));
        assert_eq!(read_text(&ws, "link", 100), None);
        assert_eq!(read_text(&ws, "up/secret", 100), None);
        assert_eq!(std::fs::read_to_string(root.join("secret")).unwrap(), "s");
    }

    #[test]
    fn a_folder_swapped_for_a_link_is_never_listed_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        let outside = root.join("outside");
        std::fs::create_dir_all(ws.join("d")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret-name"), "s").unwrap();
        std::fs::write(ws.join("d/inside"), "i").unwrap();
        let names = |path: &Path| -> Result<Vec<String>, ConfinedError> {
            Ok(read_dir(&ws, path)?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect())
        };
        // Positive control: the folder and the workspace itself list.
        assert_eq!(names(&ws.join("d")).unwrap(), ["inside"]);
        assert!(names(&ws).unwrap().contains(&"d".to_string()));
        // A link in its place, or above it, is refused.
        std::os::unix::fs::symlink(&outside, ws.join("l")).unwrap();
        std::os::unix::fs::symlink(&root, ws.join("up")).unwrap();
        for path in ["l", "up/outside", "d/../../outside"] {
            let e = names(&ws.join(path)).unwrap_err();
            assert!(
                matches!(e, ConfinedError::Symlink(_) | ConfinedError::LeadsOut(_)),
                "{path}: {e:?}"
            );
        }
        // The race: another thread swaps `d` for a link to `outside` and
        // back while the folder is listed, again and again.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (ws, outside, stop) = (ws.clone(), outside.clone(), stop.clone());
            std::thread::spawn(move || {
                let (d, real, link) = (ws.join("d"), ws.join("d.real"), ws.join("d.link"));
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::rename(&d, &real);
                    let _ = std::os::unix::fs::symlink(&outside, &link);
                    let _ = std::fs::rename(&link, &d);
                    let _ = std::fs::remove_file(&d);
                    let _ = std::fs::rename(&real, &d);
                }
            })
        };
        let (mut listed, mut refused) = (0, 0);
        for _ in 0..3_000 {
            match names(&ws.join("d")) {
                Ok(found) => {
                    assert!(!found.contains(&"secret-name".to_string()), "{found:?}");
                    listed += 1;
                }
                Err(_) => refused += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(
            listed > 0 && refused > 0,
            "{listed} listed, {refused} refused"
        );
    }
}
