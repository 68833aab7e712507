//! A contained process that stays: a tool server that hearth speaks to over
//! its stdin and stdout for as long as it runs.
//!
//! It is started as [`crate::process`] starts a command (its own session,
//! the rlimits, the cgroup, bubblewrap or Landlock), without a shell. When
//! the [`Serving`] is dropped, its process group and cgroup are killed, so
//! nothing it started outlives it; [`Serving::wait`] reports how it ended
//! and kills what it left behind.

use std::ffi::OsString;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::Ordering;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use super::process::{Group, start};
use super::{Sandbox, SandboxError};

/// A running contained process.
pub struct Serving {
    // Declared first, so dropped first: the group is killed while its
    // leader is not yet reaped, and its number cannot have been reused.
    group: Group,
    child: Child,
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Serving(pid {:?})", self.child.id())
    }
}

pub(super) fn spawn(
    sandbox: &Sandbox,
    program: &str,
    args: &[String],
    env: &[(String, String)],
) -> Result<Serving, SandboxError> {
    let mut argv: Vec<OsString> = vec![program.into()];
    argv.extend(args.iter().map(OsString::from));
    let (child, group) = start(sandbox, &argv, env, Stdio::piped())?;
    Ok(Serving { group, child })
}

impl Serving {
    /// Its process id (the leader of its group), while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Its stdin, stdout and stderr, once each.
    pub fn take_io(&mut self) -> (Option<ChildStdin>, Option<ChildStdout>, Option<ChildStderr>) {
        (
            self.child.stdin.take(),
            self.child.stdout.take(),
            self.child.stderr.take(),
        )
    }

    /// Waits for it to end; then whatever it left running is killed.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await;
        self.group.kill();
        self.group.reaped.store(true, Ordering::SeqCst);
        status
    }

    /// Whether the kernel ended one of its processes for holding more
    /// memory than its cap (`Limits::resident_bytes`).
    pub fn out_of_memory(&self) -> bool {
        self.group.out_of_memory()
    }

    /// Kills it and everything it started.
    pub fn kill(&self) {
        self.group.kill();
    }
}
