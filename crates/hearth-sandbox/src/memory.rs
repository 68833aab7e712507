//! A cap on the memory a contained process tree holds, where hearth may
//! make a `memory` cgroup (a v1 `memory` hierarchy, or a v2 cgroup whose
//! children get the controller).
//!
//! `RLIMIT_AS` bounds each process's address space, which a runtime such
//! as Node reserves far beyond what it uses, so a tool server's rlimit must
//! be wide; and it bounds one process, not the tree, nor the servers
//! together. The cgroup counts what the whole tree holds in memory, swap
//! included, and the kernel ends the tree's largest process when it would
//! go over. Where no such cgroup can be made, [`MemoryRoot::find`] finds
//! none and the rlimit alone applies (`hearth doctor` says which).

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

/// Where hearth may make `memory` cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRoot {
    dir: PathBuf,
    unified: bool,
}

impl MemoryRoot {
    /// The cgroup hearth runs in, if a child with a memory limit can be
    /// made there.
    pub fn find() -> Option<Self> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let candidates = own.lines().filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let (mount, unified) = if controllers.split(',').any(|c| c == "memory") {
                (
                    super::limits::mount_point(&mounts, |fs, opts| {
                        fs == "cgroup" && opts.split(',').any(|o| o == "memory")
                    })?,
                    false,
                )
            } else if controllers.is_empty() {
                (
                    super::limits::mount_point(&mounts, |fs, _| fs == "cgroup2")?,
                    true,
                )
            } else {
                return None;
            };
            Some(Self {
                dir: mount.join(path.trim_start_matches('/')),
                unified,
            })
        });
        for root in candidates {
            root.remove_stale();
            if root.create(1 << 30).is_ok() {
                return Some(root);
            }
        }
        None
    }

    /// Its folder: a v2 root shared with the `pids` one means one child
    /// must carry both limits (a process is in one v2 cgroup only).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A new child cgroup holding at most `bytes`, swap included.
    pub fn create(&self, bytes: u64) -> std::io::Result<MemoryCgroup> {
        let name = format!(
            "hearth-memory-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let dir = self.dir.join(name);
        std::fs::create_dir(&dir)?;
        // Removed again on drop, also when the next steps fail.
        let mut cgroup = MemoryCgroup {
            dir,
            unified: self.unified,
            procs: None,
        };
        limit(&cgroup.dir, self.unified, bytes)?;
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
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("hearth-memory-")) else {
                continue;
            };
            let owner: Option<i32> = rest.split('-').next().and_then(|p| p.parse().ok());
            // SAFETY: signal 0 only checks whether the process exists.
            let alive = owner.is_some_and(|p| unsafe { libc::kill(p, 0) } == 0);
            if !alive {
                super::limits::kill_members(&entry.path());
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}

/// Sets `dir`'s memory limit to `bytes`, and its swap to none beyond it
/// where the kernel accounts swap (the limit counts it, or swap is 0).
pub fn limit(dir: &Path, unified: bool, bytes: u64) -> std::io::Result<()> {
    if unified {
        std::fs::write(dir.join("memory.max"), bytes.to_string())?;
        let _ = std::fs::write(dir.join("memory.swap.max"), "0");
    } else {
        std::fs::write(dir.join("memory.limit_in_bytes"), bytes.to_string())?;
        let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), bytes.to_string());
    }
    Ok(())
}

/// Whether the kernel ended a process in `dir` for going over its limit.
pub fn oom_killed(dir: &Path, unified: bool) -> bool {
    let (file, key) = if unified {
        ("memory.events", "oom_kill")
    } else {
        ("memory.oom_control", "oom_kill")
    };
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
    let counted = text.lines().any(|l| {
        l.split_once(' ')
            .is_some_and(|(k, v)| k == key && v.trim().parse::<u64>().is_ok_and(|n| n > 0))
    });
    // v1 kernels without the counter: the limit was hit at all.
    counted
        || (!unified
            && std::fs::read_to_string(dir.join("memory.failcnt"))
                .is_ok_and(|n| n.trim().parse::<u64>().is_ok_and(|n| n > 0))
            && !text.contains("oom_kill "))
}

/// One process tree's memory cgroup: emptied and removed on drop.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    unified: bool,
    procs: Option<File>,
}

impl MemoryCgroup {
    /// The open `cgroup.procs`, for the child to join.
    pub fn procs_fd(&self) -> Option<RawFd> {
        self.procs.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Whether the kernel ended one of its processes for going over.
    pub fn oom_killed(&self) -> bool {
        oom_killed(&self.dir, self.unified)
    }

    pub fn kill_all(&self) {
        super::limits::kill_members(&self.dir);
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        self.procs = None;
        super::limits::remove_when_empty(self.dir.clone());
    }
}
