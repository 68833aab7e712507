//! `[agent]`: the workspace, what tools may do, and the sandbox commands
//! run in.

use std::path::{Path, PathBuf};

use super::raw::RawAgent;
use super::{ConfigError, Environment};

/// `tool_dispatcher = "auto" | "xml" | "native"`: how tool calls travel
/// between hearth and the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatcherChoice {
    Auto,
    Xml,
    Native,
}

/// Tools and what they may do.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The folder tools work in; nothing outside it is touched. Each
    /// conversation works in a folder of its own beneath it.
    pub workspace: PathBuf,
    /// Every conversation works in the workspace itself: people see each
    /// other's files.
    pub shared_workspace: bool,
    pub autonomy: hearth_sandbox::policy::Autonomy,
    /// First words a shell command may start with.
    pub allowed_commands: Vec<String>,
    pub tool_timeout_secs: u64,
    /// Characters of one tool result kept for the model.
    pub tool_output_chars: usize,
    pub max_actions_per_hour: u32,
    pub max_tool_iterations: u32,
    /// How tool calls travel: `auto` picks native only for providers that
    /// support it (the local engine uses XML).
    pub tool_dispatcher: DispatcherChoice,
    /// Run the calls of one reply at once instead of one after another.
    pub parallel_tools: bool,
    /// Tools a turn is offered by relevance to its message, besides those
    /// the conversation uses; 0 offers every tool. Unset: 4 for a context
    /// of 8,192 tokens or fewer, every tool above.
    pub tools_per_turn: Option<u32>,
    /// Hosts `http_request` may reach (`example.org` also allows its
    /// subdomains). Empty: the tool is not offered.
    pub http_allowed_domains: Vec<String>,
    /// Bytes of a response body `http_request` reads at most.
    pub http_max_bytes: usize,
    /// What contains the commands tools start.
    pub sandbox: hearth_sandbox::SandboxChoice,
    /// Whether contained commands may use the network.
    pub sandbox_network: bool,
    /// Address space per contained process, in MiB.
    pub sandbox_memory_mb: u64,
    /// Processes a contained command may run at once.
    pub sandbox_max_processes: u32,
    /// Tools whose calls the person who started the turn must allow first
    /// (in `supervised` autonomy; `full` asks nothing).
    pub approve: Vec<String>,
    /// How long a question waits for its answer; no answer is Deny.
    pub approval_timeout_secs: u64,
}

/// The tools asked about by default: those that write, execute or reach
/// the network.
pub const DEFAULT_APPROVE: &[&str] = &["shell", "file_write", "file_edit", "http_request"];

impl AgentConfig {
    pub(super) fn from_raw(
        raw: Option<RawAgent>,
        env: &Environment,
        data_dir: &Path,
    ) -> Result<Self, ConfigError> {
        let a = raw.unwrap_or_default();
        let agent = Self {
            workspace: a
                .workspace
                .map(|w| env.expand(&w))
                .unwrap_or_else(|| default_workspace(data_dir)),
            shared_workspace: a.shared_workspace.unwrap_or(false),
            autonomy: autonomy(a.autonomy.as_deref())?,
            allowed_commands: a.allowed_commands.unwrap_or_else(|| {
                hearth_sandbox::policy::DEFAULT_COMMANDS
                    .iter()
                    .map(|c| c.to_string())
                    .collect()
            }),
            tool_timeout_secs: a.tool_timeout_secs.unwrap_or(60),
            tool_output_chars: a.tool_output_chars.unwrap_or(4_000),
            max_actions_per_hour: a.max_actions_per_hour.unwrap_or(120),
            max_tool_iterations: a.max_tool_iterations.unwrap_or(10),
            tool_dispatcher: dispatcher(a.tool_dispatcher.as_deref())?,
            parallel_tools: a.parallel_tools.unwrap_or(false),
            tools_per_turn: a.tools_per_turn,
            http_allowed_domains: a
                .http_allowed_domains
                .unwrap_or_default()
                .into_iter()
                .map(|d| d.trim().trim_start_matches("*.").to_ascii_lowercase())
                .collect(),
            http_max_bytes: a.http_max_bytes.unwrap_or(1 << 20),
            sandbox: sandbox(a.sandbox.as_deref())?,
            sandbox_network: a.sandbox_network.unwrap_or(false),
            sandbox_memory_mb: a.sandbox_memory_mb.unwrap_or(1024),
            sandbox_max_processes: a.sandbox_max_processes.unwrap_or(64),
            approve: a
                .approve
                .unwrap_or_else(|| DEFAULT_APPROVE.iter().map(|t| t.to_string()).collect())
                .into_iter()
                .map(|t| t.trim().to_string())
                .collect(),
            approval_timeout_secs: a.approval_timeout_secs.unwrap_or(120),
        };
        agent.check_containment(data_dir)?;
        agent.check_limits()?;
        Ok(agent)
    }

    /// What keeps tools contained: a workspace apart from hearth's data,
    /// a sandbox unless autonomy is full, and its limits.
    fn check_containment(&self, data_dir: &Path) -> Result<(), ConfigError> {
        if overlaps(&self.workspace, data_dir) {
            return Err(ConfigError::invalid(
                "agent.workspace",
                format!(
                    "{} overlaps the data dir {}; tools could reach hearth's databases and tokens. Choose a folder outside it",
                    self.workspace.display(),
                    data_dir.display()
                ),
            ));
        }
        if self.sandbox == hearth_sandbox::SandboxChoice::Off
            && self.autonomy != hearth_sandbox::policy::Autonomy::Full
        {
            return Err(ConfigError::invalid(
                "agent.sandbox",
                "`off` runs commands with all of this user's rights; it is accepted only with `autonomy = \"full\"`",
            ));
        }
        within(
            "agent.sandbox_memory_mb",
            self.sandbox_memory_mb,
            64,
            1 << 20,
        )?;
        within(
            "agent.sandbox_max_processes",
            self.sandbox_max_processes,
            4,
            4096,
        )
    }

    /// The limits on what tools fetch, print and take, and the names of
    /// the tools asked about.
    fn check_limits(&self) -> Result<(), ConfigError> {
        if let Some(bad) = self
            .http_allowed_domains
            .iter()
            .find(|d| !valid_host_entry(d))
        {
            return Err(ConfigError::invalid(
                "agent.http_allowed_domains",
                format!(
                    "`{bad}` is not a host name or host:port (write example.org or example.org:8080, no scheme or path)"
                ),
            ));
        }
        within("agent.http_max_bytes", self.http_max_bytes, 1_024, 64 << 20)?;
        within("agent.tool_timeout_secs", self.tool_timeout_secs, 1, 3600)?;
        if self.tool_output_chars < 200 {
            return Err(ConfigError::invalid(
                "agent.tool_output_chars",
                "must be at least 200",
            ));
        }
        within("agent.max_tool_iterations", self.max_tool_iterations, 1, 50)?;
        within(
            "agent.approval_timeout_secs",
            self.approval_timeout_secs,
            5,
            3600,
        )?;
        if let Some(bad) = self
            .approve
            .iter()
            .find(|t| t.is_empty() || !t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Err(ConfigError::invalid(
                "agent.approve",
                format!(
                    "`{bad}` is not a tool name (letters, digits and '_', as `hearth tools list` names them)"
                ),
            ));
        }
        Ok(())
    }

    /// Whether a call of `tool` waits for the person's answer.
    pub fn asks_before(&self, tool: &str) -> bool {
        self.autonomy != hearth_sandbox::policy::Autonomy::Full
            && self.approve.iter().any(|t| t == tool)
    }

    /// The limits every contained command runs under.
    pub fn sandbox_limits(&self) -> hearth_sandbox::Limits {
        hearth_sandbox::Limits {
            cpu_secs: self.tool_timeout_secs,
            memory_bytes: self.sandbox_memory_mb << 20,
            processes: self.sandbox_max_processes,
            ..Default::default()
        }
    }
}

/// The workspace when none is configured: `hearth-workspace` beside the
/// data dir, never inside it.
pub fn default_workspace(data_dir: &Path) -> PathBuf {
    data_dir
        .parent()
        .unwrap_or(Path::new("."))
        .join("hearth-workspace")
}

/// The workspace of hearth versions that kept it inside the data dir.
pub fn old_workspace(data_dir: &Path) -> PathBuf {
    data_dir.join("workspace")
}

/// Whether one folder is inside the other (or they are the same), judged
/// by their absolute, resolved paths.
impl AgentConfig {
    /// Refuses a folder of hearth's own (`key`) that the workspace overlaps.
    pub(super) fn refuse_inside_workspace(
        &self,
        key: &str,
        dir: &Path,
        why: &str,
    ) -> Result<(), ConfigError> {
        if !overlaps(dir, &self.workspace) {
            return Ok(());
        }
        Err(ConfigError::invalid(
            key,
            format!(
                "{} overlaps the agent's workspace {}: {why}. Choose a folder outside it",
                dir.display(),
                self.workspace.display()
            ),
        ))
    }
}

impl AgentConfig {
    /// Refuses a workspace that contains `dir` (or is it).
    pub(super) fn refuse_containing(&self, dir: &Path, why: &str) -> Result<(), ConfigError> {
        let (dir, workspace) = (
            hearth_core::paths::resolve_lenient(dir),
            hearth_core::paths::resolve_lenient(&self.workspace),
        );
        if !dir.starts_with(&workspace) {
            return Ok(());
        }
        Err(ConfigError::invalid(
            "agent.workspace",
            format!(
                "{} contains {}: {why}. Choose a folder that does not contain it",
                workspace.display(),
                dir.display()
            ),
        ))
    }
}

fn overlaps(a: &Path, b: &Path) -> bool {
    let (a, b) = (
        hearth_core::paths::resolve_lenient(a),
        hearth_core::paths::resolve_lenient(b),
    );
    a.starts_with(&b) || b.starts_with(&a)
}

/// `example.org`, `example.org:8080`, `10.0.0.5`, `[::1]:8080` or `::1`.
fn valid_host_entry(entry: &str) -> bool {
    if entry.is_empty() || entry.contains(['/', ' ', '@', '?', '#']) {
        return false;
    }
    if entry.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let port_ok = |p: &str| p.parse::<u16>().is_ok_and(|p| p > 0);
    if let Some(rest) = entry.strip_prefix('[') {
        return rest
            .split_once("]:")
            .is_some_and(|(h, p)| h.parse::<std::net::Ipv6Addr>().is_ok() && port_ok(p));
    }
    match entry.split_once(':') {
        Some((host, port)) => !host.is_empty() && port_ok(port),
        None => true,
    }
}

/// `key`'s value must lie in `min..=max`.
fn within<T>(key: &str, value: T, min: T, max: T) -> Result<(), ConfigError>
where
    T: PartialOrd + std::fmt::Display,
{
    if value >= min && value <= max {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            key,
            format!("must be between {min} and {max}"),
        ))
    }
}

/// `[agent] autonomy`.
fn autonomy(name: Option<&str>) -> Result<hearth_sandbox::policy::Autonomy, ConfigError> {
    use hearth_sandbox::policy::Autonomy;
    match name {
        None | Some("supervised") => Ok(Autonomy::Supervised),
        Some("readonly") => Ok(Autonomy::ReadOnly),
        Some("full") => Ok(Autonomy::Full),
        Some(other) => Err(ConfigError::invalid(
            "agent.autonomy",
            format!("`{other}` is not one of readonly, supervised, full"),
        )),
    }
}

/// `[agent] tool_dispatcher`.
fn dispatcher(name: Option<&str>) -> Result<DispatcherChoice, ConfigError> {
    match name {
        None | Some("auto") => Ok(DispatcherChoice::Auto),
        Some("xml") => Ok(DispatcherChoice::Xml),
        Some("native") => Ok(DispatcherChoice::Native),
        Some(other) => Err(ConfigError::invalid(
            "agent.tool_dispatcher",
            format!("`{other}` is not one of auto, xml, native"),
        )),
    }
}

/// `[agent] sandbox`.
fn sandbox(name: Option<&str>) -> Result<hearth_sandbox::SandboxChoice, ConfigError> {
    use hearth_sandbox::SandboxChoice;
    match name {
        None => Ok(SandboxChoice::Auto),
        Some(name) => SandboxChoice::parse(name).ok_or_else(|| {
            ConfigError::invalid(
                "agent.sandbox",
                format!("`{name}` is not one of {}", SandboxChoice::NAMES),
            )
        }),
    }
}
