//! hearth-mcp: hearth as a client of the tool servers people already run, and as
//! a server of its own capabilities (`hearth mcp serve`), both through the
//! official Rust SDK (`rmcp`).
//!
//! Each configured server is kept running by its own supervisor
//! ([`supervise`]): a stdio server starts inside hearth's sandbox with a
//! folder of its own, a Streamable HTTP server is reached at its URL; one
//! that fails or dies is started again with backoff. Its tools join the
//! agent's registry through [`McpHub`], a [`crate::tools::ToolSource`],
//! as `SERVER__tool` ([`tool`]), asking first by default; results go
//! through the registry's scrubbing, fencing and cap like any tool output.

mod connect;
mod handler;
mod hub;
mod launcher;
mod packages;
mod resolve;
pub mod serve;
mod stderr;
mod supervise;
mod tool;

// The floors below, under the names this crate's paths use.
use hearth_config as config;
use hearth_core::{chat, file_modes, retry};
use hearth_providers as providers;
use hearth_sandbox as sandbox;
use hearth_tools::{self as tools, security};

pub use hub::{McpHub, ServerState, ServerStatus};

/// Why a server that held more memory than its cap is gone.
pub const OUT_OF_MEMORY: &str =
    "the kernel ended the server: it held more memory than its `memory_mib` allows";
pub use tool::exposed_name;

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        source: crate::sandbox::SandboxError,
    },
    #[error("cannot make its folder {path}: {source}")]
    Folder {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Command(String),
    #[error("{manager} could not fetch {packages}: {why}")]
    Fetch {
        manager: &'static str,
        packages: String,
        why: String,
    },
    #[error("{OUT_OF_MEMORY} while it started")]
    OutOfMemory,
    #[error("no answer to `initialize` within {0} s")]
    StartTimeout(u64),
    #[error("`initialize` failed: {0}")]
    Initialize(String),
    #[error("listing its tools failed: {0}")]
    List(String),
    #[error("the header `{0}` is not a valid HTTP header")]
    Header(String),
}

impl McpError {
    /// What to do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            Self::Spawn { .. } => {
                "check `command` runs by hand; inside the sandbox only /usr, /bin, /lib and the paths in `reads` are visible, so add the folder its program and code live in to `reads`"
            }
            Self::Folder { .. } => "check the data dir is writable",
            Self::Command(_) => {
                "install the server, or give `command` as the full path of its program"
            }
            Self::Fetch { .. } => {
                "check the package's name and version; its first start downloads it from its registry (npm's or the Python package index), which must be reachable then"
            }
            Self::OutOfMemory => {
                "raise the server's `memory_mib` if it needs more (the default is 1024)"
            }
            Self::StartTimeout(_) => {
                "the server started but never answered; run its command by hand to see what it waits for, or raise `start_timeout_secs`"
            }
            Self::Initialize(why) if why.contains(" 401 ") || why.contains(" 403 ") => {
                "the server refused hearth: check the token (`bearer_token_env` names a variable that must hold it) and `headers`"
            }
            Self::Initialize(_) | Self::List(_) => {
                "the server's last stderr lines (shown by `hearth mcp list` and `hearth doctor`) or its command run by hand (or its URL opened) say why"
            }
            Self::Header(_) => "fix the header's name or value under `headers`",
        }
    }
}
