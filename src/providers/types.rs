//! The vocabulary every provider speaks: messages in, stream events out.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "system" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
}

/// How to pick tokens. Temperature 0 means greedy (deterministic).
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: u32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub seed: Option<u32>,
}

impl From<&crate::config::GenerationConfig> for SamplingParams {
    fn from(g: &crate::config::GenerationConfig) -> Self {
        Self {
            max_tokens: g.max_tokens,
            temperature: g.temperature,
            top_p: g.top_p,
            top_k: g.top_k,
            min_p: g.min_p,
            repeat_penalty: g.repeat_penalty,
            seed: g.seed,
        }
    }
}

/// A request for one assistant reply.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Identifies the conversation (a history key), so a provider may reuse
    /// work from its earlier turns.
    pub conversation: String,
    pub messages: Vec<ChatMessage>,
    pub sampling: SamplingParams,
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model ended its turn.
    Stop,
    /// `max_tokens` was reached.
    Length,
    /// The reply started repeating itself and was cut.
    Repetition,
    /// The caller cancelled.
    Cancelled,
}

/// Token counts and timings of one reply.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// Time to read the prompt, until the first token could be sampled.
    pub prompt_ms: f64,
    pub generation_ms: f64,
}

/// What a provider streams back.
#[derive(Debug, Clone)]
pub enum StreamEvent {
    TextDelta(String),
    Done { usage: Usage, finish: FinishReason },
    Error(super::ProviderError),
}
