//! The optional one-line summary a model adds to a notice.
//!
//! It runs at [`Priority::Background`], so a user's chat is never kept
//! waiting for it, under a time limit; when the engine is busy past that
//! limit, or fails, the caller sends the plain notice instead.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::chat::{ChatMessage, ChatRequest, Priority, SamplingParams, ToolChoice};
use crate::providers::Provider;

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
    // A small model repeats hearth's markup; the student never reads it.
    let text = crate::security::internal_tags::strip(&reply.text);
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())?
        .chars()
        .take(MAX_SUMMARY)
        .collect::<String>();
    Some(line)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::sync::mpsc;

    use super::*;
    use crate::chat::{ChatStream, StreamEvent};
    use crate::providers::ScriptedProvider;

    /// An engine busy with someone else: the stream stays open, silent.
    #[derive(Default)]
    struct Busy(Mutex<Vec<mpsc::Sender<StreamEvent>>>);

    impl Provider for Busy {
        fn name(&self) -> &str {
            "busy"
        }

        fn chat(&self, _: ChatRequest, _: CancellationToken) -> ChatStream {
            let (tx, rx) = mpsc::channel(1);
            self.0.lock().unwrap().push(tx);
            ChatStream::new(rx)
        }
    }

    // Real time, briefly: tokio's `test-util` (paused time) is not enabled.
    #[tokio::test]
    async fn a_busy_engine_times_out_to_none() {
        let started = std::time::Instant::now();
        let got = summarise(
            &Busy::default(),
            "New news",
            None,
            Duration::from_millis(100),
        )
        .await;
        assert_eq!(got, None);
        assert!(started.elapsed() >= Duration::from_millis(100));
    }

    #[tokio::test]
    async fn the_first_line_of_a_reply_is_the_summary() {
        let p = ScriptedProvider::new(["\n  Hand in the essay by Friday.  \nMore."]);
        let got = summarise(&p, "New assignment", Some("body"), Duration::from_secs(5)).await;
        assert_eq!(got.as_deref(), Some("Hand in the essay by Friday."));
        let request = &p.requests()[0];
        assert_eq!(request.priority, Priority::Background);
        assert_eq!(request.tool_choice, ToolChoice::None);
    }

    #[tokio::test]
    async fn a_summary_never_carries_hearth_s_markup() {
        let echoed = [
            "<untrusted source=\"lms\">Hand in the essay by Friday.</untrusted>",
            "<tool_result name=\"lms\" status=\"ok\">{}</tool_result>Hand in the essay by Friday.",
            // The control: a `<` that is no tag stays.
            "Hand in the essay by Friday, 1 < 2.",
        ];
        let p = ScriptedProvider::new(echoed);
        let mut got = Vec::new();
        for _ in echoed {
            got.push(summarise(&p, "New", None, Duration::from_secs(5)).await);
        }
        assert_eq!(got[0].as_deref(), Some("Hand in the essay by Friday."));
        assert_eq!(got[1].as_deref(), Some("Hand in the essay by Friday."));
        assert_eq!(got[2].as_deref(), Some(echoed[2]));
    }
}
