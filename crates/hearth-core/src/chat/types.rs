//! The vocabulary every provider speaks: messages in, stream events out.

use serde::{Deserialize, Serialize};

pub use crate::model::Reasoning;

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    /// An assistant turn's structured calls (native tool formats), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A tool turn: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A tool turn: the name of the tool that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A user turn's pictures, shown to the model before its text. Kept
    /// out of serialised messages: the bytes travel only in memory.
    #[serde(skip)]
    pub images: Vec<super::Image>,
}

impl ChatMessage {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            images: Vec::new(),
        }
    }

    /// An assistant turn that calls tools (its text may be empty).
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::new(Role::Assistant, content)
        }
    }

    /// A tool's result, answering call `id` of tool `name`.
    pub fn tool_result(
        id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            tool_call_id: Some(id.into()),
            name: Some(name.into()),
            ..Self::new(Role::Tool, content)
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
    /// Generation ends before any of these strings; they are not returned.
    pub stop: Vec<String>,
    /// Whether and how hard a reasoning model thinks (its template's
    /// `enable_thinking`, `reasoning_effort`, `thinking`).
    pub reasoning: Reasoning,
    /// Reasoning tokens before the reasoning is closed; 0: three quarters
    /// of `max_tokens`.
    pub max_reasoning_tokens: u32,
    /// Subtracted from a token's logit once per time it was generated
    /// (OpenAI's `frequency_penalty`; 0: off).
    pub frequency_penalty: f32,
    /// Subtracted once from the logit of any token already generated
    /// (OpenAI's `presence_penalty`; 0: off).
    pub presence_penalty: f32,
    /// The shape the reply's text must take.
    pub format: ReplyFormat,
}

/// The shape a reply's text must take (OpenAI's `response_format`),
/// enforced by a grammar while sampling.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ReplyFormat {
    /// Free text.
    #[default]
    Text,
    /// Any one JSON object.
    JsonObject,
    /// JSON that this JSON Schema accepts.
    JsonSchema(serde_json::Value),
}

impl SamplingParams {
    /// Greedy decoding: the same prompt always gives the same reply.
    pub fn greedy(max_tokens: u32) -> Self {
        Self {
            max_tokens,
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            repeat_penalty: 1.0,
            seed: Some(0),
            stop: Vec::new(),
            reasoning: Reasoning::Auto,
            max_reasoning_tokens: 0,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            format: ReplyFormat::Text,
        }
    }
}

/// Who is waiting for a reply. Interactive requests are served before
/// background ones (compression, memory consolidation, LMS summaries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Priority {
    Background,
    #[default]
    Interactive,
}

/// A tool the model may call: a name, what it does, and a JSON schema for
/// its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// Whether the model may, must, or must not call a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// Text or a tool call, as the model decides.
    #[default]
    Auto,
    /// A tool call, enforced from the first token.
    Required,
    /// No tools are offered.
    None,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Matches the call to its result; in the form the model's family
    /// requires (e.g. Mistral's nine letters and digits). Empty when the
    /// provider gave none.
    #[serde(default)]
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// A request for one assistant reply.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Identifies the conversation (a history key), so a provider may reuse
    /// work from its earlier turns.
    pub conversation: String,
    pub messages: Vec<ChatMessage>,
    pub sampling: SamplingParams,
    pub priority: Priority,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    /// Work hearth does for itself (a history summary): the reply is never
    /// streamed to the user.
    pub internal: bool,
    /// Several calls may come in one reply, where the model family's format
    /// carries them (OpenAI's `parallel_tool_calls`); else at most one.
    pub parallel_calls: bool,
}

/// Calls one reply may hold when the request lets it hold several.
pub const MOST_CALLS: usize = 8;

impl ChatRequest {
    /// An interactive request without tools.
    pub fn new(
        conversation: impl Into<String>,
        messages: Vec<ChatMessage>,
        sampling: SamplingParams,
    ) -> Self {
        Self {
            conversation: conversation.into(),
            messages,
            sampling,
            priority: Priority::Interactive,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            internal: false,
            parallel_calls: false,
        }
    }

    /// Marks the request as hearth's own work, never shown to the user.
    pub fn internal(mut self) -> Self {
        self.internal = true;
        self
    }

    /// The most calls one reply may hold.
    pub fn most_calls(&self) -> usize {
        if self.parallel_calls { MOST_CALLS } else { 1 }
    }

    /// The tools actually offered: none when `tool_choice` is `None`.
    pub fn offered_tools(&self) -> &[ToolSpec] {
        match self.tool_choice {
            ToolChoice::None => &[],
            _ => &self.tools,
        }
    }
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

/// Where the cached part of a prompt came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheOrigin {
    /// Nothing was cached (or the provider keeps no cache).
    #[default]
    Fresh,
    /// The conversation still held its place in the cache.
    Resident,
    /// Restored from host RAM after an eviction.
    Ram,
    /// Restored from disk: evicted past the RAM budget, or saved at a restart.
    Disk,
    /// Another conversation's prompt prefix: a new conversation that opens
    /// like one already cached.
    Shared,
}

/// Token counts and timings of one reply.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    pub prompt_tokens: u32,
    /// Prompt tokens found in the cache, not decoded again.
    pub cached_tokens: u32,
    pub cache_origin: CacheOrigin,
    pub completion_tokens: u32,
    /// Time to read the prompt, until the first token could be sampled.
    pub prompt_ms: f64,
    pub generation_ms: f64,
    /// Tokens guessed ahead by speculative decoding and checked in the
    /// same decode as the token before them.
    pub drafted_tokens: u32,
    /// Of those, the ones the model would have chosen itself (kept).
    pub accepted_tokens: u32,
}

/// What a provider streams back.
#[derive(Debug, Clone)]
pub enum StreamEvent {
    TextDelta(String),
    /// Text inside `<think>…</think>`: shown apart, never part of the reply.
    ReasoningDelta(String),
    ToolCall(ToolCall),
    /// Recognisably a tool call that could not be read: a sentence for the
    /// model to hear, so it can write it again.
    MalformedCall(String),
    Done {
        usage: Usage,
        finish: FinishReason,
    },
    Error(super::ProviderError),
}
