//! `hearth tools list` and `hearth tools run NAME 'JSON'`: the agent's tools
//! (and the MCP servers') by hand, under the configured policy, for
//! debugging and scripting. Running a tool by hand is the person's own
//! approval.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::config::{Config, Environment};
use crate::daemon::{LoadedModel, LocalModels, Services};
use crate::sandbox::{Containment, Sandbox};
use crate::security::{Scrubber, SecurityPolicy};
use crate::tools::{ToolContext, ToolRegistry};
use crate::workspace::Workspaces;

/// The tool context the configuration describes: the workspace (an old
/// one inside the data dir moved out first), the policy and the sandbox.
pub fn context(config: &Config, env: &Environment) -> anyhow::Result<ToolContext> {
    let a = &config.agent;
    move_old_workspace(config)?;
    let created = !a.workspace.exists();
    let policy = SecurityPolicy::new(&a.workspace, a.autonomy, env.home().map(|h| h.as_path()))
        .with_context(|| {
            format!(
                "cannot use the workspace {}; fix `[agent] workspace`",
                a.workspace.display()
            )
        })?
        .with_allowed_commands(a.allowed_commands.clone())
        .with_max_actions_per_hour(a.max_actions_per_hour);
    if created {
        crate::file_modes::make_private_dir(policy.workspace()).with_context(|| {
            format!(
                "cannot make the workspace {} private",
                a.workspace.display()
            )
        })?;
    }
    let sandbox = Sandbox::resolve(
        a.sandbox,
        policy.workspace(),
        a.sandbox_network,
        a.sandbox_limits(),
    );
    match sandbox.containment() {
        Containment::Uncontained => tracing::warn!(
            "[agent] sandbox = \"off\": commands the model runs can read and write anything this user can"
        ),
        Containment::Unavailable(why) => tracing::warn!(
            reason = why.as_str(),
            "no sandbox can run here, so the shell tool is not offered; `hearth doctor` says how to fix it"
        ),
        Containment::Bubblewrap | Containment::Landlock => {}
    }
    let workspaces = Workspaces::new(policy.workspace(), a.shared_workspace);
    Ok(ToolContext {
        output_cap: a.tool_output_chars,
        scrubber: Arc::new(Scrubber::new().with_secrets(config.secrets())),
        ..ToolContext::with_sandbox(policy, sandbox, Duration::from_secs(a.tool_timeout_secs))
    }
    .with_workspaces(workspaces))
}

/// Earlier versions kept the workspace inside the data dir, where tools
/// could reach the databases. When the default workspace is in use and
/// does not exist yet, the old one is moved there once.
fn move_old_workspace(config: &Config) -> anyhow::Result<()> {
    let old = crate::config::old_workspace(&config.data_dir);
    let new = &config.agent.workspace;
    if *new != crate::config::default_workspace(&config.data_dir) || new.exists() || !old.is_dir() {
        return Ok(());
    }
    std::fs::rename(&old, new).with_context(|| {
        format!(
            "cannot move the old workspace {} to {}; move it by hand or set `[agent] workspace`",
            old.display(),
            new.display()
        )
    })?;
    tracing::info!(
        from = %old.display(),
        to = %new.display(),
        "the workspace moved out of the data dir, where tools could reach hearth's own files"
    );
    Ok(())
}

/// The agent's tools as a conversation has them (the core ones, memory,
/// jobs, the LMS), with the MCP servers' when `mcp` (each server tried once
/// first); the hub runs as long as it is kept.
async fn registry(
    config: &Config,
    ctx: &ToolContext,
    (mcp, only_mcp): (bool, bool),
) -> (ToolRegistry, Option<Arc<crate::mcp::McpHub>>) {
    let mut registry = ToolRegistry::for_config(&config.agent, &ctx.sandbox);
    // The agent's own tools beside the core ones: memory, jobs, the LMS
    // (not for running an MCP server's tool, which needs none of them).
    if !only_mcp {
        let idle = Arc::new(LoadedModel::new(Arc::new(LocalModels::new(config.clone()))));
        match Services::open(config, idle) {
            Ok(services) => services.add_tools(&mut registry),
            Err(e) => eprintln!("hearth: the memory, job and LMS tools are not offered: {e}"),
        }
    }
    if !mcp {
        return (registry, None);
    }
    let hub = super::mcp_cmd::started(config, &ctx.sandbox).await;
    for status in hub.status() {
        if let crate::mcp::ServerState::Failed(why) = &status.state {
            eprintln!("MCP server `{}` did not start: {why}", status.name);
        }
    }
    registry.add_source(hub.clone());
    (registry, Some(hub))
}

/// `hearth tools …`.
pub async fn command(
    config: &Config,
    env: &Environment,
    command: super::ToolsCommand,
) -> anyhow::Result<ExitCode> {
    match command {
        super::ToolsCommand::List => list(config, env).await,
        super::ToolsCommand::Pick {
            message,
            from,
            most,
        } => super::bench_prompt::pick(config, env, &message, from.as_deref(), most).await,
        super::ToolsCommand::Run { name, arguments } => run(config, env, &name, &arguments).await,
    }
}

pub async fn list(config: &Config, env: &Environment) -> anyhow::Result<ExitCode> {
    let ctx = context(config, env)?;
    let (registry, _hub) = registry(config, &ctx, (true, false)).await;
    let specs = registry.specs();
    let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for spec in specs {
        println!("{:<width$} {}", spec.name, spec.description);
        println!("{:<width$} arguments: {}", "", spec.parameters);
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn run(
    config: &Config,
    env: &Environment,
    name: &str,
    json: &str,
) -> anyhow::Result<ExitCode> {
    let args: serde_json::Value = serde_json::from_str(json)
        .with_context(|| format!("the arguments are not JSON: {json}"))?;
    let ctx = context(config, env)?;
    let mcp = name.contains(crate::config::MCP_SEPARATOR);
    let (registry, _hub) = registry(config, &ctx, (mcp, mcp)).await;
    let result = registry.run(name, args, &ctx).await;
    if result.is_error {
        eprintln!("{name}: {}", result.content);
        Ok(ExitCode::FAILURE)
    } else {
        print!("{}", result.content);
        if !result.content.ends_with('\n') {
            println!();
        }
        Ok(ExitCode::SUCCESS)
    }
}
