//! Provider errors, typed so callers can decide what to do next.

/// Why a provider could not produce a reply.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// The prompt does not fit the context window. Callers compact the
    /// history and retry; this is classified by the provider, not guessed
    /// from a message.
    #[error("the conversation ({needed} tokens) does not fit the context window ({limit} tokens)")]
    ContextOverflow { needed: u32, limit: u32 },
    /// The request itself cannot be served (bad template, bad parameters).
    #[error("{0}")]
    InvalidRequest(String),
    /// The provider is gone or failed while generating.
    #[error("{0}")]
    Failed(String),
    /// The provider is overloaded or rate limiting: the same request may
    /// succeed later, after `retry_after_secs` when it said.
    #[error("{message}")]
    Busy {
        message: String,
        retry_after_secs: Option<u64>,
    },
}
