//! The agent: turning model replies into tool calls and back.
//!
//! The conversation types; the dispatchers ([`dispatch`]) with the lenient
//! parser that finds tool calls in a local model's text; the tool-call loop
//! ([`tool_loop`]); the system prompt ([`prompt`]); and context management
//! ([`context`]) that keeps a conversation inside the model's window.

pub mod call_format;
pub mod context;
pub mod prompt;
pub mod skills;
pub mod tool_loop;
pub mod tool_pick;
pub mod types;

pub use types::{ConversationMessage, ParsedReply, ParsedToolCall, ToolResultMessage};
