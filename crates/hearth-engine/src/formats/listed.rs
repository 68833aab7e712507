//! Families that write a JSON list of `{"name", "arguments"}` objects after
//! a marker of their own: Phi-4-mini (`<|tool_call|>[…]<|/tool_call|>`),
//! Granite 3.x (`<|tool_call|>[…]` to the end of the reply, the answer
//! possibly in `<response>`), Nemotron (`<TOOLCALL>[…]</TOOLCALL>`).

use super::grammar::{ITEM, ToolRules, repeated};
use super::{Calls, Format, Ids, ModelFamily, Syntax, json};
use hearth_core::chat::ToolSpec;

pub struct Listed {
    family: ModelFamily,
    /// The one marker that opens a section.
    open: &'static [&'static str],
    close: Option<&'static str>,
    reasoning: Option<(&'static str, &'static str)>,
    strip: &'static [&'static str],
}

pub const PHI4: Listed = Listed {
    family: ModelFamily::Phi4,
    open: &["<|tool_call|>"],
    close: Some("<|/tool_call|>"),
    reasoning: None,
    strip: &[],
};

pub const GRANITE: Listed = Listed {
    family: ModelFamily::Granite,
    open: &["<|tool_call|>"],
    close: None,
    reasoning: Some(("<think>", "</think>")),
    strip: &["<response>", "</response>"],
};

pub const NEMOTRON: Listed = Listed {
    family: ModelFamily::Nemotron,
    open: &["<TOOLCALL>"],
    close: Some("</TOOLCALL>"),
    reasoning: Some(("<think>", "</think>")),
    strip: &[],
};

impl Format for Listed {
    fn family(&self) -> ModelFamily {
        self.family
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: self.reasoning,
            calls: self.open,
            calls_at_start: &[],
            call_end: self.close,
            strip: self.strip,
            special_tokens: true,
        }
    }

    fn grammar(&self, tools: &ToolRules, most: usize) -> String {
        let call = tools.json_object("name", "arguments");
        let close = self
            .close
            .map(|c| format!(" space \"{c}\""))
            .unwrap_or_default();
        format!(
            "root ::= \"{}\" space \"[\" space {} space \"]\"{close}\n{ITEM} ::= {call}\n",
            self.open[0],
            repeated(ITEM, "space \",\" space", most)
        )
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let body = section.strip_prefix(self.open[0]).unwrap_or(section);
        let body = match self.close {
            Some(close) => body.strip_suffix(close).unwrap_or(body),
            None => body,
        };
        let mut out = Calls::default();
        let rest = json::call_list(body, tools, &mut || self.new_id(ids), &mut out);
        if !rest.trim().is_empty() && out.malformed.is_empty() {
            out.text = rest.trim().to_string();
        }
        out
    }
}
