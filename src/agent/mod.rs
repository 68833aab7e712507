//! The agent: turning model replies into tool calls and back.
//!
//! So far: the conversation types and the lenient parser that finds tool
//! calls in a local model's text ([`dispatch::xml`]). The tool-call loop,
//! tools and context management build on these.

pub mod dispatch;
pub mod types;

pub use types::{ConversationMessage, ParsedReply, ParsedToolCall};
