//! Hermes and Qwen (2.5, 3, QwQ): `<tool_call>\n{"name": …, "arguments":
//! {…}}\n</tool_call>`, one block per call; reasoning in `<think>…</think>`.
//! hearth's own XML protocol writes calls the same way, but describes the
//! tools in its system prompt instead of the template.

use super::grammar::{ITEM, ToolRules, repeated};
use serde_json::Value;

use super::{Calls, Format, Ids, ModelFamily, Syntax, json, messages};
use hearth_core::chat::{ChatMessage, Role, ToolSpec};

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

pub struct Hermes {
    family: ModelFamily,
}

pub const HERMES: Hermes = Hermes {
    family: ModelFamily::Hermes,
};
pub const XML: Hermes = Hermes {
    family: ModelFamily::Xml,
};

impl Format for Hermes {
    fn family(&self) -> ModelFamily {
        self.family
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: Some(("<think>", "</think>")),
            calls: &[OPEN],
            calls_at_start: &[],
            call_end: Some(CLOSE),
            strip: &[],
            special_tokens: false,
        }
    }

    fn grammar(&self, tools: &ToolRules, most: usize) -> String {
        // Qwen and Hermes templates write one block per call, a line apart.
        format!(
            "root ::= {} \"\\n\"?\n{ITEM} ::= \"{OPEN}\" \"\\n\"? {} \"\\n\"? \"{CLOSE}\"\n",
            repeated(ITEM, "\"\\n\"?", most),
            tools.json_object("name", "arguments")
        )
    }

    /// Under hearth's protocol results come back in user turns; one that
    /// follows another joins it, since strict templates (Gemma 2) insist
    /// that user and assistant alternate.
    fn messages(&self, messages: &[ChatMessage]) -> Vec<Value> {
        if self.family != ModelFamily::Xml {
            return messages::standard(messages, &|id| id.to_string());
        }
        let mut joined: Vec<ChatMessage> = Vec::with_capacity(messages.len());
        for m in messages {
            match joined.last_mut() {
                Some(last) if last.role == Role::User && m.role == Role::User => {
                    last.content.push_str("\n\n");
                    last.content.push_str(&m.content);
                }
                _ => joined.push(m.clone()),
            }
        }
        messages::standard(&joined, &|id| id.to_string())
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let body = section.strip_prefix(OPEN).unwrap_or(section);
        let body = body.strip_suffix(CLOSE).unwrap_or(body);
        let mut out = Calls::default();
        let rest = json::call_list(body, tools, &mut || self.new_id(ids), &mut out);
        if !rest.trim().is_empty() && out.malformed.is_empty() {
            out.text = rest.trim().to_string();
        }
        out
    }
}
