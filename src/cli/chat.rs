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

use super::signals::{self, Stop};
use crate::channels::CliChannel;
use crate::config::{Config, Environment};
use crate::daemon::Daemon;

pub async fn run(
    config: &Config,
    env: &Environment,
    session: Option<String>,
) -> anyhow::Result<ExitCode> {
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!("loading {}…", config.model.path);
    }
    let session = session.unwrap_or_else(|| "default".to_string());
    let channel = Arc::new(CliChannel::new(&session, interactive));
    let (runtime, models) = super::one_channel::runtime(config, env, channel.clone()).await?;
    if interactive {
        eprintln!("hearth chat — session `{session}`. /help for commands.");
    }
    let (tx, mut reports) = mpsc::unbounded_channel();
    let daemon = Daemon::start(runtime.clone(), Some(tx));
    let mut handled = 0;
    let mut ended_by = None;
    let stops = signals::stop();
    tokio::pin!(stops);
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
            stop = &mut stops => {
                stops.set(signals::stop());
                if stop == Stop::Interrupt && runtime.status().in_flight() > 0 {
                    // Ctrl-C during a reply stops the reply, not the chat.
                    channel.stop_reply().await;
                } else if stop == Stop::Interrupt {
                    println!();
                    break;
                } else {
                    ended_by = Some(stop);
                    break;
                }
            }
        }
    }
    daemon.stop().await;
    models.shutdown().await;
    Ok(match ended_by {
        Some(stop) => {
            eprintln!("hearth chat: stopped by {}", stop.name());
            stop.exit_code()
        }
        None => ExitCode::SUCCESS,
    })
}
