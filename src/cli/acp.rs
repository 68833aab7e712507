//! `hearth acp`: hearth as an editor's agent, speaking the Agent Client
//! Protocol on stdin and stdout (see [`crate::channels::AcpChannel`]),
//! through the same dispatcher and pipeline as the daemon. Logs go to
//! stderr; stdout carries protocol lines only. The command ends when the
//! editor closes stdin and every prompt is answered, or on Ctrl-C.

use std::process::ExitCode;
use std::sync::Arc;

use crate::channels::AcpChannel;
use crate::config::{Config, Environment};
use crate::daemon::{Daemon, LocalModels, Providers};
use crate::pipeline::RuntimeBuilder;

pub async fn run(config: &Config, env: &Environment) -> anyhow::Result<ExitCode> {
    let models = Arc::new(LocalModels::new(config.clone()));
    if let Err(e) = models.ensure(&config.model.path).await {
        if config.routing.fallback.is_empty() {
            return Err(e.into());
        }
        tracing::warn!(error = %e, "answering with the fallback provider");
    }
    let channel = Arc::new(AcpChannel::new(
        Box::new(tokio::io::BufReader::new(tokio::io::stdin())),
        Box::new(tokio::io::stdout()),
    ));
    let tool_context = super::tools_cmd::context(config, env)?;
    let providers = Arc::new(Providers::new(config, models.clone())?);
    let tools = crate::tools::ToolRegistry::for_config(&config.agent, &tool_context.sandbox);
    let runtime = RuntimeBuilder::new(config.clone(), providers, tool_context)
        .channel(channel.clone())
        .tools(Arc::new(tools))
        .build()?;
    let daemon = Daemon::start(runtime, None);
    tokio::select! {
        _ = channel.finished() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    daemon.stop().await;
    models.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
