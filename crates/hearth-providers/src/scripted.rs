//! A provider that replies from a script: for testing the agent loop and
//! the pipeline without a model.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use super::Provider;
use crate::chat::{ChatRequest, ChatStream, FinishReason, ProviderError};

/// Replies with the scripted texts in order and records every request.
#[derive(Default)]
pub struct ScriptedProvider {
    replies: Mutex<VecDeque<Result<(String, FinishReason), ProviderError>>>,
    requests: Mutex<Vec<ChatRequest>>,
    context_window: Option<u32>,
}

impl ScriptedProvider {
    pub fn new(replies: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            replies: Mutex::new(
                replies
                    .into_iter()
                    .map(|r| Ok((r.into(), FinishReason::Stop)))
                    .collect(),
            ),
            requests: Mutex::default(),
            context_window: None,
        }
    }

    /// Reports a context window (tokens are estimated), for context
    /// management tests.
    pub fn with_context_window(mut self, tokens: u32) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// Queues a text reply after those already queued.
    pub fn then_reply(self, text: impl Into<String>) -> Self {
        self.then_cut(text, FinishReason::Stop)
    }

    /// Queues a reply that ended for `finish` (cut at `max_tokens`, say).
    pub fn then_cut(self, text: impl Into<String>, finish: FinishReason) -> Self {
        self.replies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(Ok((text.into(), finish)));
        self
    }

    /// Queues an error as the next reply.
    pub fn then_fail(self, error: ProviderError) -> Self {
        self.replies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(Err(error));
        self
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn context_window(&self) -> Option<u32> {
        self.context_window
    }

    fn chat(&self, request: ChatRequest, _cancel: CancellationToken) -> ChatStream {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request);
        let next = self
            .replies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        match next {
            Some(Ok((text, finish))) => ChatStream::ended(text, finish),
            Some(Err(e)) => ChatStream::failed(e),
            None => ChatStream::failed(ProviderError::Failed(
                "the script has no more replies".into(),
            )),
        }
    }
}
