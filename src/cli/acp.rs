//! `hearth acp`: hearth as an editor's agent, speaking the Agent Client
//! Protocol on stdin and stdout (see [`crate::channels::AcpChannel`]),
//! through the same dispatcher and pipeline as the daemon. Logs go to
//! stderr; stdout carries protocol lines only. The command ends when the
//! editor closes stdin and every prompt is answered, or on Ctrl-C.

use std::process::ExitCode;
use std::sync::Arc;

use super::signals;
use crate::channels::AcpChannel;
use crate::config::{Config, Environment};
use crate::daemon::Daemon;

pub async fn run(config: &Config, env: &Environment) -> anyhow::Result<ExitCode> {
    let channel = Arc::new(AcpChannel::new(
        Box::new(tokio::io::BufReader::new(tokio::io::stdin())),
        Box::new(tokio::io::stdout()),
    ));
    let (runtime, models) = super::one_channel::runtime(config, env, channel.clone()).await?;
    let daemon = Daemon::start(runtime, None);
    let ended_by = tokio::select! {
        _ = channel.finished() => None,
        stop = signals::stop() => Some(stop),
    };
    daemon.stop().await;
    models.shutdown().await;
    Ok(match ended_by {
        Some(stop) => {
            eprintln!("hearth acp: stopped by {}", stop.name());
            stop.exit_code()
        }
        None => ExitCode::SUCCESS,
    })
}
