//! The agent: turning model replies into tool calls and back.
//!
//! So far: the conversation types, the dispatchers ([`dispatch`]) with the
//! lenient parser that finds tool calls in a local model's text, and result
//! capping. The tool-call loop, tools and context management build on these.

pub mod dispatch;
pub mod prompt;
pub mod tool_loop;
pub mod types;

pub use types::{ConversationMessage, ParsedReply, ParsedToolCall, ToolResultMessage};
