//! The local llama.cpp engine as a [`Provider`].

use tokio_util::sync::CancellationToken;

use super::Provider;
use crate::chat::{ChatRequest, ChatStream, ProviderError};
use crate::engine::Engine;
use futures::future::BoxFuture;

/// Serves replies from the in-process engine.
#[derive(Debug)]
pub struct LocalProvider {
    engine: Engine,
}

impl LocalProvider {
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}

impl Provider for LocalProvider {
    fn name(&self) -> &str {
        "local"
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        self.engine.submit(request, cancel)
    }

    /// When the engine recognised the model's family, tools go through
    /// its template and calls come back structured, with their ids.
    fn supports_native_tools(&self) -> bool {
        self.engine.info().family != crate::engine::formats::ModelFamily::Xml
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.engine.count_tokens(text)
    }

    fn context_window(&self) -> Option<u32> {
        Some(self.engine.info().n_ctx)
    }

    /// With the model's vision projector loaded.
    fn sees_images(&self) -> bool {
        self.engine.info().vision
    }

    /// On the engine's own thread, between two decode steps.
    fn exclusive(&self, work: super::Work) -> BoxFuture<'static, Result<(), ProviderError>> {
        Box::pin(self.engine.exclusive(work))
    }
}
