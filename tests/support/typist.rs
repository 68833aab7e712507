//! A model that answers as the parrot does, but types: its reply streams
//! one word at a time with a pause between, and stops when cancelled. Asked
//! to "think first", it reasons a little before it answers.

use std::sync::Arc;
use std::time::Duration;

use hearth::chat::{ChatRequest, ChatStream, FinishReason, StreamEvent, Usage};
use hearth::providers::Provider;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Parrot;

pub struct Typist {
    pub parrot: Parrot,
    pub pause: Duration,
}

impl Typist {
    pub fn new(pause: Duration) -> Arc<Self> {
        Arc::new(Self {
            parrot: Parrot::default(),
            pause,
        })
    }
}

impl Provider for Typist {
    fn name(&self) -> &str {
        "typist"
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let thinks = request
            .messages
            .last()
            .is_some_and(|m| m.content.contains("think first"));
        let said = self.parrot.chat(request, cancel.clone());
        let pause = self.pause;
        let (tx, rx) = mpsc::channel(8);
        tokio::spawn(async move {
            let text = match said.collect_with(|_| {}).await {
                Ok(reply) => reply.text,
                Err(e) => {
                    let _ = tx.send(StreamEvent::Error(e)).await;
                    return;
                }
            };
            if thinks {
                for thought in ["Let me see. ", "A secret thought."] {
                    let _ = tx.send(StreamEvent::ReasoningDelta(thought.into())).await;
                }
            }
            let mut finish = FinishReason::Stop;
            for word in text.split_inclusive(' ') {
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = cancel.cancelled() => {
                        finish = FinishReason::Cancelled;
                        break;
                    }
                }
                if tx
                    .send(StreamEvent::TextDelta(word.to_string()))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            let _ = tx
                .send(StreamEvent::Done {
                    usage: Usage::default(),
                    finish,
                })
                .await;
        });
        ChatStream::new(rx)
    }
}
