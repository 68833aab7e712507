//! hearth-providers: where replies come from.
//!
//! The rest of hearth asks a [`Provider`] for a reply and reads a stream of
//! events back, in the vocabulary of [`crate::chat`]. The local llama.cpp engine is the primary provider; an
//! OpenAI-compatible API or Anthropic's can stand behind it ([`Fallback`])
//! or answer a route, where the config asks for one.

mod anthropic;
mod busy_retry;
mod calls;
mod fallback;
mod http;
mod local;
mod openai;
mod scripted;

// The floors below, under the names this crate's paths use.
use hearth_config as config;
use hearth_core::{chat, retry};
use hearth_engine as engine;

pub use anthropic::AnthropicProvider;
pub use busy_retry::RetryWhenBusy;
pub use fallback::Fallback;
pub use local::LocalProvider;
pub use openai::OpenAiProvider;
pub use scripted::ScriptedProvider;

use tokio_util::sync::CancellationToken;

use crate::chat::{ChatRequest, ChatStream, ProviderError};
use futures::future::BoxFuture;

/// A source of chat replies. One required method: start a reply and stream it.
pub trait Provider: Send + Sync {
    /// A short name for logs and `/status`.
    fn name(&self) -> &str;

    /// Starts generating a reply. Events arrive on the returned stream, which
    /// always ends with `Done` or `Error`. Cancelling `cancel` ends it early
    /// with `FinishReason::Cancelled`.
    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream;

    /// Whether the provider takes tools in the model's own format and
    /// returns structured calls with ids: the local engine when it knows the
    /// model's family; otherwise calls travel as hearth's `<tool_call>` text.
    fn supports_native_tools(&self) -> bool {
        false
    }

    /// Tokens `text` takes, with the provider's own tokenizer where it has
    /// one; `None` means callers estimate.
    fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }

    /// The context window in tokens, where known.
    fn context_window(&self) -> Option<u32> {
        None
    }

    /// Whether the model sees the pictures of a user turn
    /// ([`ChatMessage::images`](crate::chat::ChatMessage)); one that
    /// cannot is never sent any.
    fn sees_images(&self) -> bool {
        false
    }

    /// Runs `work` (speech on the same cores or GPU) where it cannot
    /// overlap this provider's decoding: the local engine runs it between
    /// two decode steps. A cloud provider's runs on a blocking thread at once.
    fn exclusive(&self, work: Work) -> BoxFuture<'static, Result<(), ProviderError>> {
        Box::pin(async move {
            tokio::task::spawn_blocking(work)
                .await
                .map_err(|e| ProviderError::Failed(format!("work beside the model failed: {e}")))
        })
    }
}

/// Work for [`Provider::exclusive`].
pub type Work = Box<dyn FnOnce() + Send>;
