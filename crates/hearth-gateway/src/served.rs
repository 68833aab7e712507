//! The local model served as itself to OpenAI clients: what the gateway
//! needs of it, implemented by the daemon over the loaded engine. Requests
//! for it carry the client's own messages and tools, and share the engine,
//! its queue and its KV cache with the assistant.

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use hearth_core::chat::{ChatRequest, ChatStream, ProviderError};

/// Vectors for some texts, and the tokens they took.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    pub vectors: Vec<Vec<f32>>,
    pub tokens: u32,
}

/// The model a client may ask for by name.
pub trait ServedModel: Send + Sync {
    /// The name clients ask for it by (the GGUF file's, without `.gguf`).
    fn name(&self) -> String;

    /// Starts a reply over the client's own messages (loading the model
    /// first when it is not loaded yet).
    fn chat(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<ChatStream, ProviderError>>;

    /// One vector per input, in order.
    fn embed(&self, inputs: Vec<String>) -> BoxFuture<'_, Result<Embedded, ProviderError>>;

    /// The name of a sentence-embedding model served beside it on
    /// `/v1/embeddings` (memory's), if any.
    fn embedding_model(&self) -> Option<String> {
        None
    }

    /// One vector per input from [`Self::embedding_model`].
    fn embed_meaning(
        &self,
        _inputs: Vec<String>,
    ) -> BoxFuture<'_, Result<Embedded, ProviderError>> {
        Box::pin(async {
            Err(ProviderError::InvalidRequest(
                "no embedding model is served here".into(),
            ))
        })
    }

    /// Sampling when the request sets none: `[generation]`.
    fn defaults(&self) -> hearth_core::chat::SamplingParams;
}
