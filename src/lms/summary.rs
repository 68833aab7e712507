//! The optional one-line summary a model adds to a notice.
//!
//! It runs at [`Priority::Background`], so a user's chat is never kept
//! waiting for it, under a time limit; when the engine is busy past that
//! limit, or fails, the caller sends the plain notice instead.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::providers::{ChatMessage, ChatRequest, Priority, Provider, SamplingParams, ToolChoice};

const INSTRUCTION: &str = "You summarise course notices for a student in one short, factual \
sentence: what to do and by when. No greeting, no advice, nothing that is not in the notice.";

/// Body characters shown to the model.
const MAX_DETAIL: usize = 2_000;
/// Characters of summary kept.
const MAX_SUMMARY: usize = 300;

/// A one-line summary of `notice` (and the item's body), or `None` when the
/// provider fails, returns nothing, or takes longer than `limit`.
pub async fn summarise(
    provider: &dyn Provider,
    notice: &str,
    detail: Option<&str>,
    limit: Duration,
) -> Option<String> {
    let mut prompt = notice.to_string();
    if let Some(detail) = detail {
        prompt.push_str("\n\n");
        prompt.extend(detail.chars().take(MAX_DETAIL));
    }
    let mut request = ChatRequest::new(
        "lms-summary",
        vec![ChatMessage::system(INSTRUCTION), ChatMessage::user(prompt)],
        SamplingParams::greedy(96),
    );
    request.priority = Priority::Background;
    request.tool_choice = ToolChoice::None;
    let cancel = CancellationToken::new();
    let stream = provider.chat(request, cancel.clone());
    let reply = match tokio::time::timeout(limit, stream.collect_with(|_| {})).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(e)) => {
            tracing::info!("LMS summary failed, sending the plain notice: {e}");
            return None;
        }
        Err(_) => {
            cancel.cancel();
            tracing::info!(
                "LMS summary took over {} s, sending the plain notice",
                limit.as_secs()
            );
            return None;
        }
    };
    let line = reply
        .text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())?
        .chars()
        .take(MAX_SUMMARY)
        .collect::<String>();
    Some(line)
}
