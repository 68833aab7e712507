//! DeepSeek R1 and V3: calls between its own tokens,
//! `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>`
//! (V3.1 drops the `function` and the fence); reasoning in `<think>`,
//! which R1's template opens in the generation prompt.

use super::grammar::ToolRules;
use serde_json::Value;

use super::{Calls, Format, Ids, ModelFamily, Syntax, json, messages};
use hearth_core::chat::{ChatMessage, ToolSpec};

const CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
const CALLS_END: &str = "<｜tool▁calls▁end｜>";
const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
const CALL_END: &str = "<｜tool▁call▁end｜>";
const SEP: &str = "<｜tool▁sep｜>";

pub struct DeepSeek;

impl Format for DeepSeek {
    fn family(&self) -> ModelFamily {
        ModelFamily::DeepSeek
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: Some(("<think>", "</think>")),
            calls: &[CALLS_BEGIN, CALL_BEGIN],
            calls_at_start: &[],
            call_end: Some(CALLS_END),
            strip: &[],
            special_tokens: true,
        }
    }

    fn grammar(&self, tools: &ToolRules, _most: usize) -> String {
        let call =
            tools.alternatives(|name, args| format!(r#""{name}" "\n```json\n" {args} "\n```""#));
        format!(
            "root ::= \"{CALLS_BEGIN}\" \"{CALL_BEGIN}function{SEP}\" {call} \"{CALL_END}\" \"{CALLS_END}\"\n"
        )
    }

    /// R1's template writes a call only for an assistant turn whose content
    /// is none, and pastes the arguments in as text.
    fn messages(&self, messages: &[ChatMessage]) -> Vec<Value> {
        let mut out = messages::standard(messages, &|id| id.to_string());
        for (shaped, m) in out.iter_mut().zip(messages) {
            if m.tool_calls.is_empty() {
                continue;
            }
            if m.content.is_empty() {
                shaped["content"] = Value::Null;
            }
            if let Some(calls) = shaped["tool_calls"].as_array_mut() {
                for call in calls {
                    let text = call["function"]["arguments"].to_string();
                    call["function"]["arguments"] = Value::String(text);
                }
            }
        }
        out
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let mut out = Calls::default();
        let body = section.replace(CALLS_BEGIN, "").replace(CALLS_END, "");
        for part in body.split(CALL_BEGIN).filter(|p| !p.trim().is_empty()) {
            let part = part.split(CALL_END).next().unwrap_or(part);
            let Some((kind, rest)) = part.split_once(SEP) else {
                out.malformed.push(format!(
                    "a call without {SEP}: {}",
                    json::excerpt(part.trim())
                ));
                continue;
            };
            // `function<｜tool▁sep｜>NAME\n```json\n{…}\n```` or `NAME<｜tool▁sep｜>{…}`.
            let (name, arguments) = if kind.trim() == "function" {
                let (name, args) = rest.split_once('\n').unwrap_or((rest, ""));
                (name.trim().to_string(), args)
            } else {
                (kind.trim().to_string(), rest)
            };
            let arguments = arguments.trim();
            let arguments = arguments
                .strip_prefix("```json")
                .or(arguments.strip_prefix("```"))
                .unwrap_or(arguments);
            let arguments = arguments.trim().strip_suffix("```").unwrap_or(arguments);
            let call = match json::leading_value(arguments) {
                Some((v, _)) => json::checked(&name, v, tools, self.new_id(ids)),
                None => Err(json::CallError::unreadable(&name, arguments)),
            };
            match call {
                Ok(call) => out.calls.push(call),
                Err(e) => out.malformed.push(e.to_string()),
            }
        }
        out
    }
}
