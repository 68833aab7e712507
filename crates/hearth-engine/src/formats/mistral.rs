//! Mistral. v3 (Nemo): `[TOOL_CALLS][{"name": …, "arguments": {…}, "id":
//! "a1b2c3d4e"}]` to the end of the reply. v7 (Small 3.2, Devstral,
//! Magistral): `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}`, repeated
//! for several calls (history may carry `[CALL_ID]id` before `[ARGS]`).
//! Both templates insist on call ids of exactly nine letters and digits,
//! on the call and on its result.

use serde_json::Value;

use super::grammar::{ITEM, ToolRules, repeated};
use super::{Calls, Format, Ids, ModelFamily, Syntax, json, messages};
use hearth_core::chat::{ChatMessage, Role, ToolSpec};

const CALLS: &str = "[TOOL_CALLS]";
const ARGS: &str = "[ARGS]";
const CALL_ID: &str = "[CALL_ID]";
/// Reasoning of Magistral.
const THINK: (&str, &str) = ("[THINK]", "[/THINK]");

pub struct Mistral {
    v7: bool,
}

pub const V3: Mistral = Mistral { v7: false };
pub const V7: Mistral = Mistral { v7: true };

impl Format for Mistral {
    fn family(&self) -> ModelFamily {
        if self.v7 {
            ModelFamily::MistralV7
        } else {
            ModelFamily::Mistral
        }
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: self.v7.then_some(THINK),
            calls: &[CALLS],
            calls_at_start: &[],
            call_end: None,
            strip: &[],
            special_tokens: true,
        }
    }

    fn grammar(&self, tools: &ToolRules, most: usize) -> String {
        if self.v7 {
            let call = tools.alternatives(|name, args| {
                format!(r#""{name}" ( "{CALL_ID}" [a-zA-Z0-9]{{9}} )? "{ARGS}" {args}"#)
            });
            // One `[TOOL_CALLS]` per call, as the templates write them.
            format!(
                "root ::= {}\n{ITEM} ::= \"{CALLS}\" {call}\n",
                repeated(ITEM, "", most)
            )
        } else {
            let call = tools.alternatives(|name, args| {
                format!(
                    r#""{{" space "\"name\"" space ":" space "\"{name}\"" space "," space "\"arguments\"" space ":" space {args} ( space "," space "\"id\"" space ":" space "\"" [a-zA-Z0-9]{{9}} "\"" )? space "}}""#
                )
            });
            format!(
                "root ::= \"{CALLS}\" space \"[\" space {} space \"]\"\n{ITEM} ::= {call}\n",
                repeated(ITEM, "space \",\" space", most)
            )
        }
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let mut out = Calls::default();
        for part in section.split(CALLS).filter(|p| !p.trim().is_empty()) {
            let part = part.trim_start();
            if part.starts_with('[') || part.starts_with('{') {
                // The v3 list, which v7 models sometimes still write.
                let rest = json::call_list(part, tools, &mut || self.new_id(ids), &mut out);
                if !rest.trim().is_empty() {
                    out.text.push_str(rest.trim());
                }
                continue;
            }
            let Some((head, body)) = part.split_once(ARGS) else {
                out.malformed.push(format!(
                    "after {CALLS} came neither a JSON list nor NAME{ARGS}{{…}}: {}",
                    json::excerpt(part)
                ));
                continue;
            };
            let (name, id) = match head.split_once(CALL_ID) {
                Some((name, id)) => (name.trim(), Some(id.trim().to_string())),
                None => (head.trim(), None),
            };
            let id = id.unwrap_or_else(|| self.new_id(ids));
            match json::leading_value(body) {
                Some((args, rest)) => {
                    match json::checked(name, args, tools, id) {
                        Ok(call) => out.calls.push(call),
                        Err(e) => out.malformed.push(e.to_string()),
                    }
                    out.text.push_str(rest.trim());
                }
                None => out.malformed.push(format!(
                    "the arguments of `{name}` are not JSON: {}",
                    json::excerpt(body.trim())
                )),
            }
        }
        out
    }

    /// Ids of nine letters and digits; and since the templates insist that
    /// user and assistant alternate (calls and results aside), a tool round
    /// followed by a user turn gets an empty answer between them.
    fn messages(&self, messages: &[ChatMessage]) -> Vec<Value> {
        let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
        for m in messages {
            if m.role == Role::User && out.last().is_some_and(|l| l.role == Role::Tool) {
                out.push(ChatMessage::assistant(""));
            }
            out.push(m.clone());
        }
        messages::standard(&out, &|id| messages::fixed_id(id, 9))
    }

    fn new_id(&self, ids: &mut Ids) -> String {
        ids.letters(9)
    }
}
