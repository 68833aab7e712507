//! The receiving end of a reply: a stream of [`StreamEvent`]s.

use tokio::sync::mpsc;

use super::{FinishReason, ProviderError, StreamEvent, ToolCall, Usage};

/// A reply in progress.
#[derive(Debug)]
pub struct ChatStream {
    rx: mpsc::Receiver<StreamEvent>,
}

/// A finished reply.
#[derive(Debug, Clone)]
pub struct ChatReply {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    /// Calls that could not be read (see [`StreamEvent::MalformedCall`]).
    pub malformed: Vec<String>,
    pub usage: Usage,
    pub finish: FinishReason,
}

impl ChatStream {
    pub fn new(rx: mpsc::Receiver<StreamEvent>) -> Self {
        Self { rx }
    }

    /// A stream that fails at once.
    pub fn failed(error: ProviderError) -> Self {
        let (tx, rx) = mpsc::channel(1);
        let _ = tx.try_send(StreamEvent::Error(error));
        Self { rx }
    }

    /// A whole reply of `text`, already finished.
    pub fn text(text: impl Into<String>) -> Self {
        Self::ended(text, FinishReason::Stop)
    }

    /// A whole reply of `text` that ended for `finish`.
    pub fn ended(text: impl Into<String>, finish: FinishReason) -> Self {
        let (tx, rx) = mpsc::channel(2);
        let _ = tx.try_send(StreamEvent::TextDelta(text.into()));
        let _ = tx.try_send(StreamEvent::Done {
            usage: Usage::default(),
            finish,
        });
        Self { rx }
    }

    pub async fn next(&mut self) -> Option<StreamEvent> {
        self.rx.recv().await
    }

    /// Reads the stream to its end, handing each text delta to `on_text`.
    pub async fn collect_with(
        mut self,
        mut on_text: impl FnMut(&str),
    ) -> Result<ChatReply, ProviderError> {
        let mut text = String::new();
        let mut reasoning = String::new();
        let mut tool_calls = Vec::new();
        let mut malformed = Vec::new();
        while let Some(event) = self.rx.recv().await {
            match event {
                StreamEvent::TextDelta(delta) => {
                    on_text(&delta);
                    text.push_str(&delta);
                }
                StreamEvent::ReasoningDelta(delta) => reasoning.push_str(&delta),
                StreamEvent::ToolCall(call) => tool_calls.push(call),
                StreamEvent::MalformedCall(problem) => malformed.push(problem),
                StreamEvent::Done { usage, finish } => {
                    return Ok(ChatReply {
                        text,
                        reasoning,
                        tool_calls,
                        malformed,
                        usage,
                        finish,
                    });
                }
                StreamEvent::Error(e) => return Err(e),
            }
        }
        Err(ProviderError::Failed(
            "the provider stopped without finishing the reply".into(),
        ))
    }
}
