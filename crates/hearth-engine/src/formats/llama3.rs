//! Llama 3.x: with custom tools the model answers with a bare JSON object,
//! `{"name": "get_weather", "parameters": {"city": "Paris"}}`, as its whole
//! reply (some write `"arguments"`, or several objects separated by `;`);
//! built-in tools come after `<|python_tag|>`. Results go back in an
//! `ipython` turn, which the template writes for a `tool` message. The
//! template takes one call per assistant turn, so a turn with several is
//! written as several turns.

use serde_json::Value;

use super::grammar::ToolRules;
use super::{Calls, Format, Ids, ModelFamily, Syntax, json, messages};
use hearth_core::chat::{ChatMessage, ToolSpec};

const PYTHON_TAG: &str = "<|python_tag|>";

pub struct Llama3;

impl Format for Llama3 {
    fn family(&self) -> ModelFamily {
        ModelFamily::Llama3
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: None,
            calls: &[PYTHON_TAG],
            calls_at_start: &["{"],
            call_end: None,
            strip: &[],
            special_tokens: true,
        }
    }

    fn grammar(&self, tools: &ToolRules, _most: usize) -> String {
        let call = tools.alternatives(|name, args| {
            format!(
                r#""\"name\"" space ":" space "\"{name}\"" space "," space ( "\"parameters\"" | "\"arguments\"" ) space ":" space {args}"#
            )
        });
        format!(
            "root ::= \"{PYTHON_TAG}\"? \"{{\" space ( \"\\\"type\\\"\" space \":\" space \"\\\"function\\\"\" space \",\" space )? {call} space \"}}\"\n"
        )
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let mut out = Calls::default();
        let mut rest = section.trim_start();
        rest = rest.strip_prefix(PYTHON_TAG).unwrap_or(rest);
        loop {
            rest = rest.trim_start().trim_start_matches([';', ',']);
            if rest.trim().is_empty() {
                break;
            }
            if !rest.trim_start().starts_with('{') {
                out.text = rest.trim().to_string();
                break;
            }
            let before = out.calls.len() + out.malformed.len();
            rest = json::call_list(rest, tools, &mut || self.new_id(ids), &mut out);
            if out.calls.len() + out.malformed.len() == before {
                break;
            }
        }
        out
    }

    fn messages(&self, messages: &[ChatMessage]) -> Vec<Value> {
        messages::standard(&messages::one_call_per_turn(messages), &|id| id.to_string())
    }
}
