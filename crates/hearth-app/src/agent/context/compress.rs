//! Summarising the oldest turns with the model, keeping identifiers.

use tokio_util::sync::CancellationToken;

use super::window::{Window, is_tool_result};
use super::{ContextLimits, identifiers};
use crate::agent::call_format::xml::strip_think;
use crate::chat::{ChatMessage, ChatRequest, ProviderError, Role, SamplingParams};
use crate::providers::Provider;

const INSTRUCTIONS: &str = "You summarise the earlier part of a conversation between a user and an assistant, so the conversation can go on without it. Write at most 150 words of plain sentences: what the user wanted, what was done, what was decided, and open questions. Copy every identifier exactly as written: IDs, UUIDs, file paths, hashes, URLs, numbers, dates, names.";

/// Summary requests run under the conversation's key plus this suffix, so
/// the engine keeps them apart from the conversation's own KV cache.
const SUMMARY_SUFFIX: &str = "#summary";

/// Characters of one message shown to the summariser.
const MESSAGE_CHARS: usize = 1_200;

/// Estimated tokens of a prompt when the provider has no tokenizer: about
/// four characters a token, plus a few per message for the template.
fn tokens(provider: &dyn Provider, messages: &[ChatMessage]) -> usize {
    messages
        .iter()
        .map(|m| {
            4 + provider
                .count_tokens(&m.content)
                .unwrap_or_else(|| m.content.chars().count().div_ceil(4))
        })
        .sum()
}

/// Replaces the oldest half of the history by a summary when the history
/// passes `limits.compress_at` of the provider's context window. Returns
/// whether it did. A summary that drops identifiers is completed with them.
pub async fn compress(
    provider: &dyn Provider,
    conversation: &str,
    window: &mut Window<'_>,
    limits: &ContextLimits,
    cancel: &CancellationToken,
) -> Result<bool, ProviderError> {
    let Some(context) = provider.context_window() else {
        return Ok(false);
    };
    let threshold = (f64::from(context) * f64::from(limits.compress_at)) as usize;
    let start = window.history_start();
    let history = &window.messages[start..window.current];
    // Tokens never outnumber bytes: most turns skip the tokenizer.
    let bytes: usize = history.iter().map(|m| m.content.len()).sum();
    if bytes < threshold || tokens(provider, history) < threshold {
        return Ok(false);
    }
    let end = window.turn_start_from(start + (window.current - start) / 2);
    if end <= start + 1 || end >= window.current {
        return Ok(false);
    }
    let old = &window.messages[start..end];
    let transcript = transcript(old, context as usize * 2);
    let request = ChatRequest::new(
        format!("{conversation}{SUMMARY_SUFFIX}"),
        vec![
            ChatMessage::system(INSTRUCTIONS),
            ChatMessage::user(transcript),
        ],
        SamplingParams::greedy(300),
    )
    .internal();
    let reply = provider
        .chat(request, cancel.clone())
        .collect_with(|_| {})
        .await?;
    let mut summary = strip_think(&reply.text).0.trim().to_string();
    let everything: String = old.iter().map(|m| format!("{}\n", m.content)).collect();
    let missing: Vec<String> = identifiers(&everything)
        .into_iter()
        .filter(|id| !summary.contains(id.as_str()))
        .take(100)
        .collect();
    if !missing.is_empty() {
        summary.push_str("\nIdentifiers from that part, verbatim: ");
        summary.push_str(&missing.join(", "));
    }
    let replaced = end - start;
    window.remove(start, end);
    window.messages.splice(
        start..start,
        [
            ChatMessage::user(format!("[Summary of the earlier conversation]\n{summary}")),
            ChatMessage::assistant("Noted."),
        ],
    );
    window.current += 2;
    tracing::info!(conversation, replaced, "history compressed");
    Ok(true)
}

/// The old turns as text for the summariser, each message cut, the whole
/// kept under `max_chars` (oldest lines go first).
fn transcript(messages: &[ChatMessage], max_chars: usize) -> String {
    let mut lines: Vec<String> = messages
        .iter()
        .map(|m| {
            let who = match m.role {
                Role::User if is_tool_result(m) => "Tool",
                Role::Tool => "Tool",
                Role::User => "User",
                Role::Assistant => "Assistant",
                Role::System => "System",
            };
            let text: String = m.content.chars().take(MESSAGE_CHARS).collect();
            format!("{who}: {text}")
        })
        .collect();
    let mut total: usize = lines.iter().map(|l| l.chars().count() + 1).sum();
    while total > max_chars && lines.len() > 1 {
        total -= lines.remove(0).chars().count() + 1;
    }
    lines.join("\n")
}
