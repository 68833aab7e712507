//! The runtime `hearth chat` and `hearth acp` share: the local model
//! (or the configured fallback when it will not load), the configured
//! tools, and the one channel the command speaks through.

use std::sync::Arc;

use crate::channels::Channel;
use crate::config::{Config, Environment};
use crate::daemon::{LocalModels, Providers};
use crate::pipeline::{Runtime, RuntimeBuilder};

/// Loads the model and builds a runtime around `channel`; the models are
/// returned so the command can shut them down when it ends.
pub async fn runtime(
    config: &Config,
    env: &Environment,
    channel: Arc<dyn Channel>,
) -> anyhow::Result<(Arc<Runtime>, Arc<LocalModels>)> {
    let models = Arc::new(LocalModels::new(config.clone()));
    if let Err(e) = models.ensure(&config.model.path).await {
        if config.routing.fallback.is_empty() {
            return Err(e.into());
        }
        eprintln!("hearth: {e}; answering with the fallback provider");
    }
    let tool_context = super::tools_cmd::context(config, env)?;
    let providers = Arc::new(Providers::new(config, models.clone())?);
    let tools = crate::tools::ToolRegistry::for_config(&config.agent, &tool_context.sandbox);
    let runtime = RuntimeBuilder::new(config.clone(), providers, tool_context)
        .channel(channel)
        .tools(Arc::new(tools))
        .build()?;
    Ok((runtime, models))
}
