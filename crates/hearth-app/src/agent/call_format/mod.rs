//! Call formats: how tool calls travel in a model's replies, and how their
//! results travel back.
//!
//! Two dispatchers behind one narrow trait. [`XmlToolDispatcher`] is
//! hearth's own protocol, for models whose family the engine does not know:
//! it reads calls from the reply text (and takes the calls the engine
//! already parsed under its grammar) and sends results back as
//! `<tool_result>` blocks in a user turn. [`NativeToolDispatcher`] is for
//! providers that speak the model's own tool format (the engine with a
//! recognised family, cloud APIs): calls come structured with their ids,
//! go back on the assistant turn, and results go back as tool messages.

pub mod result;
pub mod xml;

#[cfg(test)]
mod fence_tests;

use crate::agent::types::{ParsedReply, ParsedToolCall, ToolResultMessage};
use crate::chat::{ChatMessage, ChatReply, ToolCall};

/// Reads tool calls out of replies and formats results for the model.
pub trait ToolDispatcher: Send + Sync {
    /// Splits a provider reply into text, reasoning and calls.
    fn parse(&self, reply: &ChatReply) -> ParsedReply;

    /// The assistant's turn as the model should see it next round: its text
    /// and its calls.
    fn assistant_turn(&self, text: &str, calls: &[ParsedToolCall]) -> ChatMessage;

    /// The messages that carry `results` back to the model, and `problems`:
    /// calls that could not be read, each as an error result.
    fn format_results(
        &self,
        results: &[ToolResultMessage],
        problems: &[ToolResultMessage],
    ) -> Vec<ChatMessage>;

    /// How a call is written, for a model whose call could not be read.
    fn call_hint(&self) -> &'static str {
        ""
    }
}

pub use crate::config::DispatcherChoice;

/// The dispatcher for a provider: `auto` picks native when the provider
/// reports native tool support (the local engine does when it recognised
/// the model's family).
pub fn choose(choice: DispatcherChoice, provider_is_native: bool) -> Box<dyn ToolDispatcher> {
    if is_native(choice, provider_is_native) {
        Box::new(NativeToolDispatcher)
    } else {
        Box::new(XmlToolDispatcher)
    }
}

/// Whether [`choose`] picks the native dispatcher.
pub fn is_native(choice: DispatcherChoice, provider_is_native: bool) -> bool {
    matches!(
        (choice, provider_is_native),
        (DispatcherChoice::Native, _) | (DispatcherChoice::Auto, true)
    )
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
            .malformed
            .splice(0..0, reply.malformed.iter().cloned());
        parsed
    }

    fn assistant_turn(&self, text: &str, calls: &[ParsedToolCall]) -> ChatMessage {
        let mut out = text.to_string();
        for call in calls {
            if !out.is_empty() {
                out.push('\n');
            }
            let body = serde_json::json!({"name": call.name, "arguments": call.arguments});
            out.push_str(&format!("<tool_call>\n{body}\n</tool_call>"));
        }
        ChatMessage::assistant(out)
    }

    fn format_results(
        &self,
        results: &[ToolResultMessage],
        problems: &[ToolResultMessage],
    ) -> Vec<ChatMessage> {
        let body: Vec<String> = results.iter().chain(problems).map(result::xml).collect();
        if body.is_empty() {
            return Vec::new();
        }
        vec![ChatMessage::user(body.join("\n"))]
    }

    fn call_hint(&self) -> &'static str {
        " Write it as <tool_call>{\"name\": \"…\", \"arguments\": {…}}</tool_call>."
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
            calls: reply
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| ParsedToolCall {
                    // The provider's id, which its template may require.
                    id: if c.id.is_empty() {
                        format!("call_{}", i + 1)
                    } else {
                        c.id.clone()
                    },
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
            malformed: reply.malformed.clone(),
        }
    }

    fn assistant_turn(&self, text: &str, calls: &[ParsedToolCall]) -> ChatMessage {
        let calls = calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        ChatMessage::assistant_calls(text, calls)
    }

    fn format_results(
        &self,
        results: &[ToolResultMessage],
        problems: &[ToolResultMessage],
    ) -> Vec<ChatMessage> {
        let mut out: Vec<ChatMessage> = results
            .iter()
            .map(|r| ChatMessage::tool_result(&r.call_id, &r.name, &r.content))
            .collect();
        // A call that could not be read has no id to answer: the model
        // hears about it in a user turn.
        if !problems.is_empty() {
            let lines: Vec<&str> = problems.iter().map(|p| p.content.as_str()).collect();
            out.push(ChatMessage::user(lines.join("\n")));
        }
        out
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
    use crate::chat::{FinishReason, Usage};
    use serde_json::json;

    fn reply(text: &str, calls: Vec<ToolCall>) -> ChatReply {
        ChatReply {
            text: text.into(),
            reasoning: String::new(),
            tool_calls: calls,
            malformed: Vec::new(),
            usage: Usage::default(),
            finish: FinishReason::Stop,
        }
    }

    #[test]
    fn xml_takes_engine_calls_and_text_calls() {
        let r = reply(
            "<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>",
            vec![ToolCall {
                id: String::new(),
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
        let xml = XmlToolDispatcher.format_results(&results, &[]);
        assert_eq!(xml.len(), 1);
        assert!(
            xml[0]
                .content
                .starts_with("<tool_result name=\"shell\" status=\"ok\">")
        );
        let native = NativeToolDispatcher.format_results(&results, &[]);
        assert_eq!(native[0].role, crate::chat::Role::Tool);
        assert_eq!(native[0].tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(native[0].name.as_deref(), Some("shell"));
    }

    #[test]
    fn auto_picks_native_only_for_native_providers() {
        let r = reply(
            "",
            vec![ToolCall {
                id: String::new(),
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
