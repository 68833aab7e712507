//! Command R7B: `<|START_THINKING|>plan<|END_THINKING|>` then
//! `<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "NAME",
//! "parameters": {…}}]<|END_ACTION|>`; an answer comes wrapped in
//! `<|START_RESPONSE|>…<|END_RESPONSE|>`. The template numbers the calls
//! itself from their ids.

use super::grammar::{ITEM, ToolRules, repeated};
use super::{Calls, Format, Ids, ModelFamily, Syntax, json};
use hearth_core::chat::ToolSpec;

const ACTION: &str = "<|START_ACTION|>";
const END_ACTION: &str = "<|END_ACTION|>";

pub struct CommandR;

impl Format for CommandR {
    fn family(&self) -> ModelFamily {
        ModelFamily::CommandR
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: Some(("<|START_THINKING|>", "<|END_THINKING|>")),
            calls: &[ACTION],
            calls_at_start: &[],
            call_end: Some(END_ACTION),
            strip: &["<|START_RESPONSE|>", "<|END_RESPONSE|>"],
            special_tokens: true,
        }
    }

    fn grammar(&self, tools: &ToolRules, most: usize) -> String {
        let call = tools.alternatives(|name, args| {
            format!(
                r#""{{" space "\"tool_call_id\"" space ":" space "\"" [0-9]{{1,3}} "\"" space "," space "\"tool_name\"" space ":" space "\"{name}\"" space "," space "\"parameters\"" space ":" space {args} space "}}""#
            )
        });
        format!(
            "root ::= \"{ACTION}\" space \"[\" space {} space \"]\" space \"{END_ACTION}\"\n{ITEM} ::= {call}\n",
            repeated(ITEM, "space \",\" space", most)
        )
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let body = section.strip_prefix(ACTION).unwrap_or(section);
        let body = body.strip_suffix(END_ACTION).unwrap_or(body);
        let mut out = Calls::default();
        // The model's ids are its own numbering ("0", "1"); hearth's are
        // unique across the conversation.
        json::call_list(body, tools, &mut || self.new_id(ids), &mut out);
        for call in &mut out.calls {
            call.id = self.new_id(ids);
        }
        out
    }
}
