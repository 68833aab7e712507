//! GLM 4.5: `<tool_call>NAME\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>`,
//! one block per call; a value is text where the schema says string and
//! JSON otherwise. Reasoning in `<think>`.

use serde_json::Value;

use super::grammar::{ToolRules, literal};
use super::{Calls, Format, Ids, ModelFamily, Syntax, json};
use hearth_core::chat::ToolSpec;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
const KEY: (&str, &str) = ("<arg_key>", "</arg_key>");
const VALUE: (&str, &str) = ("<arg_value>", "</arg_value>");

pub struct Glm;

impl Format for Glm {
    fn family(&self) -> ModelFamily {
        ModelFamily::Glm
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: Some(("<think>", "</think>")),
            calls: &[OPEN],
            calls_at_start: &[],
            call_end: Some(CLOSE),
            strip: &[],
            special_tokens: true,
        }
    }

    fn grammar(&self, tools: &ToolRules, _most: usize) -> String {
        let calls = tools.alternatives_indexed(|i, name, _| {
            let pairs = tools.keyed(i, "", |key, kind| {
                let value = match kind {
                    Some("integer" | "number") => "\"-\"? [0-9]{1,16} ( \".\" [0-9]{1,16} )?",
                    Some("boolean") => "( \"true\" | \"false\" )",
                    _ => "[^<]{0,256}",
                };
                format!(
                    "\"{}\" {} \"{}\" \"\\n\"? \"{}\" {value} \"{}\" \"\\n\"?",
                    KEY.0,
                    literal(key),
                    KEY.1,
                    VALUE.0,
                    VALUE.1
                )
            });
            format!("\"{name}\" \"\\n\"? {pairs}")
        });
        format!("root ::= \"{OPEN}\" {calls} \"{CLOSE}\"\n")
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let mut out = Calls::default();
        let body = section.strip_prefix(OPEN).unwrap_or(section);
        let body = body.strip_suffix(CLOSE).unwrap_or(body);
        let (name, mut rest) = match body.find(KEY.0) {
            Some(at) => (body[..at].trim(), &body[at..]),
            None => (body.trim(), ""),
        };
        let schema = tools.iter().find(|t| t.name == name).map(|t| &t.parameters);
        let mut arguments = serde_json::Map::new();
        while let Some(after_key) = rest.trim_start().strip_prefix(KEY.0) {
            let Some((key, after)) = after_key.split_once(KEY.1) else {
                out.malformed
                    .push(format!("an unclosed {} in `{name}`", KEY.0));
                return out;
            };
            let Some(value_start) = after.trim_start().strip_prefix(VALUE.0) else {
                out.malformed
                    .push(format!("the argument `{key}` of `{name}` has no value"));
                return out;
            };
            let Some((value, after)) = value_start.split_once(VALUE.1) else {
                out.malformed
                    .push(format!("an unclosed {} in `{name}`", VALUE.0));
                return out;
            };
            arguments.insert(key.trim().to_string(), typed(value, key.trim(), schema));
            rest = after;
        }
        match json::checked(name, Value::Object(arguments), tools, self.new_id(ids)) {
            Ok(call) => out.calls.push(call),
            Err(e) => out.malformed.push(e.to_string()),
        }
        out
    }
}

/// A value as its schema types it: text for strings, JSON where it reads
/// as JSON, else text.
fn typed(value: &str, key: &str, schema: Option<&Value>) -> Value {
    let declared = schema
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.get(key))
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str);
    if declared == Some("string") {
        return Value::String(value.to_string());
    }
    serde_json::from_str(value.trim()).unwrap_or_else(|_| Value::String(value.to_string()))
}
