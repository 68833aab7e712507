//! Resource limits for a contained command: rlimits, and a `pids` cgroup
//! where hearth may make one.
//!
//! The kernel never applies `RLIMIT_NPROC` to root, so a fork bomb run by a
//! root daemon is bounded by a `pids` cgroup (v1 hierarchy or a v2 cgroup
//! with the controller delegated). For other users the process count is an
//! rlimit, set relative to the tasks the user already runs (the limit counts
//! all of them).

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

/// What one command may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU seconds (`RLIMIT_CPU`).
    pub cpu_secs: u64,
    /// Address space per process, in bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// Largest file a process may write, in bytes (`RLIMIT_FSIZE`).
    pub file_bytes: u64,
    /// Processes and threads at once.
    pub processes: u32,
    /// Memory the whole process tree may hold, where a `memory` cgroup can
    /// be made ([`crate::memory`]); none for a command.
    pub resident_bytes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu_secs: 60,
            memory_bytes: 1 << 30,
            file_bytes: 256 << 20,
            processes: 64,
            resident_bytes: None,
        }
    }
}

/// The rlimit values, computed before the fork: the child only calls
/// `setrlimit`.
#[derive(Debug, Clone, Copy)]
pub struct Rlimits {
    values: [(libc::__rlimit_resource_t, u64); 6],
}

impl Rlimits {
    /// `limits` for a process of the current user; `nproc` is applied only
    /// when no cgroup bounds the count.
    pub fn new(limits: &Limits, count_by_cgroup: bool) -> Self {
        let nproc = if count_by_cgroup {
            libc::RLIM_INFINITY
        } else {
            user_tasks().saturating_add(u64::from(limits.processes))
        };
        Self {
            values: [
                (libc::RLIMIT_CPU, limits.cpu_secs.max(1)),
                (libc::RLIMIT_AS, limits.memory_bytes),
                (libc::RLIMIT_FSIZE, limits.file_bytes),
                (libc::RLIMIT_CORE, 0),
                (libc::RLIMIT_NOFILE, 1024),
                (libc::RLIMIT_NPROC, nproc),
            ],
        }
    }

    /// Sets every limit on the calling process (async-signal-safe: for
    /// `pre_exec`). Limits are only ever lowered.
    pub fn apply(&self) -> std::io::Result<()> {
        for (resource, value) in self.values {
            let mut current = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: plain syscalls on a stack value.
            if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let value = value.min(current.rlim_max);
            let wanted = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if unsafe { libc::setrlimit(resource, &wanted) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Tasks (processes and threads) the current user runs now.
fn user_tasks() -> u64 {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .map(|e| std::fs::read_dir(e.path().join("task")).map_or(1, |t| t.count() as u64))
        .sum()
}

/// Where hearth may make `pids` cgroups: a v1 `pids` hierarchy, or a v2
/// cgroup whose children get the controller.
#[derive(Debug, Clone)]
pub struct CgroupRoot {
    dir: PathBuf,
}

impl CgroupRoot {
    /// The cgroup hearth runs in, if a child with a `pids.max` can be made
    /// there; stale children of an earlier run are removed.
    pub fn find() -> Option<Self> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let candidates = own.lines().filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let mount = if controllers.split(',').any(|c| c == "pids") {
                mount_point(&mounts, |fs, opts| {
                    fs == "cgroup" && opts.split(',').any(|o| o == "pids")
                })
            } else if controllers.is_empty() {
                mount_point(&mounts, |fs, _| fs == "cgroup2")
            } else {
                None
            }?;
            Some(mount.join(path.trim_start_matches('/')))
        });
        for dir in candidates {
            let root = Self { dir };
            root.remove_stale();
            if let Ok(probe) = root.create(1) {
                drop(probe);
                return Some(root);
            }
        }
        None
    }

    /// A new child cgroup allowing `max` tasks.
    pub fn create(&self, max: u32) -> std::io::Result<PidsCgroup> {
        let name = format!(
            "hearth-sandbox-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let dir = self.dir.join(name);
        std::fs::create_dir(&dir)?;
        // Removed again on drop, also when the next steps fail.
        let mut cgroup = PidsCgroup { procs: None, dir };
        std::fs::write(cgroup.dir.join("pids.max"), max.to_string())?;
        cgroup.procs = Some(
            OpenOptions::new()
                .write(true)
                .open(cgroup.dir.join("cgroup.procs"))?,
        );
        Ok(cgroup)
    }

    /// Children left by a daemon that was killed: emptied and removed.
    fn remove_stale(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(rest) = name.strip_prefix("hearth-sandbox-") else {
                continue;
            };
            let owner: Option<i32> = rest.split('-').next().and_then(|p| p.parse().ok());
            // SAFETY: signal 0 only checks whether the process exists.
            let alive = owner.is_some_and(|p| unsafe { libc::kill(p, 0) } == 0);
            if !alive {
                let stale = PidsCgroup {
                    procs: None,
                    dir: entry.path(),
                };
                drop(stale);
            }
        }
    }
}

/// The mount point of the first filesystem `matches` accepts.
pub(crate) fn mount_point(mounts: &str, matches: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    mounts.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() >= 4 && matches(f[2], f[3])).then(|| PathBuf::from(f[1]))
    })
}

/// One command's cgroup: bounds its task count; emptied and removed on drop.
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
    procs: Option<File>,
}

impl PidsCgroup {
    /// The open `cgroup.procs`, for the child to join with [`join_self`].
    pub fn procs_fd(&self) -> Option<RawFd> {
        self.procs.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Kills every task in the cgroup, until none is left.
    pub fn kill_all(&self) {
        kill_members(&self.dir);
    }
}

impl PidsCgroup {
    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        self.procs = None;
        remove_when_empty(self.dir.clone());
    }
}

/// Kills what is left in the cgroup `dir` and removes it; tasks still
/// exiting are waited for off this thread for a moment.
pub(crate) fn remove_when_empty(dir: PathBuf) {
    kill_members(&dir);
    if std::fs::remove_dir(&dir).is_err() {
        std::thread::spawn(move || {
            for _ in 0..200 {
                kill_members(&dir);
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        });
    }
}

pub(crate) fn kill_members(dir: &Path) {
    for _ in 0..100 {
        let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
            return;
        };
        let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            // SAFETY: a signal to a task in our own cgroup.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is `fd`
/// (async-signal-safe: for `pre_exec`).
pub fn join_self(fd: RawFd) -> std::io::Result<()> {
    // Writing 0 moves the writer itself.
    // SAFETY: a write of one byte from a static buffer.
    if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
