//! Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>`;
//! the id is `functions.NAME:INDEX`. Reasoning (K2 Thinking) in `<think>`.

use super::grammar::ToolRules;
use super::{Calls, Format, Ids, ModelFamily, Syntax, json};
use hearth_core::chat::ToolSpec;

const SECTION: &str = "<|tool_calls_section_begin|>";
const SECTION_END: &str = "<|tool_calls_section_end|>";
const CALL: &str = "<|tool_call_begin|>";
const ARGS: &str = "<|tool_call_argument_begin|>";
const CALL_END: &str = "<|tool_call_end|>";

pub struct Kimi;

impl Format for Kimi {
    fn family(&self) -> ModelFamily {
        ModelFamily::Kimi
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: Some(("<think>", "</think>")),
            calls: &[SECTION],
            calls_at_start: &[],
            call_end: Some(SECTION_END),
            strip: &[],
            special_tokens: true,
        }
    }

    fn grammar(&self, tools: &ToolRules, _most: usize) -> String {
        let call = tools.alternatives(|name, args| {
            format!(r#""functions.{name}:" [0-9]{{1,3}} "{ARGS}" {args}"#)
        });
        format!("root ::= \"{SECTION}\" \"{CALL}\" {call} \"{CALL_END}\" \"{SECTION_END}\"\n")
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let mut out = Calls::default();
        let body = section.replace(SECTION, "").replace(SECTION_END, "");
        for part in body.split(CALL).filter(|p| !p.trim().is_empty()) {
            let part = part.split(CALL_END).next().unwrap_or(part);
            let Some((id, arguments)) = part.split_once(ARGS) else {
                out.malformed.push(format!(
                    "a call without {ARGS}: {}",
                    json::excerpt(part.trim())
                ));
                continue;
            };
            let id = id.trim();
            let name = id.strip_prefix("functions.").unwrap_or(id);
            let name = name.rsplit_once(':').map_or(name, |(n, _)| n);
            let call = match json::leading_value(arguments) {
                Some((v, _)) => json::checked(name, v, tools, self.new_id(ids)),
                None => Err(json::CallError::unreadable(name, arguments)),
            };
            match call {
                Ok(call) => out.calls.push(call),
                Err(e) => out.malformed.push(e.to_string()),
            }
        }
        out
    }
}
