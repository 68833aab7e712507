//! `hearth tools list` and `hearth tools run NAME 'JSON'`: the agent's tools
//! by hand, under the configured policy, for debugging and scripting.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use crate::config::{Config, Environment};
use crate::security::SecurityPolicy;
use crate::tools::{ToolContext, ToolRegistry};

/// The tool context the configuration describes.
pub fn context(config: &Config, env: &Environment) -> anyhow::Result<ToolContext> {
    let a = &config.agent;
    let policy = SecurityPolicy::new(&a.workspace, a.autonomy, env.home().map(|h| h.as_path()))
        .with_context(|| {
            format!(
                "cannot use the workspace {}; fix `[agent] workspace`",
                a.workspace.display()
            )
        })?
        .with_allowed_commands(a.allowed_commands.clone())
        .with_max_actions_per_hour(a.max_actions_per_hour);
    Ok(ToolContext {
        output_cap: a.tool_output_chars,
        ..ToolContext::new(policy, Duration::from_secs(a.tool_timeout_secs))
    })
}

pub fn list(config: &Config) -> anyhow::Result<ExitCode> {
    let registry = ToolRegistry::for_config(&config.agent);
    for spec in registry.specs() {
        println!("{:<11} {}", spec.name, spec.description);
        println!("{:<11} arguments: {}", "", spec.parameters);
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
    let result = ToolRegistry::for_config(&config.agent)
        .run(name, args, &ctx)
        .await;
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
