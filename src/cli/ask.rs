//! `hearth ask`: one question, one reply on stdout, an exit code.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, bail};
use tokio_util::sync::CancellationToken;

use super::conversation::Conversation;
use super::startup;
use crate::chat::FinishReason;
use crate::config::Config;

pub async fn run(
    config: &Config,
    question: &str,
    session: Option<String>,
) -> anyhow::Result<ExitCode> {
    let question = if question == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the question from stdin")?;
        text
    } else {
        question.to_string()
    };
    let question = question.trim();
    if question.is_empty() {
        bail!("the question is empty; pass it as an argument or on stdin with `-`");
    }
    let provider = startup::local_provider(config).await?;
    let mut conversation = Conversation::open(config, session.as_deref())?;
    let cancel = CancellationToken::new();
    let interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            interrupt.cancel();
        }
    });
    let reply = conversation
        .send(&provider, question, cancel, |_| {})
        .await?;
    match reply.finish {
        FinishReason::Cancelled => return Ok(ExitCode::from(130)),
        FinishReason::Length => tracing::warn!("the reply was cut at max_tokens"),
        FinishReason::Repetition => {
            tracing::warn!("the reply was stopped because it repeated itself")
        }
        FinishReason::Stop => {}
    }
    let text = reply.text.trim();
    if text.is_empty() {
        bail!("the model returned an empty reply; try again or rephrase the question");
    }
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}
