//! The bubblewrap sandbox: the command in its own namespaces, seeing only
//! the workspace (read-write) and the system's programs (read-only).
//!
//! - user, PID, IPC, UTS, cgroup and (unless the network is allowed) network
//!   namespaces; a fresh `/proc` shows only the sandbox's own processes;
//! - `/usr`, `/bin`, `/lib*` read-only, and from `/etc` only what programs
//!   need to start (the loader cache, the time zone, Debian's alternatives,
//!   OpenSSL's settings and the public certificates);
//!   `/etc/passwd` and `/etc/group` are synthetic, with one user;
//! - a private `/tmp`, a minimal `/dev`, all capabilities dropped;
//! - the workspace bound at its own path, as the working folder and `HOME`;
//! - `--die-with-parent` and `--new-session`;
//! - a seccomp filter ([`filter`]) that refuses io_uring: its operations
//!   (socket, connect, sendmsg, openat…) are not system calls a filter or
//!   an audit sees, so no ring may be made or driven, as under Landlock.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

/// `bwrap` on hearth's own `PATH` (not the clean one commands get), as
/// an absolute path.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|p| p.is_absolute() && p.is_file())
}

/// Top-level folders bound read-only when they are folders, or recreated
/// as the same symlink when they are links (merged `/usr`).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// What programs need from `/etc` to start.
const ETC_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/alternatives",
    // Never `/etc/ssl` whole: its `private` holds TLS keys.
    "/etc/ssl/openssl.cnf",
    "/etc/ssl/certs",
];

/// What name resolution and TLS need, bound only when the network is allowed.
const ETC_NETWORK: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ca-certificates",
];

/// The system calls that make and drive an io_uring ring.
pub const IO_URING: [libc::c_long; 3] = [
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// The seccomp program bubblewrap installs before the command runs (its
/// `--seccomp FD` reads it as raw `sock_filter`s): [`IO_URING`] fails
/// with `EPERM`, everything else is allowed (the namespaces contain it).
pub fn filter() -> Result<Vec<u8>, seccompiler::BackendError> {
    let rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> =
        IO_URING.iter().map(|call| (*call, vec![])).collect();
    let filter = seccompiler::SeccompFilter::new(
        rules,
        seccompiler::SeccompAction::Allow,
        seccompiler::SeccompAction::Errno(libc::EPERM as u32),
        std::env::consts::ARCH.try_into()?,
    )?;
    let program: seccompiler::BpfProgram = filter.try_into()?;
    Ok(program
        .iter()
        .flat_map(|i| {
            let mut raw = [0u8; 8];
            raw[..2].copy_from_slice(&i.code.to_ne_bytes());
            raw[2] = i.jt;
            raw[3] = i.jf;
            raw[4..].copy_from_slice(&i.k.to_ne_bytes());
            raw
        })
        .collect())
}

/// The descriptors the child inherits: the synthetic `/etc/passwd` and
/// `/etc/group`, and the seccomp program ([`filter`]).
#[derive(Debug, Clone, Copy)]
pub struct Inherited {
    pub passwd: RawFd,
    pub group: RawFd,
    pub seccomp: RawFd,
}

/// The arguments before the command: `fds` are what the child inherits;
/// `reads` are further paths bound read-only (where a tool server's code
/// lives).
pub fn args(workspace: &Path, network: bool, reads: &[PathBuf], fds: Inherited) -> Vec<OsString> {
    let Inherited {
        passwd,
        group,
        seccomp,
    } = fds;
    let mut a: Vec<OsString> = Vec::with_capacity(64);
    let mut push = |items: &[&str]| a.extend(items.iter().map(OsString::from));
    push(&["--unshare-all", "--die-with-parent", "--new-session"]);
    push(&["--cap-drop", "ALL", "--hostname", "hearth"]);
    if network {
        push(&["--share-net"]);
    }
    for dir in SYSTEM_DIRS {
        let path = Path::new(dir);
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    a.push("--symlink".into());
                    a.push(target.into());
                    a.push(dir.into());
                }
            }
            Ok(m) if m.is_dir() => {
                a.extend(["--ro-bind".into(), dir.into(), dir.into()]);
            }
            _ => {}
        }
    }
    let etc = ETC_FILES
        .iter()
        .chain(if network { ETC_NETWORK } else { &[] });
    for file in etc {
        a.extend(["--ro-bind-try".into(), file.into(), file.into()]);
    }
    a.extend([
        "--file".into(),
        passwd.to_string().into(),
        "/etc/passwd".into(),
    ]);
    a.extend([
        "--file".into(),
        group.to_string().into(),
        "/etc/group".into(),
    ]);
    a.extend(["--seccomp".into(), seccomp.to_string().into()]);
    for item in [
        "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run",
    ] {
        a.push(item.into());
    }
    for path in reads {
        a.extend(["--ro-bind-try".into(), path.into(), path.into()]);
    }
    a.extend([
        "--bind".into(),
        workspace.into(),
        workspace.into(),
        "--chdir".into(),
        workspace.into(),
    ]);
    a
}

/// The synthetic `/etc/passwd` and `/etc/group`: the current user, named
/// `hearth`, at home in the workspace.
pub fn identity(workspace: &Path) -> (String, String) {
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    (
        format!(
            "hearth:x:{uid}:{gid}:hearth:{}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
            workspace.display()
        ),
        format!("hearth:x:{gid}:\nnogroup:x:65534:\n"),
    )
}
