//! hearth-sandbox: the OS sandbox every command a tool starts runs in.
//!
//! A string allowlist cannot contain programs that execute and write on
//! their own (`awk`, `sed`, `find`), so containment is the kernel's:
//!
//! - [`bwrap`]: bubblewrap namespaces, the first choice;
//! - [`landlock`]: Landlock file and network rules plus a seccomp filter,
//!   where bubblewrap cannot run (not installed, no user namespaces);
//! - [`limits`]: CPU, memory, file size and process count for either;
//! - [`process`]: starting the contained command, reading its output with a
//!   cap, and killing everything it started when it ends, times out or is
//!   cancelled;
//! - [`serving`]: a contained process that stays (a tool server spoken to
//!   over its stdin and stdout), killed with everything it started when it
//!   is dropped;
//! - [`policy`]: what a tool may touch before anything runs: paths confined
//!   to the workspace, the command allowlist, autonomy, actions per hour.
//!
//! `[agent] sandbox` picks one (`auto` tries them in that order). Where none
//! can run the shell tool is not offered, and [`Sandbox::describe`] says why
//! for `hearth doctor`.

pub mod bwrap;
pub mod landlock;
pub mod limits;
pub mod memory;
pub mod policy;
mod process;
mod serving;

use std::path::{Path, PathBuf};

pub use limits::Limits;
pub use process::Finished;
pub use serving::Serving;

/// `[agent] sandbox`: which containment to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxChoice {
    /// Bubblewrap, else Landlock, else none (and no shell tool).
    Auto,
    Bubblewrap,
    Landlock,
    /// No containment; accepted only with `autonomy = "full"`.
    Off,
}

impl SandboxChoice {
    pub const NAMES: &'static str = "auto, bubblewrap, landlock, off";

    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Bubblewrap => "bubblewrap",
            Self::Landlock => "landlock",
            Self::Off => "off",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "auto" => Self::Auto,
            "bubblewrap" => Self::Bubblewrap,
            "landlock" => Self::Landlock,
            "off" => Self::Off,
            _ => return None,
        })
    }
}

/// What a [`Sandbox`] runs commands with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    Bubblewrap,
    Landlock,
    /// `sandbox = "off"`: limits and process-group kill only.
    Uncontained,
    /// No sandbox could run: commands are refused, with this reason.
    Unavailable(String),
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("no sandbox can run here, so commands are refused: {0}")]
    Unavailable(String),
    #[error("cannot start the command: {0}")]
    Spawn(#[from] std::io::Error),
    #[error(transparent)]
    Landlock(#[from] landlock::LandlockError),
}

/// How commands are contained, decided once at start.
#[derive(Debug, Clone)]
pub struct Sandbox {
    containment: Containment,
    /// Where `bwrap` is, when it is installed.
    bwrap: Option<PathBuf>,
    workspace: PathBuf,
    network: bool,
    /// Paths readable besides the system's programs (a server's code).
    reads: Vec<PathBuf>,
    limits: Limits,
    cgroups: Option<limits::CgroupRoot>,
    memory: Option<memory::MemoryRoot>,
}

impl Sandbox {
    /// The sandbox `choice` names for `workspace`, probed on this machine.
    pub fn resolve(choice: SandboxChoice, workspace: &Path, network: bool, limits: Limits) -> Self {
        let bwrap = bwrap::find();
        let bwrap_works = |workspace: &Path| bwrap_works(bwrap.as_deref(), workspace);
        let containment = match choice {
            SandboxChoice::Off => Containment::Uncontained,
            SandboxChoice::Bubblewrap => match bwrap_works(workspace) {
                Ok(()) => Containment::Bubblewrap,
                Err(why) => Containment::Unavailable(why),
            },
            SandboxChoice::Landlock => match landlock::available() {
                Ok(()) => Containment::Landlock,
                Err(e) => Containment::Unavailable(e.to_string()),
            },
            SandboxChoice::Auto => match bwrap_works(workspace) {
                Ok(()) => Containment::Bubblewrap,
                // Landlock is probed only when bubblewrap cannot run.
                Err(why) => match landlock::available() {
                    Ok(()) => {
                        tracing::info!(
                            reason = why,
                            "bubblewrap cannot run; tools are contained by Landlock"
                        );
                        Containment::Landlock
                    }
                    Err(e) => Containment::Unavailable(format!("{why}; {e}")),
                },
            },
        };
        Self {
            containment,
            bwrap,
            workspace: workspace.to_path_buf(),
            network,
            reads: Vec::new(),
            limits,
            cgroups: limits::CgroupRoot::find(),
            memory: memory::MemoryRoot::find(),
        }
    }

    /// The same containment, for commands run in `workspace` (a
    /// conversation's folder): nothing is probed again.
    pub fn for_workspace(&self, workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            ..self.clone()
        }
    }

    /// The same containment for a process of its own: its folder, whether
    /// it may reach the network, what else it may read, and its limits.
    pub fn for_server(
        &self,
        folder: &Path,
        network: bool,
        reads: Vec<PathBuf>,
        limits: Limits,
    ) -> Self {
        Self {
            workspace: folder.to_path_buf(),
            network,
            reads,
            limits,
            ..self.clone()
        }
    }

    /// The same sandbox with the network allowed or not (a server's
    /// download step, which alone needs it).
    pub fn with_network(&self, network: bool) -> Self {
        Self {
            network,
            ..self.clone()
        }
    }

    pub fn containment(&self) -> &Containment {
        &self.containment
    }

    /// Whether commands may run at all.
    pub fn runs_commands(&self) -> bool {
        !matches!(self.containment, Containment::Unavailable(_))
    }

    /// One line for `hearth doctor`: what contains commands, or why nothing
    /// does and how to fix it.
    pub fn describe(&self) -> String {
        let net = if self.network {
            "network allowed"
        } else {
            "no network"
        };
        let procs = if self.cgroups.is_some() {
            "a pids cgroup"
        } else {
            "RLIMIT_NPROC"
        };
        let resident = match (self.limits.resident_bytes, &self.memory) {
            (Some(b), Some(_)) => format!(", {} MiB held (a memory cgroup)", b >> 20),
            (Some(_), None) => ", held memory not capped (no memory cgroup can be made)".into(),
            (None, _) => String::new(),
        };
        let limits = format!(
            "{net}; {} MiB memory{resident}, {} processes ({procs}), {} CPU s",
            self.limits.memory_bytes >> 20,
            self.limits.processes,
            self.limits.cpu_secs
        );
        match &self.containment {
            Containment::Bubblewrap => format!("bubblewrap: the workspace only; {limits}"),
            Containment::Landlock => {
                format!("Landlock (bubblewrap cannot run here): the workspace only; {limits}")
            }
            Containment::Uncontained => format!(
                "OFF (`[agent] sandbox = \"off\"`): commands can read and write anything this user can; {limits}"
            ),
            Containment::Unavailable(why) => format!(
                "none, so the shell tool is not offered: {why}. Fix: install bubblewrap (apt-get install bubblewrap) and allow user namespaces, or run on Linux 5.13+ with Landlock enabled"
            ),
        }
    }

    /// Runs `command` with `sh -c` in the workspace, contained; keeps about
    /// `output_cap` characters of each stream.
    pub async fn run(&self, command: &str, output_cap: usize) -> Result<Finished, SandboxError> {
        process::run(self, command, output_cap).await
    }

    /// Starts `program` with `args` (no shell) in the folder, contained,
    /// with `env` on top of the clean environment; its stdin, stdout and
    /// stderr are pipes. It runs until it exits or the [`Serving`] is
    /// dropped.
    pub fn spawn(
        &self,
        program: &str,
        args: &[String],
        env: &[(String, String)],
    ) -> Result<Serving, SandboxError> {
        serving::spawn(self, program, args, env)
    }
}

/// Whether bubblewrap starts a command with hearth's arguments here.
fn bwrap_works(program: Option<&Path>, workspace: &Path) -> Result<(), String> {
    let Some(program) = program else {
        return Err("bubblewrap (bwrap) is not installed".to_string());
    };
    match process::probe_bwrap(program, workspace) {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!(
            "bubblewrap failed to start a command ({status}); are user namespaces allowed?"
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err("bubblewrap (bwrap) is not installed".to_string())
        }
        Err(e) => Err(format!("bubblewrap cannot run: {e}")),
    }
}
