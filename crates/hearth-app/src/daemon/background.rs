//! The provider background work uses (memory consolidation, LMS summaries):
//! whichever local model is loaded, so it never makes the engine switch
//! models; the default one when none is loaded yet.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::LocalModels;
use crate::chat::{ChatRequest, ChatStream, StreamEvent};
use crate::providers::Provider;

pub struct LoadedModel {
    models: Arc<LocalModels>,
}

impl LoadedModel {
    pub fn new(models: Arc<LocalModels>) -> Self {
        Self { models }
    }
}

impl Provider for LoadedModel {
    fn name(&self) -> &str {
        "local"
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let (tx, rx) = mpsc::channel(64);
        let models = self.models.clone();
        tokio::spawn(async move {
            let provider = match models.loaded_or_default().await {
                Ok(p) => p,
                Err(e) => {
                    let _ = tx.send(StreamEvent::Error(e)).await;
                    return;
                }
            };
            let mut upstream = provider.chat(request, cancel);
            while let Some(event) = upstream.next().await {
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        ChatStream::new(rx)
    }
}
