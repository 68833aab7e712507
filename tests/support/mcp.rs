//! MCP servers for the tests, as `[mcp.servers.NAME]` sections: the
//! reference servers (`mcp-server-time` from PyPI, the everything server
//! from npm, installed by `make test-clients test-mcp`) and the hostile
//! ones of `tests/clients/mcp_server.py` (built on the official Python
//! SDK), each run by the Python or Node that is here, with the folders
//! their code lives in readable inside the sandbox.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use hearth::channels::InMemoryChannel;
use hearth::config::{Config, Environment};
use hearth::daemon::Daemon;
use hearth::dispatch::Report;
use hearth::mcp::McpHub;
use hearth::pipeline::RuntimeBuilder;
use hearth::tools::ToolRegistry;
use tokio::sync::mpsc;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

fn list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| quoted(i)).collect();
    format!("[{}]", quoted.join(", "))
}

/// The Python on `PATH` (its real executable) and the folders it needs.
fn python() -> (String, Vec<String>) {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; print(sys.executable); print(sys.base_prefix); print(sys.prefix)",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let exe = std::fs::canonicalize(&lines[0]).unwrap();
    let mut reads = vec![lines[1].clone(), lines[2].clone()];
    reads.push(exe.parent().unwrap().display().to_string());
    (exe.display().to_string(), reads)
}

fn pyclients() -> PathBuf {
    let dir = root().join("target/pyclients");
    assert!(
        dir.join(".installed").exists(),
        "the Python packages are missing: run `make test-clients`"
    );
    dir
}

/// A server run as `python3 ARGS` with the pinned packages; `extra` is
/// more TOML for its section.
pub fn python_server(name: &str, args: &[String], extra: &str) -> String {
    let (exe, mut reads) = python();
    let packages = pyclients().display().to_string();
    reads.push(packages.clone());
    reads.push(root().join("tests/clients").display().to_string());
    format!(
        "[mcp.servers.{name}]\ncommand = {}\nargs = {}\nenv = {{ PYTHONPATH = {} }}\nreads = {}\n{extra}\n",
        quoted(&exe),
        list(args),
        quoted(&packages),
        list(&reads)
    )
}

/// The reference time server (`mcp-server-time`), its clock in UTC.
pub fn time_server(name: &str, extra: &str) -> String {
    let args = ["-m", "mcp_server_time", "--local-timezone", "UTC"].map(String::from);
    python_server(name, &args, extra)
}

/// A server of `tests/clients/mcp_server.py` in `mode`.
pub fn hostile(name: &str, mode: &str, extra: &str) -> String {
    let script = root()
        .join("tests/clients/mcp_server.py")
        .display()
        .to_string();
    python_server(name, &[script, mode.to_string()], extra)
}

/// `@modelcontextprotocol/server-everything` on stdio.
pub fn everything(name: &str, extra: &str) -> String {
    let package = root().join("target/npm-mcp");
    assert!(
        package.join(".installed").exists(),
        "the everything server is missing: run `make test-mcp`"
    );
    let node = which("node");
    let script = package.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut reads = vec![package.display().to_string()];
    if let Some(prefix) = node.parent().and_then(Path::parent)
        && !prefix.starts_with("/usr")
    {
        reads.push(prefix.display().to_string());
    }
    format!(
        "[mcp.servers.{name}]\ncommand = {}\nargs = {}\nreads = {}\n{extra}\n",
        quoted(&node.display().to_string()),
        list(&[script.display().to_string(), "stdio".into()]),
        list(&reads)
    )
}

fn which(program: &str) -> PathBuf {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .unwrap();
    let path = String::from_utf8(out.stdout).unwrap();
    std::fs::canonicalize(path.trim()).unwrap()
}

/// A config: `[agent] sandbox = MODE`, then the servers' sections.
pub fn config_text(sandbox: &str, servers: &[String]) -> String {
    format!("[agent]\nsandbox = \"{sandbox}\"\n\n{}", servers.join("\n"))
}

/// A daemon as `hearth daemon` builds its tools (the MCP servers' among
/// them), with `model` and an in-memory channel `mem`; every server has
/// been tried once when it returns.
pub struct McpDaemon {
    pub daemon: Daemon,
    pub rx: mpsc::UnboundedReceiver<Report>,
    pub channel: Arc<InMemoryChannel>,
    pub hub: Arc<McpHub>,
    pub workspace: PathBuf,
    pub config: Config,
}

pub async fn mcp_daemon(
    home: &Path,
    text: &str,
    model: Arc<dyn hearth::providers::Provider>,
) -> McpDaemon {
    let (config, context, hub) = settled_hub(home, text).await;
    let mut tools = ToolRegistry::for_config(&config.agent, &context.sandbox);
    tools.add_source(hub.clone());
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let runtime = RuntimeBuilder::new(config.clone(), super::local(model), context)
        .tools(Arc::new(tools))
        .channel(channel.clone())
        .build()
        .unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    McpDaemon {
        daemon: Daemon::start(runtime, Some(tx)),
        rx,
        channel,
        hub,
        workspace: config.agent.workspace.join("mem"),
        config,
    }
}

/// The config in `text` (home `home`), its tool context, and its servers
/// started as `hearth daemon` starts them, each tried once.
pub async fn settled_hub(
    home: &Path,
    text: &str,
) -> (Config, hearth::tools::ToolContext, Arc<McpHub>) {
    let env = Environment::with_home(home);
    let config = Config::parse(text, &home.join("config.toml"), &env).unwrap();
    let context = hearth::cli::tools_cmd::context(&config, &env).unwrap();
    let hub = McpHub::start(&config.mcp, &context.sandbox, &config.data_dir);
    hub.settled().await;
    (config, context, hub)
}

impl McpDaemon {
    /// Sends `text` as `who` and waits for that turn's reply.
    pub async fn say(&mut self, who: &str, text: &str) -> String {
        self.channel.inject_text(who, text);
        super::reports(&mut self.rx, 1).await;
        super::texts(&self.channel, who).pop().unwrap_or_default()
    }
}

/// Why server `name` failed: a failed server is started again after a
/// pause, so its state is read until it shows the failure (up to 60 s).
pub async fn failure(hub: &McpHub, name: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let status = hub.status();
        let server = status.iter().find(|s| s.name == name).unwrap();
        if let hearth::mcp::ServerState::Failed(why) = &server.state {
            return why.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} never showed a failure: {status:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
