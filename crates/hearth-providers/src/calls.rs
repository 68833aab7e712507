//! Structured tool calls from a cloud API, checked before the agent sees
//! them: a call to a tool that was not offered (what a prompt-injected
//! model reaches for), or arguments that are not a JSON object, become a
//! malformed call the model is told about, never a call.

use crate::chat::{StreamEvent, ToolCall, ToolSpec};

/// The call `name(json)` with `id`, as `provider` streamed it.
pub fn checked(
    provider: &str,
    tools: &[ToolSpec],
    id: String,
    name: String,
    json: &str,
) -> StreamEvent {
    if !tools.iter().any(|t| t.name == name) {
        return StreamEvent::MalformedCall(format!(
            "{provider} called `{name}`, which is not an offered tool"
        ));
    }
    let text = if json.trim().is_empty() { "{}" } else { json };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(arguments) if arguments.is_object() => StreamEvent::ToolCall(ToolCall {
            id,
            name,
            arguments,
        }),
        _ => {
            let shown: String = text.chars().take(300).collect();
            StreamEvent::MalformedCall(format!(
                "the arguments of the call to `{name}` are not a JSON object: {shown}"
            ))
        }
    }
}
