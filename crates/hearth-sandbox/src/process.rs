//! Starting a contained command and ending everything it started.
//!
//! The child gets, between fork and exec: a new session (its process group
//! is how it is killed), umask 077, its `pids` cgroup, the rlimits, and
//! under Landlock the ruleset and seccomp filter. Everything it needs is
//! prepared before the fork; the child only makes system calls.
//!
//! When the command exits, its process group (and cgroup) is killed, so a
//! background job cannot outlive it; under bubblewrap the PID namespace
//! ends with it anyway. The same happens when the call is dropped: a
//! timeout or a cancelled reply.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt};

use super::limits::{PidsCgroup, Rlimits, join_self};
use super::memory::{self, MemoryCgroup};
use super::{Containment, Sandbox, SandboxError, bwrap, landlock::Confinement};

/// What a command left.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Output went past the cap, so the command was stopped there.
    pub cut: bool,
}

const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

pub(super) async fn run(
    sandbox: &Sandbox,
    command: &str,
    output_cap: usize,
) -> Result<Finished, SandboxError> {
    let argv: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), command.into()];
    let (mut child, group) = start(sandbox, &argv, &[], Stdio::null())?;
    // Read a little more than the cap (bytes for characters); past it the
    // command is stopped rather than buffered.
    let limit = (output_cap as u64 + 1) * 4;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (out, err, status) = tokio::join!(
        read_capped(stdout, limit, &group),
        read_capped(stderr, limit, &group),
        async {
            let status = child.wait().await;
            // Whatever it left running in the background ends with it.
            group.kill();
            group.reaped.store(true, Ordering::SeqCst);
            status
        }
    );
    Ok(Finished {
        status: status?,
        cut: out.1 || err.1,
        stdout: out.0,
        stderr: err.0,
    })
}

/// Starts `argv` contained as `sandbox` says, with `env` on top of the
/// clean environment, stdout and stderr piped: the child and its group.
pub(super) fn start(
    sandbox: &Sandbox,
    argv: &[OsString],
    env: &[(String, String)],
    stdin: Stdio,
) -> Result<(tokio::process::Child, Group), SandboxError> {
    if let Containment::Unavailable(why) = &sandbox.containment {
        return Err(SandboxError::Unavailable(why.clone()));
    }
    let cgroup = sandbox
        .cgroups
        .as_ref()
        .and_then(|root| root.create(sandbox.limits.processes).ok());
    let memory = cap_memory(sandbox, cgroup.as_ref());
    let rlimits = Rlimits::new(&sandbox.limits, cgroup.is_some());
    let confinement = match sandbox.containment {
        Containment::Landlock => Some(Arc::new(Confinement::new(
            &sandbox.workspace,
            sandbox.network,
            &sandbox.reads,
        )?)),
        _ => None,
    };
    let (mut std_command, inherited) = command_for(sandbox, argv)?;
    std_command.envs(env.iter().map(|(k, v)| (k, v)));
    let procs = [
        cgroup.as_ref().and_then(PidsCgroup::procs_fd),
        match &memory {
            MemoryCap::Own(m) => m.procs_fd(),
            _ => None,
        },
    ];
    let inherit: Vec<RawFd> = inherited.iter().map(AsRawFd::as_raw_fd).collect();
    // SAFETY: the closure only makes async-signal-safe system calls on
    // values prepared before the fork (Landlock takes its prepared ruleset
    // out of an uncontended mutex).
    unsafe {
        std_command.pre_exec(move || {
            prepare_child(&inherit, procs)?;
            rlimits.apply()?;
            if let Some(c) = &confinement {
                c.apply()?;
            }
            Ok(())
        });
    }
    let child = tokio::process::Command::from(std_command)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    drop(inherited);
    let group = Group {
        pgid: child.id().map(|p| p as i32),
        cgroup,
        memory,
        reaped: AtomicBool::new(false),
    };
    Ok((child, group))
}

/// Where a process tree's memory is capped.
pub(super) enum MemoryCap {
    /// No cap asked for, or no `memory` cgroup can be made here.
    None,
    /// A `memory` cgroup of its own (a v1 hierarchy, or v2 apart from
    /// the `pids` one).
    Own(MemoryCgroup),
    /// In its `pids` cgroup, which is also where v2 counts memory.
    InPids,
}

/// The memory cap `sandbox`'s limits ask for, where one can be made.
fn cap_memory(sandbox: &Sandbox, pids: Option<&PidsCgroup>) -> MemoryCap {
    let (Some(bytes), Some(root)) = (sandbox.limits.resident_bytes, &sandbox.memory) else {
        return MemoryCap::None;
    };
    let made = match pids {
        Some(p) if p.dir().parent() == Some(root.dir()) => {
            memory::limit(p.dir(), true, bytes).map(|()| MemoryCap::InPids)
        }
        _ => root.create(bytes).map(MemoryCap::Own),
    };
    made.unwrap_or_else(|e| {
        tracing::warn!("no memory cgroup for this process, so its memory is not capped: {e}");
        MemoryCap::None
    })
}

/// A started command's process group and cgroup: killed on drop.
pub(super) struct Group {
    pgid: Option<i32>,
    cgroup: Option<PidsCgroup>,
    memory: MemoryCap,
    /// The leader was reaped and its group killed: its number may be
    /// reused, so the group is not signalled again.
    pub(super) reaped: AtomicBool,
}

impl Group {
    pub(super) fn kill(&self) {
        if let Some(pgid) = self
            .pgid
            .filter(|p| *p > 1 && !self.reaped.load(Ordering::SeqCst))
        {
            // SAFETY: the group the child leads (it called setsid).
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
        if let Some(c) = &self.cgroup {
            c.kill_all();
        }
        if let MemoryCap::Own(m) = &self.memory {
            m.kill_all();
        }
    }

    /// Whether the kernel ended one of its processes for holding more
    /// memory than its cap.
    pub(super) fn out_of_memory(&self) -> bool {
        match (&self.memory, &self.cgroup) {
            (MemoryCap::Own(m), _) => m.oom_killed(),
            (MemoryCap::InPids, Some(p)) => memory::oom_killed(p.dir(), true),
            _ => false,
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn read_capped(
    stream: Option<impl AsyncRead + Unpin>,
    limit: u64,
    group: &Group,
) -> (Vec<u8>, bool) {
    let mut bytes = Vec::new();
    let Some(stream) = stream else {
        return (bytes, false);
    };
    let mut capped = stream.take(limit);
    let _ = capped.read_to_end(&mut bytes).await;
    let cut = bytes.len() as u64 >= limit;
    if cut {
        group.kill();
    }
    (bytes, cut)
}

/// In the child: a new session, private file modes, the inherited data
/// pipes kept open across exec, and the cgroups joined.
fn prepare_child(inherit: &[RawFd], procs: [Option<RawFd>; 2]) -> std::io::Result<()> {
    // SAFETY: async-signal-safe calls with plain arguments.
    unsafe {
        if libc::setsid() < 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::umask(0o077);
        for fd in inherit {
            if libc::fcntl(*fd, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    for fd in procs.into_iter().flatten() {
        join_self(fd)?;
    }
    Ok(())
}

/// The command line for `sandbox`'s containment running `argv`, with a
/// clean environment, and the pipes the child must inherit (bubblewrap's
/// synthetic files).
fn command_for(
    sandbox: &Sandbox,
    argv: &[OsString],
) -> std::io::Result<(std::process::Command, Vec<OwnedFd>)> {
    command_line(
        &sandbox.containment,
        sandbox.bwrap.as_deref(),
        &sandbox.workspace,
        sandbox.network,
        &sandbox.reads,
        argv,
    )
}

fn command_line(
    containment: &Containment,
    bwrap: Option<&Path>,
    workspace: &Path,
    network: bool,
    reads: &[std::path::PathBuf],
    argv: &[OsString],
) -> std::io::Result<(std::process::Command, Vec<OwnedFd>)> {
    let Some((program, args)) = argv.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "no program to run",
        ));
    };
    let mut inherited = Vec::new();
    let mut cmd = if *containment == Containment::Bubblewrap {
        let bwrap = bwrap.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "bwrap is not installed")
        })?;
        let (passwd, group) = bwrap::identity(workspace);
        let passwd = data_pipe(passwd.as_bytes())?;
        let group = data_pipe(group.as_bytes())?;
        let filter = bwrap::filter().map_err(std::io::Error::other)?;
        let seccomp = data_pipe(&filter)?;
        let mut c = std::process::Command::new(bwrap);
        let fds = bwrap::Inherited {
            passwd: passwd.as_raw_fd(),
            group: group.as_raw_fd(),
            seccomp: seccomp.as_raw_fd(),
        };
        c.args(bwrap::args(workspace, network, reads, fds));
        c.arg("--").args(argv);
        inherited.extend([passwd, group, seccomp]);
        c
    } else {
        let mut c = std::process::Command::new(program);
        c.args(args);
        c
    };
    cmd.current_dir(workspace)
        .env_clear()
        .env("PATH", PATH)
        .env("LANG", "C.UTF-8")
        .env("HOME", workspace)
        .env("USER", "hearth")
        .env("LOGNAME", "hearth");
    if *containment == Containment::Bubblewrap {
        cmd.env("TMPDIR", "/tmp");
    } else {
        cmd.env("TMPDIR", workspace);
    }
    Ok((cmd, inherited))
}

/// A pipe whose read end holds `content` (small: it fits the pipe buffer).
fn data_pipe(content: &[u8]) -> std::io::Result<OwnedFd> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors, which we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    File::from(write).write_all(content)?;
    Ok(read)
}

/// Runs `true` under the bubblewrap at `program` with hearth's arguments.
pub(super) fn probe_bwrap(program: &Path, workspace: &Path) -> std::io::Result<ExitStatus> {
    let (mut cmd, inherited) = command_line(
        &Containment::Bubblewrap,
        Some(program),
        workspace,
        false,
        &[],
        &["true".into()],
    )?;
    let inherit: Vec<RawFd> = inherited.iter().map(AsRawFd::as_raw_fd).collect();
    // SAFETY: as in `run`.
    unsafe {
        cmd.pre_exec(move || prepare_child(&inherit, [None, None]));
    }
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    drop(inherited);
    status
}
