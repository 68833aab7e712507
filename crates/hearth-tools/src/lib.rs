//! hearth-tools: the tools the agent can call, in one typed registry, and
//! the security they run under ([`security`]).
//!
//! A [`Tool`] has a name, a description, a JSON schema for its arguments and
//! an `execute`. The [`ToolRegistry`] runs a call under the
//! [`SecurityPolicy`]: the hourly action limit, a timeout, credential
//! scrubbing, defused markup ([`crate::security::fence`]) and an output cap
//! apply to every tool alike. Failures the model
//! should hear about come back as error results, never as crashes.

mod cap;
mod files;
mod http;
pub mod scope;
pub mod security;
mod shell;

pub use hearth_core::confined;

// The floors below, under the names this crate's paths use.
use hearth_config as config;
use hearth_core::{chat, workspace};
use hearth_sandbox as sandbox;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

pub use cap::cap;
pub use files::{FileEdit, FileRead, FileWrite, Glob, ListDir};
pub use http::HttpRequest;
pub use shell::Shell;

use crate::chat::ToolSpec;
use crate::sandbox::{Sandbox, SandboxChoice};
use crate::security::{Scrubber, SecurityPolicy};
use crate::workspace::{WorkspaceError, Workspaces};

/// What a tool returns: text for the model, and whether it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
}

impl ToolResult {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

/// What every tool runs under.
#[derive(Clone)]
pub struct ToolContext {
    pub policy: Arc<SecurityPolicy>,
    /// What contains the commands tools start.
    pub sandbox: Arc<Sandbox>,
    pub scrubber: Arc<Scrubber>,
    /// Per call.
    pub timeout: Duration,
    /// Characters of output kept per call.
    pub output_cap: usize,
    /// The chat this call serves, when it serves one (memory scope, and
    /// where a reminder set from a chat is delivered).
    pub origin: Option<ToolOrigin>,
    /// Where each conversation's folder is; `None` keeps every call in the
    /// policy's workspace (the command line's `hearth tools run`).
    pub workspaces: Option<Arc<Workspaces>>,
    /// Only tools that change nothing may run: the turn was not started by
    /// a person (a scheduled job).
    pub read_only: bool,
}

impl ToolContext {
    /// Tools under `policy`, `timeout` per call, commands contained by the
    /// best sandbox this machine has (no network), a fresh scrubber, 4,000
    /// characters of output kept and no chat of origin.
    pub fn new(policy: SecurityPolicy, timeout: Duration) -> Self {
        let limits = crate::sandbox::Limits {
            cpu_secs: timeout.as_secs().max(1),
            ..Default::default()
        };
        let sandbox = Sandbox::resolve(SandboxChoice::Auto, policy.workspace(), false, limits);
        Self::with_sandbox(policy, sandbox, timeout)
    }

    /// As [`ToolContext::new`], with commands contained by `sandbox`.
    pub fn with_sandbox(policy: SecurityPolicy, sandbox: Sandbox, timeout: Duration) -> Self {
        Self {
            policy: Arc::new(policy),
            sandbox: Arc::new(sandbox),
            scrubber: Arc::new(Scrubber::new()),
            timeout,
            output_cap: 4_000,
            origin: None,
            workspaces: None,
            read_only: false,
        }
    }

    /// Gives each conversation its own folder of `workspaces`.
    pub fn with_workspaces(self, workspaces: Workspaces) -> Self {
        Self {
            workspaces: Some(Arc::new(workspaces)),
            ..self
        }
    }

    /// The same context, serving the chat `origin`: in that chat's folder
    /// (when conversations have folders), with its sender's action budget.
    pub fn with_origin(self, origin: Option<ToolOrigin>) -> Result<Self, WorkspaceError> {
        let (Some(o), Some(workspaces)) = (&origin, &self.workspaces) else {
            return Ok(Self { origin, ..self });
        };
        let folder = workspaces.prepare(&o.channel, &o.reply_target)?;
        let person = format!("{}:{}", o.channel, o.sender);
        let policy =
            self.policy
                .for_person(&person, &folder)
                .map_err(|source| WorkspaceError::Create {
                    path: folder.clone(),
                    source,
                })?;
        Ok(Self {
            policy: Arc::new(policy),
            sandbox: Arc::new(self.sandbox.for_workspace(&folder)),
            origin,
            ..self
        })
    }

    /// The same context, allowing only tools that change nothing.
    pub fn read_only(self) -> Self {
        Self {
            read_only: true,
            ..self
        }
    }
}

/// The chat a tool call came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOrigin {
    pub channel: String,
    /// The chat replies go to.
    pub reply_target: String,
    pub sender: String,
    pub thread_ts: Option<String>,
    /// The channel's senders share one credential (its policy's
    /// `one_credential`).
    pub one_credential: bool,
}

pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON schema of the arguments (an object schema).
    fn schema(&self) -> Value;
    /// Whether the tool only reads (files, memories, jobs) and changes
    /// nothing, so it may run in turns no person started.
    fn read_only(&self) -> bool {
        false
    }
    /// Whether every call waits for the person's answer whatever `[agent]
    /// approve` lists (a tool from a server hearth does not control).
    fn asks_first(&self) -> bool {
        false
    }
    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult>;
}

/// Tools that come and go while hearth runs (an MCP server's): asked for
/// what it offers at each turn.
pub trait ToolSource: Send + Sync {
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// Told of every call a registry runs, whatever its outcome (the scenario
/// suite scores by what ran).
pub trait ToolObserver: Send + Sync {
    fn ran(&self, name: &str, args: &Value, result: &ToolResult);
}

/// Tools by name: the built-in ones, then those of each source (a source's
/// tool named like a built-in one is not offered).
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    sources: Vec<Arc<dyn ToolSource>>,
    observer: Option<Arc<dyn ToolObserver>>,
}

impl ToolRegistry {
    /// The core tools: shell and the file tools.
    pub fn core() -> Self {
        let mut r = Self::default();
        r.register(Box::new(Shell));
        r.register(Box::new(FileRead));
        r.register(Box::new(FileWrite));
        r.register(Box::new(FileEdit));
        r.register(Box::new(ListDir));
        r.register(Box::new(Glob));
        r
    }

    /// The core tools, plus `http_request` when hosts are allowed; no
    /// `shell` when `sandbox` cannot run commands.
    pub fn for_config(agent: &crate::config::AgentConfig, sandbox: &Sandbox) -> Self {
        let mut r = Self::core();
        if !sandbox.runs_commands() {
            r.tools.remove("shell");
        }
        if !agent.http_allowed_domains.is_empty() {
            r.register(Box::new(HttpRequest::new(
                agent.http_allowed_domains.clone(),
                agent.http_max_bytes,
                Duration::from_secs(agent.tool_timeout_secs),
            )));
        }
        r
    }

    pub fn register(&mut self, tool: Box<dyn Tool>) {
        self.tools.insert(tool.name().to_string(), Arc::from(tool));
    }

    /// Takes a built-in tool away; whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        self.tools.remove(name).is_some()
    }

    /// Tells `observer` of every call from now on.
    pub fn observe(&mut self, observer: Arc<dyn ToolObserver>) {
        self.observer = Some(observer);
    }

    /// Adds tools that may change while hearth runs.
    pub fn add_source(&mut self, source: Arc<dyn ToolSource>) {
        self.sources.push(source);
    }

    /// Every tool offered now, by name.
    fn all(&self) -> BTreeMap<String, Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        for source in &self.sources {
            for tool in source.tools() {
                all.entry(tool.name().to_string()).or_insert(tool);
            }
        }
        all
    }

    /// How many tools are hearth's own (not a source's).
    pub fn built_in_count(&self) -> usize {
        self.tools.len()
    }

    pub fn names(&self) -> Vec<String> {
        self.all().into_keys().collect()
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(t) = self.tools.get(name) {
            return Some(t.clone());
        }
        self.sources
            .iter()
            .flat_map(|s| s.tools())
            .find(|t| t.name() == name)
    }

    /// Whether a call of `name` waits for the person's answer because the
    /// tool itself says so.
    pub fn asks_first(&self, name: &str) -> bool {
        self.get(name).is_some_and(|t| t.asks_first())
    }

    /// What the model is offered.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.specs_where(|_| true)
    }

    /// What the model is offered in a turn where only reading tools run.
    pub fn read_only_specs(&self) -> Vec<ToolSpec> {
        self.specs_where(|t| t.read_only())
    }

    fn specs_where(&self, keep: impl Fn(&dyn Tool) -> bool) -> Vec<ToolSpec> {
        self.all()
            .values()
            .filter(|t| keep(t.as_ref()))
            .map(|t| ToolSpec {
                name: t.name().to_string(),
                description: t.description().to_string(),
                parameters: t.schema(),
            })
            .collect()
    }

    /// Runs one call under the context's limits.
    pub async fn run(&self, name: &str, args: Value, ctx: &ToolContext) -> ToolResult {
        let Some(observer) = &self.observer else {
            return self.run_unobserved(name, args, ctx).await;
        };
        let result = self.run_unobserved(name, args.clone(), ctx).await;
        observer.ran(name, &args, &result);
        result
    }

    async fn run_unobserved(&self, name: &str, args: Value, ctx: &ToolContext) -> ToolResult {
        let Some(tool) = self.get(name) else {
            return ToolResult::error(format!(
                "unknown tool `{name}`; available: {}",
                self.names().join(", ")
            ));
        };
        if ctx.read_only && !tool.read_only() {
            return ToolResult::error(format!(
                "`{name}` changes things, and this turn was not started by a person (a scheduled job): only reading tools may run"
            ));
        }
        if let Err(e) = crate::chat::schema::validate(&args, &tool.schema()) {
            return ToolResult::error(format!("invalid arguments for `{name}`: {e}"));
        }
        if let Err(e) = ctx.policy.record_action() {
            return ToolResult::error(e.to_string());
        }
        let outcome = tokio::time::timeout(ctx.timeout, tool.execute(args, ctx)).await;
        let result = outcome.unwrap_or_else(|_| {
            ToolResult::error(format!(
                "`{name}` timed out after {} s",
                ctx.timeout.as_secs()
            ))
        });
        // Whatever a tool read (a file, a page, a calendar) is data: markup
        // in it that would start a call if the model repeated it is defused.
        let content = crate::security::fence::defuse(&ctx.scrubber.scrub(&result.content));
        ToolResult {
            content: cap(&content, ctx.output_cap),
            is_error: result.is_error,
        }
    }
}

/// A required string argument.
fn arg_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolResult> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolResult::error(format!("missing string argument `{key}`")))
}

#[cfg(test)]
mod tests;
