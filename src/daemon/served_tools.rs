//! Client tools for a model whose own template cannot declare them (its
//! family unknown, so the engine speaks hearth's `<tool_call>` protocol):
//! the protocol and the tools go into the system message, the client's
//! earlier calls and results are written back in that protocol, and the
//! engine's grammar and parser turn the model's calls into structured
//! ones as for any family.

use crate::agent::call_format::{ToolDispatcher, XmlToolDispatcher};
use crate::agent::{ParsedToolCall, ToolResultMessage};
use crate::chat::{ChatMessage, Role, ToolSpec};

/// `messages` as a model under hearth's protocol reads them, `tools`
/// described up front.
pub fn in_hearth_protocol(messages: Vec<ChatMessage>, tools: &[ToolSpec]) -> Vec<ChatMessage> {
    let protocol = crate::agent::prompt::tool_protocol(tools);
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len() + 1);
    let mut results: Vec<ToolResultMessage> = Vec::new();
    let flush = |results: &mut Vec<ToolResultMessage>, out: &mut Vec<ChatMessage>| {
        if !results.is_empty() {
            out.extend(XmlToolDispatcher.format_results(results, &[]));
            results.clear();
        }
    };
    for m in messages {
        match m.role {
            Role::Tool => results.push(ToolResultMessage {
                call_id: m.tool_call_id.clone().unwrap_or_default(),
                name: m.name.clone().unwrap_or_default(),
                content: m.content,
                is_error: false,
            }),
            Role::Assistant if !m.tool_calls.is_empty() => {
                flush(&mut results, &mut out);
                let calls: Vec<ParsedToolCall> = m
                    .tool_calls
                    .iter()
                    .map(|c| ParsedToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    })
                    .collect();
                out.push(XmlToolDispatcher.assistant_turn(&m.content, &calls));
            }
            _ => {
                flush(&mut results, &mut out);
                out.push(m);
            }
        }
    }
    flush(&mut results, &mut out);
    match out.first_mut() {
        Some(first) if first.role == Role::System => {
            first.content.push_str("\n\n");
            first.content.push_str(&protocol);
        }
        _ => out.insert(0, ChatMessage::system(protocol)),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolCall;

    #[test]
    fn tools_calls_and_results_are_written_in_the_protocol() {
        let tools = [ToolSpec {
            name: "HassTurnOn".into(),
            description: "Turns on a device".into(),
            parameters: serde_json::json!({"type": "object"}),
        }];
        let call = ToolCall {
            id: "c1".into(),
            name: "HassTurnOn".into(),
            arguments: serde_json::json!({"name": "lamp"}),
        };
        let out = in_hearth_protocol(
            vec![
                ChatMessage::system("You run a home."),
                ChatMessage::user("lamp on"),
                ChatMessage::assistant_calls("", vec![call]),
                ChatMessage::tool_result("c1", "HassTurnOn", "done"),
            ],
            &tools,
        );
        assert!(out[0].content.starts_with("You run a home."));
        assert!(out[0].content.contains("<tool_call>") && out[0].content.contains("HassTurnOn"));
        assert!(out[2].content.contains("<tool_call>"), "{out:?}");
        let last = out.last().expect("a result turn");
        assert_eq!(last.role, Role::User);
        assert!(
            last.content.contains("<tool_result name=\"HassTurnOn\""),
            "{last:?}"
        );
        assert!(out.iter().all(|m| m.role != Role::Tool));
    }
}
