//! What tools may touch: the workspace, commands, and how often.
//!
//! - Paths are confined to the workspace. A path is resolved against it,
//!   the deepest existing part canonicalised (so `..` and symlinks that
//!   point out are seen for what they are), and refused when it ends up
//!   outside, or under a forbidden path (`/etc`, `~/.ssh`, …).
//! - Shell commands: the first word of every pipeline segment must be on
//!   the allowlist; command substitution (`$(…)`, backticks), variable
//!   expansion (environment exfiltration) and redirection outside the
//!   workspace are refused unless autonomy is `full`.
//! - `readonly` autonomy refuses every write and every command.
//! - At most `max_actions_per_hour` actions, counted per person: each
//!   person's policy ([`SecurityPolicy::for_person`]) has its own budget.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How much the agent may do on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Autonomy {
    ReadOnly,
    Supervised,
    Full,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("`{0}` is outside the workspace")]
    OutsideWorkspace(String),
    #[error("`{0}` is a forbidden path")]
    Forbidden(String),
    #[error("writing is not allowed in read-only mode")]
    ReadOnly,
    #[error("the command `{0}` is not on the allowlist")]
    CommandNotAllowed(String),
    #[error("{0} is not allowed in commands")]
    Construct(&'static str),
    #[error("the command is empty")]
    EmptyCommand,
    #[error("the limit of {0} actions per hour is reached; try again later")]
    RateLimited(u32),
}

pub struct SecurityPolicy {
    pub autonomy: Autonomy,
    workspace: PathBuf,
    forbidden: Vec<PathBuf>,
    allowed_commands: Vec<String>,
    max_actions_per_hour: u32,
    /// This policy's budget.
    actions: Budget,
    /// Every person's budget, shared by the policies derived from one.
    budgets: Arc<Mutex<HashMap<String, Budget>>>,
}

/// One person's actions of the last hour.
type Budget = Arc<Mutex<VecDeque<Instant>>>;

/// Commands allowed by default: reading and searching, nothing that
/// deletes, fetches or escalates.
pub const DEFAULT_COMMANDS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "find", "echo", "pwd", "date", "sort", "uniq",
    "cut", "tr", "diff", "stat", "du", "df", "file", "basename", "dirname", "true", "sleep",
    "mkdir", "touch", "cp", "mv", "sed", "awk",
];

impl SecurityPolicy {
    /// A policy for `workspace` (created if missing, then canonicalised).
    pub fn new(workspace: &Path, autonomy: Autonomy, home: Option<&Path>) -> std::io::Result<Self> {
        std::fs::create_dir_all(workspace)?;
        let workspace = workspace.canonicalize()?;
        let mut forbidden: Vec<PathBuf> = [
            "/etc", "/root", "/proc", "/sys", "/dev", "/boot", "/var/run", "/run",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        if let Some(home) = home {
            for dir in [
                ".ssh", ".gnupg", ".aws", ".config", ".netrc", ".docker", ".kube",
            ] {
                forbidden.push(home.join(dir));
            }
        }
        // A forbidden folder that holds the workspace itself (running as
        // root with the workspace under /root, say) cannot be meant to block it.
        forbidden.retain(|f| !workspace.starts_with(f));
        Ok(Self {
            autonomy,
            workspace,
            forbidden,
            allowed_commands: DEFAULT_COMMANDS.iter().map(|c| c.to_string()).collect(),
            max_actions_per_hour: 120,
            actions: Arc::default(),
            budgets: Arc::default(),
        })
    }

    /// The same rules for `person` (a stable id such as `telegram:42`),
    /// in `workspace` (an existing folder), with that person's own budget.
    pub fn for_person(&self, person: &str, workspace: &Path) -> std::io::Result<Self> {
        let workspace = workspace.canonicalize()?;
        let actions = self
            .budgets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(person.to_string())
            .or_default()
            .clone();
        Ok(Self {
            autonomy: self.autonomy,
            forbidden: self
                .forbidden
                .iter()
                .filter(|f| !workspace.starts_with(f))
                .cloned()
                .collect(),
            workspace,
            allowed_commands: self.allowed_commands.clone(),
            max_actions_per_hour: self.max_actions_per_hour,
            actions,
            budgets: Arc::clone(&self.budgets),
        })
    }

    pub fn with_allowed_commands(mut self, commands: Vec<String>) -> Self {
        self.allowed_commands = commands;
        self
    }

    pub fn with_max_actions_per_hour(mut self, n: u32) -> Self {
        self.max_actions_per_hour = n;
        self
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The real path `requested` names, if tools may use it.
    pub fn resolve(&self, requested: &str, write: bool) -> Result<PathBuf, PolicyError> {
        if write && self.autonomy == Autonomy::ReadOnly {
            return Err(PolicyError::ReadOnly);
        }
        let requested_path = Path::new(requested.trim());
        let joined = if requested_path.is_absolute() {
            requested_path.to_path_buf()
        } else {
            self.workspace.join(requested_path)
        };
        let real = hearth_core::paths::resolve_lenient(&joined);
        if let Some(bad) = self.forbidden.iter().find(|f| real.starts_with(f)) {
            return Err(PolicyError::Forbidden(bad.display().to_string()));
        }
        if !real.starts_with(&self.workspace) {
            return Err(PolicyError::OutsideWorkspace(requested.to_string()));
        }
        Ok(real)
    }

    /// Whether `command` may run.
    pub fn check_command(&self, command: &str) -> Result<(), PolicyError> {
        if self.autonomy == Autonomy::ReadOnly {
            return Err(PolicyError::ReadOnly);
        }
        if command.trim().is_empty() {
            return Err(PolicyError::EmptyCommand);
        }
        if self.autonomy == Autonomy::Full {
            return Ok(());
        }
        if command.contains("$(") || command.contains('`') {
            return Err(PolicyError::Construct("command substitution"));
        }
        if command.contains("${") || has_variable(command) {
            return Err(PolicyError::Construct("variable expansion"));
        }
        if command.contains("<(") || command.contains(">(") {
            return Err(PolicyError::Construct("process substitution"));
        }
        for segment in split_segments(command) {
            let words: Vec<&str> = segment.split_whitespace().collect();
            let Some(first) = words.first() else {
                return Err(PolicyError::EmptyCommand);
            };
            let program = Path::new(first)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(first);
            if first.contains('/') || !self.allowed_commands.iter().any(|c| c == program) {
                return Err(PolicyError::CommandNotAllowed(first.to_string()));
            }
            self.check_redirections(segment)?;
        }
        Ok(())
    }

    /// Counts one action; refuses past the hourly limit.
    pub fn record_action(&self) -> Result<(), PolicyError> {
        let mut actions = self.actions.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        while actions
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(3600))
        {
            actions.pop_front();
        }
        if actions.len() as u32 >= self.max_actions_per_hour {
            return Err(PolicyError::RateLimited(self.max_actions_per_hour));
        }
        actions.push_back(now);
        Ok(())
    }

    /// Every `>`, `>>` or `<` target must be inside the workspace.
    fn check_redirections(&self, segment: &str) -> Result<(), PolicyError> {
        let mut rest = segment;
        while let Some(i) = rest.find(['>', '<']) {
            let after = rest[i + 1..].trim_start_matches(['>', '&']).trim_start();
            let target: String = after.chars().take_while(|c| !c.is_whitespace()).collect();
            if target.is_empty() {
                return Err(PolicyError::Construct("a redirection without a target"));
            }
            if !target.chars().all(|c| c.is_ascii_digit()) {
                self.resolve(&target, true)?;
            }
            rest = &rest[i + 1..];
        }
        Ok(())
    }
}

/// `cmd1 | cmd2; cmd3 && cmd4 || cmd5` → the five commands.
fn split_segments(command: &str) -> Vec<&str> {
    command
        .split(['|', ';', '\n', '&'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `$NAME` or `$1`: a shell expansion that could read the environment.
fn has_variable(command: &str) -> bool {
    command
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'$' && (w[1].is_ascii_alphanumeric() || w[1] == b'_'))
}
