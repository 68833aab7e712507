//! The configured local model, served as itself on the gateway's
//! OpenAI-compatible API (see `channels::gateway::ServedModel`). It shares
//! the engine, its queue and its cache with the assistant.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::LocalModels;
use crate::channels::gateway::{Embedded, ServedModel};
use crate::chat::{ChatRequest, ChatStream, ProviderError, SamplingParams};
use crate::config::Config;
use crate::engine::EmbeddingModel;
use crate::providers::Provider;

pub struct ServedLocal {
    models: Arc<LocalModels>,
    /// The sentence-embedding model, served under its own name.
    meaning: Option<Arc<EmbeddingModel>>,
    /// The configured model file.
    path: String,
    defaults: SamplingParams,
}

impl ServedLocal {
    pub fn new(config: &Config, models: Arc<LocalModels>) -> Self {
        Self {
            models,
            meaning: None,
            path: config.model.path.clone(),
            defaults: SamplingParams::from(&config.generation),
        }
    }
}

impl ServedLocal {
    /// Serves `model` on `/v1/embeddings` beside the chat model.
    pub fn with_meaning(mut self, model: Option<Arc<EmbeddingModel>>) -> Self {
        self.meaning = model;
        self
    }
}

/// A model file's name without its folder and `.gguf`.
pub fn model_name(path: &str) -> String {
    let file = Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string());
    file.strip_suffix(".gguf").unwrap_or(&file).to_string()
}

impl ServedModel for ServedLocal {
    fn name(&self) -> String {
        model_name(&self.path)
    }

    fn chat(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<ChatStream, ProviderError>> {
        Box::pin(async move {
            let provider = self.models.ensure(&self.path).await?;
            let mut request = request;
            if !provider.supports_native_tools() && !request.offered_tools().is_empty() {
                request.messages = super::served_tools::in_hearth_protocol(
                    std::mem::take(&mut request.messages),
                    &request.tools,
                );
            }
            Ok(provider.chat(request, cancel))
        })
    }

    fn embed(&self, inputs: Vec<String>) -> BoxFuture<'_, Result<Embedded, ProviderError>> {
        Box::pin(async move {
            let provider = self.models.ensure(&self.path).await?;
            // Dropped with this future (the client went away): the engine
            // stops before its next input.
            let cancel = CancellationToken::new();
            let _stop = cancel.clone().drop_guard();
            let (vectors, tokens) =
                tokio::task::spawn_blocking(move || provider.engine().embed(inputs, cancel))
                    .await
                    .map_err(|e| {
                        ProviderError::Failed(format!("the embedding task failed: {e}"))
                    })??;
            Ok(Embedded { vectors, tokens })
        })
    }

    fn embedding_model(&self) -> Option<String> {
        self.meaning.as_ref().map(|m| m.info().name.clone())
    }

    fn embed_meaning(&self, inputs: Vec<String>) -> BoxFuture<'_, Result<Embedded, ProviderError>> {
        Box::pin(async move {
            let model = self.meaning.clone().ok_or_else(|| {
                ProviderError::InvalidRequest("no embedding model is loaded".into())
            })?;
            // Dropped with this future (the client went away): the model
            // stops before its next input.
            let cancel = CancellationToken::new();
            let _stop = cancel.clone().drop_guard();
            let (vectors, tokens) =
                tokio::task::spawn_blocking(move || model.embed(inputs, cancel))
                    .await
                    .map_err(|e| {
                        ProviderError::Failed(format!("the embedding task failed: {e}"))
                    })??;
            Ok(Embedded { vectors, tokens })
        })
    }

    fn defaults(&self) -> SamplingParams {
        self.defaults.clone()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_name_is_the_file_without_folder_or_extension() {
        assert_eq!(
            super::model_name("/m/Qwen3-8B-Q4_K_M.gguf"),
            "Qwen3-8B-Q4_K_M"
        );
        assert_eq!(super::model_name("smol.Q4_1.gguf"), "smol.Q4_1");
    }
}
