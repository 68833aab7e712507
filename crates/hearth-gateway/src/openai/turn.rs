//! One request's reply as both APIs render it: text and tool calls as they
//! come, then how it ended and what it cost. The assistant and the served
//! model both produce it ([`super::assistant`], [`super::direct`]); chat
//! completions and responses render it ([`super::completions`],
//! [`super::responses`]). Dropping the receiver (the client hung up)
//! stops the reply.

use tokio::sync::mpsc;

use super::error::ApiError;
use hearth_core::chat::{CacheOrigin, FinishReason, ToolCall, Usage};

/// One thing the client hears.
#[derive(Debug, Clone)]
pub enum Out {
    Text(String),
    /// What a reasoning model thinks (served model only; the assistant's
    /// thoughts stay hidden).
    Reasoning(String),
    Call(ToolCall),
    Done {
        usage: Usage,
        finish: Finish,
    },
    /// Nothing more comes.
    Failed(ApiError),
}

/// Why a reply ended, as OpenAI names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    Stop,
    Length,
    ToolCalls,
}

impl Finish {
    pub fn of(reason: FinishReason, calls: bool) -> Self {
        match reason {
            _ if calls => Self::ToolCalls,
            FinishReason::Length | FinishReason::Repetition => Self::Length,
            FinishReason::Stop | FinishReason::Cancelled => Self::Stop,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
        }
    }
}

pub type Turn = mpsc::Receiver<Out>;

/// A whole reply, read to its end.
#[derive(Debug, Default)]
pub struct Whole {
    pub text: String,
    pub reasoning: String,
    pub calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish: Option<Finish>,
}

/// Reads `turn` to its end; the first failure ends it.
pub async fn whole(mut turn: Turn) -> Result<Whole, ApiError> {
    let mut whole = Whole::default();
    while let Some(out) = turn.recv().await {
        match out {
            Out::Text(t) => whole.text.push_str(&t),
            Out::Reasoning(t) => whole.reasoning.push_str(&t),
            Out::Call(c) => whole.calls.push(c),
            Out::Done { usage, finish } => {
                whole.usage = usage;
                whole.finish = Some(finish);
                return Ok(whole);
            }
            Out::Failed(e) => return Err(e),
        }
    }
    Err(ApiError::new(
        axum::http::StatusCode::BAD_GATEWAY,
        "the reply ended without finishing",
    ))
}

/// OpenAI's `usage` of chat completions.
pub fn usage_json(u: &Usage) -> serde_json::Value {
    serde_json::json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": { "cached_tokens": own_cached(u) },
    })
}

/// The cached tokens a client is told of: those of its own conversation.
/// A prefix copied from another conversation (`Shared`) counts 0, or the
/// count would tell one client how much of its prompt matches another's.
pub fn own_cached(u: &Usage) -> u32 {
    match u.cache_origin {
        CacheOrigin::Shared => 0,
        _ => u.cached_tokens,
    }
}
