//! `hearth doctor`'s `prompt` line: how many tokens hearth's system text
//! and the tools the daemon would offer take with the loaded model, against
//! its context. MCP servers are not started here; their tools come on top.

use std::sync::Arc;

use crate::config::Config;
use crate::daemon::{LoadedModel, LocalModels, Services};
use crate::engine::Engine;
use crate::pipeline::fixed_prompt::FixedPrompt;
use crate::tools::ToolRegistry;

/// Whether the fixed prompt leaves room for a reply, and the line saying so.
pub fn line(config: &Config, engine: &Engine) -> (bool, String) {
    let sandbox = crate::sandbox::Sandbox::resolve(
        config.agent.sandbox,
        &config.agent.workspace,
        config.agent.sandbox_network,
        config.agent.sandbox_limits(),
    );
    let mut tools = ToolRegistry::for_config(&config.agent, &sandbox);
    // The services' tools (memory, jobs, the LMS); never started here.
    let idle = Arc::new(LoadedModel::new(Arc::new(LocalModels::new(config.clone()))));
    match Services::open(config, idle) {
        Ok(services) => services.add_tools(&mut tools),
        Err(e) => {
            return (
                false,
                format!("cannot open hearth's stores to list their tools: {e}"),
            );
        }
    }
    let mcp = match config.mcp.enabled().count() {
        0 => String::new(),
        n => format!(" (the tools of {n} MCP servers come on top)"),
    };
    match FixedPrompt::measure(config, &tools.specs(), engine, "cli") {
        Ok(fixed) => match fixed.fits() {
            Ok(()) => (true, format!("{}{mcp}", fixed.describe())),
            Err(why) => (false, why.to_string()),
        },
        Err(e) => (
            false,
            format!("the fixed prompt could not be measured: {e}"),
        ),
    }
}
