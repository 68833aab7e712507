//! `hearth mcp list` (each server, its state and its tools) and `hearth
//! mcp serve` (hearth's own capabilities to another MCP client, on stdio).

use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use crate::config::{Config, Environment};
use crate::mcp::{McpHub, ServerState, ServerStatus};
use crate::sandbox::Sandbox;

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start each configured server once: its state and its tools.
    List,
    /// Offer hearth's memory, LMS dates, reminders and local model to an
    /// MCP client, on stdin and stdout.
    Serve,
}

pub async fn run(
    config: &Config,
    env: &Environment,
    command: McpCommand,
) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::List => list(config, env).await,
        McpCommand::Serve => serve(config, env).await,
    }
}

/// `hearth mcp serve`: the services the config turns on, their tools
/// (not the shell's nor the files'), and the local model, on stdio.
async fn serve(config: &Config, env: &Environment) -> anyhow::Result<ExitCode> {
    use crate::daemon::{LoadedModel, LocalModels, Services};
    use crate::providers::Provider;
    let models = Arc::new(LocalModels::new(config.clone()));
    let model: Arc<dyn Provider> = Arc::new(LoadedModel::new(models.clone()));
    let services = Services::open(config, model.clone())?;
    let mut tools = crate::tools::ToolRegistry::default();
    services.add_tools(&mut tools);
    let context = crate::tools::ToolContext {
        // Asking the model can take a while on a CPU.
        timeout: std::time::Duration::from_secs(config.agent.tool_timeout_secs.max(300)),
        ..super::tools_cmd::context(config, env)?
    };
    let server = crate::mcp::serve::HearthServer::new(config, tools, context, model);
    let served = crate::mcp::serve::serve_stdio(server).await;
    models.shutdown().await;
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Starts every enabled server and waits until each has been tried once.
pub async fn started(config: &Config, sandbox: &Sandbox) -> Arc<McpHub> {
    let hub = McpHub::start(&config.mcp, sandbox, &config.data_dir);
    hub.settled().await;
    hub
}

async fn list(config: &Config, env: &Environment) -> anyhow::Result<ExitCode> {
    if config.mcp.servers.is_empty() {
        println!(
            "No MCP server is configured: add one under [mcp.servers.NAME] (the README shows how, docs/GUIDE.md all of it)."
        );
        return Ok(ExitCode::SUCCESS);
    }
    let ctx = super::tools_cmd::context(config, env)?;
    let hub = started(config, &ctx.sandbox).await;
    let mut ok = true;
    for (name, server) in &config.mcp.servers {
        if !server.enabled {
            println!("{name}: off (`enabled = false`)\n");
        }
    }
    for status in hub.status() {
        ok &= status.state == ServerState::Ready;
        print!("{}", describe(&status));
    }
    hub.stop();
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A server's state and tools, for `hearth mcp list`.
fn describe(status: &ServerStatus) -> String {
    let mut out = format!("{}: {}\n", status.name, state_line(status));
    for (tool, description) in &status.tools {
        out.push_str(&format!("  {tool:<32} {}\n", first_line(description)));
    }
    out.push('\n');
    out
}

fn state_line(status: &ServerStatus) -> String {
    match &status.state {
        ServerState::Ready => {
            let pid = status.pid.map(|p| format!(", pid {p}")).unwrap_or_default();
            format!("ready, {} tools{pid}", status.tools.len())
        }
        ServerState::Starting => "starting".to_string(),
        ServerState::Failed(why) if status.stderr.is_empty() => format!("FAILED: {why}"),
        ServerState::Failed(why) => format!(
            "FAILED: {why}\n  its stderr ended with: {}",
            status.stderr.join("\n    ")
        ),
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    crate::tools::cap(line, 100).replace('\n', " ")
}

/// `hearth doctor`'s lines: for each enabled server, whether it started,
/// and if not, why and what to do.
pub async fn doctor_lines(config: &Config, sandbox: &Sandbox) -> Vec<(bool, String)> {
    if config.mcp.enabled().next().is_none() {
        return Vec::new();
    }
    let hub = started(config, sandbox).await;
    let lines = hub
        .status()
        .iter()
        .map(|s| {
            (
                s.state == ServerState::Ready,
                format!("{}: {}", s.name, state_line(s).replace("\n", " ")),
            )
        })
        .collect();
    hub.stop();
    lines
}
