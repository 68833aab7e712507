//! Hermes and Qwen (2.5, 3, QwQ): `<tool_call>\n{"name": …, "arguments":
//! {…}}\n</tool_call>`, one block per call; reasoning in `<think>…</think>`.
//! hearth's own XML protocol writes calls the same way, but describes the
//! tools in its system prompt instead of the template.

use super::grammar::ToolRules;
use super::{Calls, Format, Ids, ModelFamily, Syntax, json};
use crate::chat::ToolSpec;

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

    fn grammar(&self, tools: &ToolRules) -> String {
        format!(
            "root ::= \"{OPEN}\" \"\\n\"? {} \"\\n\"? \"{CLOSE}\"\n",
            tools.json_object("name", "arguments")
        )
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
