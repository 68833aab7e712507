//! Gemma 4: `<|tool_call>call:NAME{city:<|"|>Paris<|"|>,days:3}<tool_call|>`,
//! arguments in Gemma's own notation (bare keys, strings between `<|"|>`);
//! reasoning in `<|channel>thought\n…<channel|>`. Results go back inside
//! the model's turn, as `tool_responses` on the assistant message that
//! made the calls (with the answer that followed them as its content).

use serde_json::{Map, Number, Value, json};

use super::grammar::{ToolRules, literal};
use super::{Calls, Format, Ids, ModelFamily, Syntax, json as calls, messages};
use hearth_core::chat::{ChatMessage, Role, ToolSpec};

const OPEN: &str = "<|tool_call>";
const CLOSE: &str = "<tool_call|>";
const QUOTE: &str = "<|\"|>";

pub struct Gemma4;

impl Format for Gemma4 {
    fn family(&self) -> ModelFamily {
        ModelFamily::Gemma4
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: Some(("<|channel>thought", "<channel|>")),
            calls: &[OPEN],
            calls_at_start: &[],
            call_end: Some(CLOSE),
            strip: &[],
            special_tokens: true,
        }
    }

    fn grammar(&self, tools: &ToolRules, _most: usize) -> String {
        let calls = tools.alternatives_indexed(|i, name, _| {
            let pairs = tools.keyed(i, "\",\"", |key, kind| {
                let value = match kind {
                    Some("string") => "g4string",
                    Some("integer" | "number") => "g4number",
                    Some("boolean") => "( \"true\" | \"false\" )",
                    _ => "g4value",
                };
                format!("{} \":\" {value}", literal(key))
            });
            format!("\"{name}\" \"{{\" {pairs} \"}}\"")
        });
        let quote = literal(QUOTE);
        format!(
            "root ::= \"{OPEN}call:\" {calls} \"{CLOSE}\"\n\
             g4key ::= [a-zA-Z_] [a-zA-Z0-9_]{{0,63}}\n\
             g4value ::= g4string | g4number | \"true\" | \"false\" | \"null\" | \"{{\" ( g4key \":\" g4value ( \",\" g4key \":\" g4value ){{0,15}} )? \"}}\" | \"[\" ( g4value ( \",\" g4value ){{0,15}} )? \"]\"\n\
             g4string ::= {quote} [^<]{{0,256}} {quote}\n\
             g4number ::= \"-\"? [0-9]{{1,16}} ( \".\" [0-9]{{1,16}} )?\n"
        )
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let mut out = Calls::default();
        let body = section.strip_prefix(OPEN).unwrap_or(section);
        let body = body.strip_suffix(CLOSE).unwrap_or(body);
        let body = body.trim().strip_prefix("call:").unwrap_or(body.trim());
        let Some(brace) = body.find('{') else {
            out.malformed.push(format!(
                "a call without arguments in braces: {}",
                calls::excerpt(body)
            ));
            return out;
        };
        let name = body[..brace].trim();
        let mut reader = Reader {
            text: &body[brace..],
            depth: 0,
        };
        match reader.value() {
            Some(arguments @ Value::Object(_)) => {
                match calls::checked(name, arguments, tools, self.new_id(ids)) {
                    Ok(call) => out.calls.push(call),
                    Err(e) => out.malformed.push(e.to_string()),
                }
            }
            _ => out.malformed.push(format!(
                "the arguments of `{name}` cannot be read: {}",
                calls::excerpt(&body[brace..])
            )),
        }
        out
    }

    fn messages(&self, messages: &[ChatMessage]) -> Vec<Value> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < messages.len() {
            let m = &messages[i];
            i += 1;
            let mut shaped =
                messages::standard(std::slice::from_ref(m), &|id| id.to_string()).remove(0);
            if m.role != Role::Assistant || m.tool_calls.is_empty() {
                out.push(shaped);
                continue;
            }
            // The results, and the answer after them, join the turn.
            let mut responses = Vec::new();
            while let Some(result) = messages.get(i).filter(|r| r.role == Role::Tool) {
                let response = serde_json::from_str::<Value>(&result.content)
                    .unwrap_or_else(|_| json!(result.content));
                let name = result
                    .name
                    .clone()
                    .or_else(|| m.tool_calls.get(responses.len()).map(|c| c.name.clone()))
                    .unwrap_or_default();
                responses.push(json!({"name": name, "response": response}));
                i += 1;
            }
            if let Some(answer) = messages
                .get(i)
                .filter(|a| a.role == Role::Assistant && a.tool_calls.is_empty())
            {
                shaped["content"] = json!(answer.content);
                i += 1;
            }
            if !responses.is_empty() {
                shaped["tool_responses"] = Value::Array(responses);
            }
            out.push(shaped);
        }
        out
    }
}

/// How deep arguments may nest: as deep as serde_json reads JSON. A model
/// output of nothing but `{` must not run the reader out of stack.
const MAX_DEPTH: usize = 128;

/// Reads Gemma's argument notation into JSON.
struct Reader<'t> {
    text: &'t str,
    depth: usize,
}

impl Reader<'_> {
    fn value(&mut self) -> Option<Value> {
        self.depth += 1;
        let value = if self.depth > MAX_DEPTH {
            None
        } else {
            self.one()
        };
        self.depth -= 1;
        value
    }

    fn one(&mut self) -> Option<Value> {
        self.text = self.text.trim_start();
        if let Some(rest) = self.text.strip_prefix(QUOTE) {
            let end = rest.find(QUOTE)?;
            self.text = &rest[end + QUOTE.len()..];
            return Some(Value::String(rest[..end].to_string()));
        }
        if let Some(rest) = self.text.strip_prefix('{') {
            self.text = rest;
            let mut map = Map::new();
            loop {
                self.text = self.text.trim_start();
                if let Some(rest) = self.text.strip_prefix('}') {
                    self.text = rest;
                    return Some(Value::Object(map));
                }
                let colon = self.text.find(':')?;
                let key = self.text[..colon].trim().replace(QUOTE, "");
                self.text = &self.text[colon + 1..];
                map.insert(key, self.value()?);
                self.text = self.text.trim_start();
                self.text = self.text.strip_prefix(',').unwrap_or(self.text);
            }
        }
        if let Some(rest) = self.text.strip_prefix('[') {
            self.text = rest;
            let mut items = Vec::new();
            loop {
                self.text = self.text.trim_start();
                if let Some(rest) = self.text.strip_prefix(']') {
                    self.text = rest;
                    return Some(Value::Array(items));
                }
                items.push(self.value()?);
                self.text = self.text.trim_start();
                self.text = self.text.strip_prefix(',').unwrap_or(self.text);
            }
        }
        let end = self.text.find([',', '}', ']']).unwrap_or(self.text.len());
        let word = self.text[..end].trim();
        self.text = &self.text[end..];
        match word {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            "null" => Some(Value::Null),
            _ => word
                .parse::<i64>()
                .map(Value::from)
                .ok()
                .or_else(|| {
                    word.parse::<f64>()
                        .ok()
                        .and_then(Number::from_f64)
                        .map(Value::Number)
                })
                .or_else(|| (!word.is_empty()).then(|| Value::String(word.to_string()))),
        }
    }
}
