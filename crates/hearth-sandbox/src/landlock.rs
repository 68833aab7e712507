//! The Landlock sandbox, where bubblewrap cannot run: the kernel limits
//! what the command's process tree may open, and a seccomp filter what it
//! may call.
//!
//! - files: the workspace read-write; `/usr`, `/bin`, `/lib*` and the few
//!   files of `/etc` that programs need read-only (the same set as
//!   bubblewrap's); `/dev/null` and the random devices; nothing else, so no
//!   `/proc/*/environ`, no data dir, no `/etc/passwd`;
//! - TCP: no connect or bind unless the network is allowed (Landlock ABI 4);
//! - signals and abstract sockets: only within the sandbox (ABI 6);
//! - seccomp: no `setsid`/`setpgid` (the process group is how the command is
//!   killed), no `ptrace`/`process_vm_*`, no `kill(-1)`; no Unix sockets
//!   ever (Landlock's file rules do not cover `connect()`, so a socket file
//!   anywhere — `$SSH_AUTH_SOCK`, the user's systemd bus, Docker's — would
//!   be a door out; `socketpair` stays), and only IP sockets (and netlink,
//!   for address lookup) when the network is allowed;
//! - capabilities: none. A root daemon's command would keep every one
//!   (`sethostname`, `chown`, raw sockets), so the child empties its
//!   bounding, ambient, inheritable, permitted and effective sets and locks
//!   root's special treatment off before it executes the command.
//!
//! The ruleset and the filter are built before the fork; the child only
//! applies them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// The newest ABI whose rights hearth asks for; older kernels get what
/// they support (best effort), but at least ABI 1's file rules.
const ABI_WANTED: ABI = ABI::V6;

const READ_ONLY: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/alternatives",
    // OpenSSL's settings, read as it starts (Node ends before it runs a
    // line when they are denied), and the public certificates (npm reads
    // the bundle its settings name even offline); never `/etc/ssl` whole,
    // whose `private` a root daemon's command could otherwise list.
    "/etc/ssl/openssl.cnf",
    "/etc/ssl/certs",
];

const READ_ONLY_NETWORK: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ca-certificates",
];

const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"];

#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    #[error("Landlock is not available in this kernel: {0}")]
    Unavailable(String),
    #[error("the seccomp filter could not be built: {0}")]
    Seccomp(String),
}

/// Whether this kernel enforces Landlock file rules.
pub fn available() -> Result<(), LandlockError> {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|r| r.create())
        .map(drop)
        .map_err(|e| LandlockError::Unavailable(e.to_string()))
}

/// What the child applies before it executes the command.
pub struct Confinement {
    ruleset: Mutex<Option<RulesetCreated>>,
    filter: BpfProgram,
}

impl Confinement {
    /// The rules for `workspace` (read-write), the system's programs and
    /// `reads` (read-only), and the network only when `network`.
    pub fn new(
        workspace: &Path,
        network: bool,
        reads: &[std::path::PathBuf],
    ) -> Result<Self, LandlockError> {
        let unavailable = |e: landlock::RulesetError| LandlockError::Unavailable(e.to_string());
        let existing = |paths: &'static [&'static str]| {
            paths.iter().copied().filter(|p| Path::new(p).exists())
        };
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(ABI_WANTED))
            .map_err(unavailable)?;
        if !network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(ABI_WANTED))
                .map_err(unavailable)?;
        }
        let mut created = ruleset
            .scope(Scope::from_all(ABI_WANTED))
            .map_err(unavailable)?
            .create()
            .map_err(unavailable)?
            .add_rules(path_beneath_rules(
                [workspace],
                AccessFs::from_all(ABI_WANTED),
            ))
            .map_err(unavailable)?
            .add_rules(path_beneath_rules(
                existing(READ_ONLY),
                AccessFs::from_read(ABI_WANTED),
            ))
            .map_err(unavailable)?
            .add_rules(path_beneath_rules(
                existing(DEVICES),
                AccessFs::ReadFile | AccessFs::WriteFile,
            ))
            .map_err(unavailable)?;
        let reads = reads.iter().filter(|p| p.exists());
        created = created
            .add_rules(path_beneath_rules(reads, AccessFs::from_read(ABI_WANTED)))
            .map_err(unavailable)?;
        if network {
            created = created
                .add_rules(path_beneath_rules(
                    existing(READ_ONLY_NETWORK),
                    AccessFs::from_read(ABI_WANTED),
                ))
                .map_err(unavailable)?;
        }
        Ok(Self {
            ruleset: Mutex::new(Some(created)),
            filter: seccomp_filter(network)?,
        })
    }

    /// Restricts the calling process (the child, between fork and exec).
    pub fn apply(&self) -> std::io::Result<()> {
        let ruleset = self
            .ruleset
            .try_lock()
            .ok()
            .and_then(|mut r| r.take())
            .ok_or_else(|| std::io::Error::other("the Landlock ruleset was already used"))?;
        drop_capabilities()?;
        ruleset
            .restrict_self()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        seccompiler::apply_filter(&self.filter).map_err(|e| std::io::Error::other(e.to_string()))
    }
}

fn seccomp_filter(network: bool) -> Result<BpfProgram, LandlockError> {
    let bad = |e: seccompiler::BackendError| LandlockError::Seccomp(e.to_string());
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| LandlockError::Seccomp(e.to_string()))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [
        libc::SYS_setsid,
        libc::SYS_setpgid,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
    ]
    .into_iter()
    // io_uring's operations (socket, connect, sendmsg, openat…) are not
    // system calls this filter would see: no ring may be made or used.
    .chain(crate::bwrap::IO_URING)
    {
        rules.insert(call, vec![]);
    }
    // kill(-1, …) signals every process the user may signal.
    let everyone = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        u32::MAX as u64,
    )
    .map_err(bad)?;
    rules.insert(
        libc::SYS_kill,
        vec![SeccompRule::new(vec![everyone]).map_err(bad)?],
    );
    // socket(domain, …): with the network, only the IP families and
    // netlink; without it, none. The rules list what is refused.
    let socket_rules = if network {
        let allowed = [libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];
        let mut conditions = Vec::new();
        for family in allowed {
            conditions.push(
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
                    .map_err(bad)?,
            );
        }
        // One rule whose conditions all hold: the family is none of them.
        vec![SeccompRule::new(conditions).map_err(bad)?]
    } else {
        vec![]
    };
    rules.insert(libc::SYS_socket, socket_rules);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(bad)?;
    filter.try_into().map_err(bad)
}

/// Empties every capability set of the calling process (async-signal-safe:
/// plain system calls, for `pre_exec`). Dropping the bounding set and
/// setting the secure bits need `CAP_SETPCAP`, which only a privileged
/// process has; an unprivileged one has nothing to drop, so `EPERM` there
/// is not an error. Lowering the other sets always works.
fn drop_capabilities() -> std::io::Result<()> {
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let tolerated =
        |e: &std::io::Error| matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EPERM));
    // SAFETY: prctl and capset with plain values and stack structures.
    unsafe {
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0 {
                let e = std::io::Error::last_os_error();
                if !tolerated(&e) {
                    return Err(e);
                }
            }
        }
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            let e = std::io::Error::last_os_error();
            if !tolerated(&e) {
                return Err(e);
            }
        }
        let bits = SECBIT_NOROOT
            | SECBIT_NOROOT_LOCKED
            | SECBIT_NO_SETUID_FIXUP
            | SECBIT_NO_SETUID_FIXUP_LOCKED
            | SECBIT_KEEP_CAPS_LOCKED;
        if libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EPERM) {
                return Err(e);
            }
        }
        let mut header = Header {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let none = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &mut header, none.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
