//! The chat vocabulary: what a conversation is made of (messages, tools,
//! calls), what is asked of a model ([`ChatRequest`]) and what streams back
//! ([`StreamEvent`], [`ChatStream`]). It lies below everything that speaks
//! it: the engine, the providers, the agent, the pipeline and the history.

mod attachment;
mod audio;
mod error;
pub mod image;
pub mod schema;
mod stream;
mod tool_check;
mod types;

pub use attachment::Attachment;
pub use audio::Audio;
pub use error::ProviderError;
pub use image::Image;
pub use stream::{ChatReply, ChatStream};
pub use tool_check::{MOST_REPEATS, ToolSpecError};
pub use types::{
    CacheOrigin, ChatMessage, ChatRequest, FinishReason, MOST_CALLS, Priority, Reasoning,
    ReplyFormat, Role, SamplingParams, StreamEvent, ToolCall, ToolChoice, ToolSpec, Usage,
};
