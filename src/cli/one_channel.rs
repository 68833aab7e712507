//! The runtime `hearth chat` and `hearth acp` share: the local model
//! (or the configured fallback when it will not load), the configured
//! tools, memory, and the one channel the command speaks through.

use std::sync::Arc;

use crate::channels::Channel;
use crate::config::{Config, Environment};
use crate::daemon::{LoadedModel, LocalModels, Providers, Services};
use crate::pipeline::fixed_prompt::FixedPrompt;
use crate::pipeline::{Runtime, RuntimeBuilder};

/// Loads the model and builds a runtime around `channel`; the models are
/// returned so the command can shut them down when it ends.
pub async fn runtime(
    config: &Config,
    env: &Environment,
    channel: Arc<dyn Channel>,
) -> anyhow::Result<(Arc<Runtime>, Arc<LocalModels>)> {
    let models = Arc::new(LocalModels::new(config.clone()));
    // The local model is loaded first when it answers by default; a cloud
    // default loads it only if a route asks for it.
    let local = if config.routing.default_provider == "local" {
        match models.ensure(&config.model.path).await {
            Ok(local) => Some(local),
            Err(e) if config.routing.fallback.is_empty() => return Err(e.into()),
            Err(e) => {
                eprintln!("hearth: {e}; answering with the fallback provider");
                None
            }
        }
    } else {
        None
    };
    let tool_context = super::tools_cmd::context(config, env)?;
    let providers = Arc::new(Providers::new(config, models.clone())?);
    // Memory as the daemon keeps it; jobs and LMS polls are the daemon's
    // alone (they deliver to its channels).
    let mut own = config.clone();
    own.scheduler.enabled = false;
    own.lms.sources.clear();
    let services = Services::open(&own, Arc::new(LoadedModel::new(models.clone())))?;
    let library = super::docs_cmd::library(config)?;
    let tools = super::docs_cmd::with_search(services.tools(&own, &tool_context.sandbox), &library);
    if let Some(local) = local {
        let fixed = FixedPrompt::measure(config, &tools.specs(), local.engine(), channel.name())?;
        tracing::info!(fixed = fixed.describe(), "the fixed prompt");
        fixed.fits()?;
    }
    let mut builder = RuntimeBuilder::new(config.clone(), providers, tool_context)
        .channel(channel)
        .tools(Arc::new(tools));
    if let Some(memory) = services.turn_memory() {
        builder = builder.memory(memory);
    }
    builder = builder.documents(library);
    Ok((builder.build()?, models))
}
