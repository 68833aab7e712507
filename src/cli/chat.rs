//! `hearth chat`: an interactive conversation with the local model.
//!
//! Replies stream to stdout token by token. Ctrl-C while a reply is being
//! written cancels that reply and returns to the prompt; at the prompt it
//! leaves. When stdin is not a terminal, each line is one message and only
//! the replies are printed.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::conversation::Conversation;
use super::startup;
use crate::config::Config;
use crate::providers::FinishReason;

const HELP: &str = "commands: /new  start a new conversation\n          /help show this\n          /quit leave (also Ctrl-D)\nCtrl-C stops a reply that is being written.";

pub async fn run(config: &Config, session: Option<String>) -> anyhow::Result<ExitCode> {
    let provider = startup::local_provider(config).await?;
    let mut conversation = Conversation::open(config, session.as_deref())?;
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        let info = provider.engine().info();
        eprintln!(
            "hearth chat — {} ({} tokens of context). /help for commands.",
            info.path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
            info.n_ctx
        );
        if !conversation.turns().is_empty() {
            eprintln!(
                "(continuing session with {} earlier messages)",
                conversation.turns().len()
            );
        }
    }
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        if interactive {
            print!("> ");
            std::io::stdout().flush()?;
        }
        let line = tokio::select! {
            line = lines.next_line() => line?,
            _ = tokio::signal::ctrl_c() => {
                println!();
                break;
            }
        };
        let Some(line) = line else { break };
        let message = line.trim();
        match message {
            "" => continue,
            "/quit" | "/exit" => break,
            "/help" => {
                println!("{HELP}");
                continue;
            }
            "/new" => {
                conversation.reset()?;
                println!("(new conversation)");
                continue;
            }
            cmd if cmd.starts_with('/') && !cmd.contains(' ') => {
                println!("unknown command {cmd}; /help lists them");
                continue;
            }
            _ => {}
        }
        let cancel = CancellationToken::new();
        let mut stdout = std::io::stdout();
        let reply = conversation.send(&provider, message, cancel.clone(), |delta| {
            let _ = stdout.write_all(delta.as_bytes());
            let _ = stdout.flush();
        });
        tokio::pin!(reply);
        let result = loop {
            tokio::select! {
                result = &mut reply => break result,
                _ = tokio::signal::ctrl_c() => cancel.cancel(),
            }
        };
        match result {
            Ok(reply) => match reply.finish {
                FinishReason::Cancelled => println!("\n(stopped)"),
                FinishReason::Length => println!("\n(reply cut at the token limit)"),
                FinishReason::Repetition => println!("\n(reply stopped: it was repeating itself)"),
                FinishReason::Stop => println!(),
            },
            Err(e) => {
                println!();
                eprintln!("error: {e}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
