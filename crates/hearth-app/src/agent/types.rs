//! What a conversation holds once tools are involved.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chat::ChatMessage;

/// A tool call as parsed from a reply, with an id to match its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// One entry of a conversation's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ConversationMessage {
    /// A plain message: system, user, assistant or tool.
    Chat(ChatMessage),
    /// An assistant turn that called tools.
    AssistantToolCalls {
        text: String,
        calls: Vec<ParsedToolCall>,
        reasoning: Option<String>,
    },
    /// The results of those calls, in order.
    ToolResults(Vec<ToolResultMessage>),
}

/// The result of one call, as it goes back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    pub call_id: String,
    pub name: String,
    pub content: String,
    pub is_error: bool,
}

/// A model reply split into what the user sees, the calls, and the rest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedReply {
    /// The text with tool calls and `<think>` blocks removed.
    pub text: String,
    /// Text from `<think>` blocks.
    pub reasoning: String,
    pub calls: Vec<ParsedToolCall>,
    /// Calls that were recognisable as calls but could not be read; each is
    /// a sentence to send back to the model as an error result.
    pub malformed: Vec<String>,
}
