//! `hearth ask`: one question, one reply on stdout, an exit code.

use std::io::Read;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, bail};
use tokio_util::sync::CancellationToken;

use super::conversation::Conversation;
use super::{signals, startup};
use crate::chat::FinishReason;
use crate::config::Config;

pub async fn run(
    config: &Config,
    question: &str,
    session: Option<String>,
    (images, files): (&[std::path::PathBuf], &[std::path::PathBuf]),
) -> anyhow::Result<ExitCode> {
    let images = read_images(config, images)?;
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
    // Documents are read before the model loads: a file that cannot be read
    // is said at once.
    let question = match super::docs_cmd::turn_with(config, files, question).await? {
        Some(documents) => format!(
            "{}\n\n{question}",
            crate::security::fence::fence("documents", &documents)
        ),
        None => question.to_string(),
    };
    let _ = crate::daemon::sweep_once(config.data_dir.clone(), config.retention).await;
    let cancel = CancellationToken::new();
    let stopped = catch_stops(&cancel);
    let provider = startup::local_provider(config).await?;
    let mut conversation = Conversation::open(config, session.as_deref())?;
    let user = crate::chat::ChatMessage {
        images,
        ..crate::chat::ChatMessage::user(question)
    };
    let reply = conversation.send(&provider, user, cancel, |_| {}).await?;
    // What the cache saved (`RUST_LOG=hearth::cli::ask=info` shows it).
    tracing::info!(
        prompt_tokens = reply.usage.prompt_tokens,
        cached_tokens = reply.usage.cached_tokens,
        "the prompt was read"
    );
    match reply.finish {
        FinishReason::Cancelled => {
            return Ok(match stopped.get() {
                Some(stop) => {
                    eprintln!(
                        "hearth: stopped by {} before the reply was complete",
                        stop.name()
                    );
                    stop.exit_code()
                }
                None => {
                    eprintln!(
                        "hearth: the engine cancelled the reply before it was complete (it may be shutting down); nothing was printed"
                    );
                    ExitCode::FAILURE
                }
            });
        }
        FinishReason::Length => tracing::warn!("the reply was cut at max_tokens"),
        FinishReason::Repetition => {
            tracing::warn!("the reply was stopped because it repeated itself")
        }
        FinishReason::Stop => {}
    }
    println!("{}", printed(&reply.text, &reply.reasoning)?);
    Ok(ExitCode::SUCCESS)
}

/// What of the reply goes to stdout: its text without hearth's markup
/// (a small model repeats it), or an error saying why there is none.
fn printed(text: &str, reasoning: &str) -> anyhow::Result<String> {
    let text = crate::security::internal_tags::strip(text);
    let text = text.trim();
    if text.is_empty() && !reasoning.trim().is_empty() {
        bail!(
            "the model only thought ({} characters of reasoning, hidden) and never wrote an answer; its think block was never closed. Fix: ask again; set `[generation] reasoning = \"off\"` where the model's template can turn thinking off (Qwen3, GLM, Gemma 4, not QwQ or DeepSeek-R1); or raise `[generation] max_tokens`",
            reasoning.chars().count()
        );
    }
    if text.is_empty() {
        bail!("the model returned an empty reply; try again or rephrase the question");
    }
    Ok(text.to_string())
}

/// A stop signal cancels the reply, which then ends with a line that
/// names it. A model still loading cannot be interrupted: past a short
/// grace the command leaves at once, saying so too. The signal, once seen.
fn catch_stops(cancel: &CancellationToken) -> Arc<OnceLock<signals::Stop>> {
    let stopped = Arc::new(OnceLock::new());
    let (interrupt, seen) = (cancel.clone(), stopped.clone());
    let mut stops = signals::catch();
    tokio::spawn(async move {
        let stop = stops.next().await;
        let _ = seen.set(stop);
        interrupt.cancel();
        tokio::time::sleep(Duration::from_secs(5)).await;
        eprintln!("hearth: stopped by {}", stop.name());
        std::process::exit(128 + stop.signal());
    });
    stopped
}

/// The `--image` files, each refused before it is read when it is over
/// `[model] image_max_mb`.
fn read_images(
    config: &Config,
    paths: &[std::path::PathBuf],
) -> anyhow::Result<Vec<crate::chat::Image>> {
    let limit = u64::from(config.model.image_max_mb) << 20;
    paths
        .iter()
        .map(|path| {
            let shown = path.display();
            let size = std::fs::metadata(path)
                .with_context(|| format!("cannot read the image {shown}"))?
                .len();
            if size > limit {
                bail!(
                    "the image {shown} is {size} bytes, over the limit of {limit} (`[model] image_max_mb`)"
                );
            }
            let bytes = std::fs::read(path).with_context(|| format!("cannot read the image {shown}"))?;
            Ok(crate::chat::Image::new(bytes))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_answer_has_no_markup_and_an_empty_one_says_why() {
        let echoed = "It is 21 °C. <untrusted source=\"memory\">You prefer tea.</untrusted> <tool_result name=\"get_weather\" status=\"ok\">{}</tool_result>";
        assert_eq!(printed(echoed, "").unwrap(), "It is 21 °C. You prefer tea.");
        // The control: a `<` that is no tag stays, word for word.
        assert_eq!(printed("1 < 2, <b>", "").unwrap(), "1 < 2, <b>");
        let why = printed("  ", "hmm").unwrap_err().to_string();
        assert!(why.contains("only thought"), "{why}");
        let why = printed("", "").unwrap_err().to_string();
        assert!(why.contains("empty reply"), "{why}");
    }
}
