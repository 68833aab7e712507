//! Tool dispatch: how tool calls travel in a model's replies, and how their
//! results travel back.
//!
//! Two dispatchers behind one narrow trait. [`XmlToolDispatcher`], the
//! primary one, reads calls from the reply text (and takes the calls the
//! local engine already parsed under its grammar) and sends results back as
//! `<tool_result>` blocks in a user turn. [`NativeToolDispatcher`] is for
//! providers with native tool calling: calls come structured, results go
//! back as tool messages.

pub mod result;
pub mod xml;

use crate::agent::types::{ParsedReply, ParsedToolCall, ToolResultMessage};
use crate::chat::{ChatMessage, ChatReply};

/// Reads tool calls out of replies and formats results for the model.
pub trait ToolDispatcher: Send + Sync {
    /// Splits a provider reply into text, reasoning and calls.
    fn parse(&self, reply: &ChatReply) -> ParsedReply;

    /// The messages that carry `results` back to the model.
    fn format_results(&self, results: &[ToolResultMessage]) -> Vec<ChatMessage>;
}

pub use crate::config::DispatcherChoice;

/// The dispatcher for a provider: `auto` picks native only when the
/// provider reports native tool support (the local engine reports XML).
pub fn choose(choice: DispatcherChoice, provider_is_native: bool) -> Box<dyn ToolDispatcher> {
    match (choice, provider_is_native) {
        (DispatcherChoice::Native, _) | (DispatcherChoice::Auto, true) => {
            Box::new(NativeToolDispatcher)
        }
        _ => Box::new(XmlToolDispatcher),
    }
}

/// Calls in the text, the XML way.
#[derive(Debug, Default)]
pub struct XmlToolDispatcher;

impl ToolDispatcher for XmlToolDispatcher {
    fn parse(&self, reply: &ChatReply) -> ParsedReply {
        let mut parsed = xml::parse_reply(&reply.text);
        if !reply.reasoning.is_empty() {
            parsed.reasoning = join(&reply.reasoning, &parsed.reasoning);
        }
        // Calls the engine parsed under its grammar come first: they were
        // written first, before any text that followed them.
        let structured = reply
            .tool_calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()));
        let mut calls: Vec<(String, serde_json::Value)> = structured.collect();
        calls.extend(parsed.calls.drain(..).map(|c| (c.name, c.arguments)));
        parsed.calls = number(calls);
        parsed
    }

    fn format_results(&self, results: &[ToolResultMessage]) -> Vec<ChatMessage> {
        if results.is_empty() {
            return Vec::new();
        }
        let body: Vec<String> = results.iter().map(result::xml).collect();
        vec![ChatMessage::user(body.join("\n"))]
    }
}

/// Structured calls, the native way.
#[derive(Debug, Default)]
pub struct NativeToolDispatcher;

impl ToolDispatcher for NativeToolDispatcher {
    fn parse(&self, reply: &ChatReply) -> ParsedReply {
        let (text, think) = xml::strip_think(&reply.text);
        ParsedReply {
            text: text.trim().to_string(),
            reasoning: join(&reply.reasoning, &think),
            calls: number(
                reply
                    .tool_calls
                    .iter()
                    .map(|c| (c.name.clone(), c.arguments.clone()))
                    .collect(),
            ),
            malformed: Vec::new(),
        }
    }

    fn format_results(&self, results: &[ToolResultMessage]) -> Vec<ChatMessage> {
        results
            .iter()
            .map(|r| ChatMessage::new(crate::chat::Role::Tool, r.content.clone()))
            .collect()
    }
}

fn number(calls: Vec<(String, serde_json::Value)>) -> Vec<ParsedToolCall> {
    calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, arguments))| ParsedToolCall {
            id: format!("call_{}", i + 1),
            name,
            arguments,
        })
        .collect()
}

fn join(a: &str, b: &str) -> String {
    match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}\n{b}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{FinishReason, ToolCall, Usage};
    use serde_json::json;

    fn reply(text: &str, calls: Vec<ToolCall>) -> ChatReply {
        ChatReply {
            text: text.into(),
            reasoning: String::new(),
            tool_calls: calls,
            usage: Usage::default(),
            finish: FinishReason::Stop,
        }
    }

    #[test]
    fn xml_takes_engine_calls_and_text_calls() {
        let r = reply(
            "<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>",
            vec![ToolCall {
                name: "a".into(),
                arguments: json!({"x": 1}),
            }],
        );
        let parsed = XmlToolDispatcher.parse(&r);
        let names: Vec<_> = parsed
            .calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(names, [("call_1", "a"), ("call_2", "b")]);
    }

    #[test]
    fn results_go_back_in_the_dispatchers_form() {
        let results = [ToolResultMessage {
            call_id: "call_1".into(),
            name: "shell".into(),
            content: "ok".into(),
            is_error: false,
        }];
        let xml = XmlToolDispatcher.format_results(&results);
        assert_eq!(xml.len(), 1);
        assert!(
            xml[0]
                .content
                .starts_with("<tool_result name=\"shell\" status=\"ok\">")
        );
        let native = NativeToolDispatcher.format_results(&results);
        assert_eq!(native[0].role, crate::chat::Role::Tool);
    }

    #[test]
    fn auto_picks_native_only_for_native_providers() {
        let r = reply(
            "",
            vec![ToolCall {
                name: "a".into(),
                arguments: json!({}),
            }],
        );
        assert_eq!(
            choose(DispatcherChoice::Auto, false)
                .parse(&reply("<tool_call>{\"name\": \"t\"}</tool_call>", vec![]))
                .calls
                .len(),
            1
        );
        assert_eq!(
            choose(DispatcherChoice::Auto, true)
                .parse(&reply("<tool_call>{\"name\": \"t\"}</tool_call>", vec![]))
                .calls
                .len(),
            0
        );
        assert_eq!(
            choose(DispatcherChoice::Native, false)
                .parse(&r)
                .calls
                .len(),
            1
        );
    }
}
