//! `hearth chat`: a conversation in the terminal, through the same
//! dispatcher and pipeline as the daemon (history, commands, tools).
//!
//! Replies stream to stdout as they are written. Ctrl-C while a reply is
//! being written stops it; at the prompt it leaves. When stdin is not a
//! terminal, each line is one message and only the replies are printed;
//! the command ends once every line is answered. The conversation is kept
//! under the session name (`default` unless `--session`); `/new` forgets it.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::channels::CliChannel;
use crate::config::{Config, Environment};
use crate::daemon::{Daemon, LocalModels, Providers};
use crate::pipeline::RuntimeBuilder;

pub async fn run(
    config: &Config,
    env: &Environment,
    session: Option<String>,
) -> anyhow::Result<ExitCode> {
    let interactive = std::io::stdin().is_terminal();
    let models = Arc::new(LocalModels::new(config.clone()));
    if interactive {
        eprintln!("loading {}…", config.model.path);
    }
    if let Err(e) = models.ensure(&config.model.path).await {
        if config.routing.fallback.is_empty() {
            return Err(e.into());
        }
        eprintln!("hearth: {e}; answering with the fallback provider");
    }
    let session = session.unwrap_or_else(|| "default".to_string());
    let channel = Arc::new(CliChannel::new(&session, interactive));
    let tool_context = super::tools_cmd::context(config, env)?;
    let providers = Arc::new(Providers::new(config, models.clone())?);
    let tools = crate::tools::ToolRegistry::for_config(&config.agent, &tool_context.sandbox);
    let runtime = RuntimeBuilder::new(config.clone(), providers, tool_context)
        .channel(channel.clone())
        .tools(Arc::new(tools))
        .build()?;
    if interactive {
        eprintln!("hearth chat — session `{session}`. /help for commands.");
    }
    let (tx, mut reports) = mpsc::unbounded_channel();
    let daemon = Daemon::start(runtime.clone(), Some(tx));
    let mut handled = 0;
    loop {
        if channel.ended().is_cancelled() && handled >= channel.forwarded() {
            break;
        }
        tokio::select! {
            report = reports.recv() => match report {
                Some(r)
                    if r.message_id.starts_with("cli-")
                        && !r.message_id.starts_with(crate::channels::cli::STOP_ID) =>
                {
                    handled += 1;
                    channel.handled();
                }
                Some(_) => {}
                None => break,
            },
            _ = channel.ended().cancelled(), if !channel.ended().is_cancelled() => {}
            _ = tokio::signal::ctrl_c() => {
                if runtime.status().in_flight() > 0 {
                    channel.stop_reply().await;
                } else {
                    println!();
                    break;
                }
            }
        }
    }
    daemon.stop().await;
    models.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
