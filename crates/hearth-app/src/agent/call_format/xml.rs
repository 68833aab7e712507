//! Finding tool calls in the text of a local model's reply.
//!
//! Small local models write tool calls in many dialects. This parser reads
//! all the common ones and never panics, whatever the text:
//!
//! - `<tool_call>{"name": …, "arguments": …}</tool_call>`, also spelled
//!   `<toolcall>` or `<tool-call>`, closed or cut off at the end;
//! - `<invoke name="…"><parameter name="…">…</parameter></invoke>`;
//! - `<function=name>{…}</function>` (or with `<parameter=…>` tags);
//! - a fenced code block holding `{"name": …, "arguments": …}`, only where
//!   the protocol in use says so ([`Dialects::fenced_json`]): otherwise a
//!   model quoting a JSON example (or a document holding one) would call it;
//! - several calls in one reply, and arguments given as a JSON string.
//!
//! `<think>` blocks are removed (an unclosed one runs to the end) and kept as
//! reasoning. A call that is recognisably a call but cannot be read becomes a
//! `malformed` entry for the model to hear about, not a crash.

use serde_json::{Map, Value};

use crate::agent::types::{ParsedReply, ParsedToolCall};
use crate::security::call_markup::{self, starts_with_ci};

/// The openers are the fence's too (see `security::call_markup`).
const CALL_OPENERS: [&str; 3] = call_markup::TAGGED;
const CALL_CLOSERS: [&str; 3] = ["</tool_call>", "</toolcall>", "</tool-call>"];
const WRAPPERS: [&str; 4] = [
    "<function_calls>",
    "</function_calls>",
    "<tool_calls>",
    "</tool_calls>",
];

/// Which call spellings beyond the tagged ones a protocol accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dialects {
    /// A fenced code block whose JSON is a call object is a call.
    pub fenced_json: bool,
}

/// Splits a reply into text, reasoning, calls and malformed calls, under
/// hearth's XML protocol (fenced JSON is text).
pub fn parse_reply(reply: &str) -> ParsedReply {
    parse_reply_with(reply, Dialects::default())
}

/// As [`parse_reply`], accepting the spellings `dialects` adds.
pub fn parse_reply_with(reply: &str, dialects: Dialects) -> ParsedReply {
    let (visible, reasoning) = strip_think(reply);
    let mut out = ParsedReply {
        reasoning,
        ..ParsedReply::default()
    };
    let mut text = String::new();
    let mut rest = visible.as_str();
    while let Some(found) = next_call(rest, dialects) {
        text.push_str(&rest[..found.start]);
        match found.calls {
            Ok(calls) => {
                for (name, arguments) in calls {
                    let id = format!("call_{}", out.calls.len() + 1);
                    out.calls.push(ParsedToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
            }
            Err(problem) => out.malformed.push(problem),
        }
        rest = &rest[found.end..];
    }
    text.push_str(rest);
    out.text = tidy(&text);
    out
}

/// Removes `<think>…</think>` blocks; returns (visible text, reasoning).
pub fn strip_think(reply: &str) -> (String, String) {
    let mut visible = String::new();
    let mut reasoning = String::new();
    let mut rest = reply;
    // A closing tag before any opening one: the prompt opened the block.
    if let Some(close) = find_ci(rest, "</think>")
        && find_ci(rest, "<think>").is_none_or(|open| open > close)
    {
        reasoning.push_str(rest[..close].trim());
        rest = &rest[close + "</think>".len()..];
    }
    while let Some(open) = find_ci(rest, "<think>") {
        visible.push_str(&rest[..open]);
        let inner = &rest[open + "<think>".len()..];
        match find_ci(inner, "</think>") {
            Some(close) => {
                push_line(&mut reasoning, inner[..close].trim());
                rest = &inner[close + "</think>".len()..];
            }
            None => {
                push_line(&mut reasoning, inner.trim());
                rest = "";
            }
        }
    }
    visible.push_str(rest);
    (visible, reasoning)
}

type Calls = Result<Vec<(String, Value)>, String>;

/// A call found in the text: where it starts and ends, and what it says.
struct Found {
    start: usize,
    end: usize,
    calls: Calls,
}

/// The first call in `s`, skipping fenced blocks that are not calls (all
/// of them, unless `dialects` takes fenced JSON).
fn next_call(s: &str, dialects: Dialects) -> Option<Found> {
    let mut offset = 0;
    loop {
        let hay = &s[offset..];
        let candidates = [
            CALL_OPENERS.iter().filter_map(|o| find_ci(hay, o)).min(),
            find_ci(hay, call_markup::INVOKE),
            find_ci(hay, call_markup::FUNCTION),
            hay.find("```").filter(|_| dialects.fenced_json),
        ];
        let start = candidates.iter().flatten().min().copied()?;
        let at = &hay[start..];
        let found = if let Some(opener) = CALL_OPENERS.iter().find(|o| starts_with_ci(at, o)) {
            Some(tagged_call(at, opener.len()))
        } else if starts_with_ci(at, call_markup::INVOKE) {
            Some(invoke_call(at))
        } else if starts_with_ci(at, call_markup::FUNCTION) {
            Some(function_call(at))
        } else {
            fenced_call(at)
        };
        match found {
            Some((len, calls)) => {
                return Some(Found {
                    start: offset + start,
                    end: offset + start + len,
                    calls,
                });
            }
            // A fence that is not a call: keep it as text, look further.
            None => offset += start + 3,
        }
    }
}

/// `<tool_call>…</tool_call>`; returns the length consumed and the calls.
fn tagged_call(at: &str, opener_len: usize) -> (usize, Calls) {
    let body_and_rest = &at[opener_len..];
    let (body, len) = match CALL_CLOSERS
        .iter()
        .filter_map(|c| find_ci(body_and_rest, c).map(|i| (i, c.len())))
        .min()
    {
        Some((close, close_len)) => (&body_and_rest[..close], opener_len + close + close_len),
        None => (body_and_rest, at.len()),
    };
    let body = strip_fence(body.trim());
    let calls = if starts_with_ci(body, "<function=") {
        function_call(body).1
    } else if starts_with_ci(body, "<invoke") {
        invoke_call(body).1
    } else {
        json_calls(body)
    };
    (len, calls)
}

/// `<invoke name="x"><parameter name="k">v</parameter></invoke>`.
fn invoke_call(at: &str) -> (usize, Calls) {
    let (block, len) = match find_ci(at, "</invoke>") {
        Some(close) => (&at[..close], close + "</invoke>".len()),
        None => (at, at.len()),
    };
    let Some(head_end) = block.find('>') else {
        return (len, Err("an <invoke> tag is not closed with `>`".into()));
    };
    let Some(name) = attribute(&block[..head_end], "name") else {
        return (len, Err("an <invoke> tag has no name=\"…\"".into()));
    };
    let mut arguments = Map::new();
    let mut rest = &block[head_end + 1..];
    while let Some(open) = find_ci(rest, "<parameter") {
        let param = &rest[open..];
        let Some(tag_end) = param.find('>') else {
            break;
        };
        let key = attribute(&param[..tag_end], "name")
            .or_else(|| equals_name(&param[..tag_end], "<parameter="));
        let value_and_rest = &param[tag_end + 1..];
        let (value, next) = match find_ci(value_and_rest, "</parameter>") {
            Some(close) => (
                &value_and_rest[..close],
                &value_and_rest[close + "</parameter>".len()..],
            ),
            None => (value_and_rest, ""),
        };
        if let Some(key) = key {
            arguments.insert(key, loose_value(value));
        }
        rest = next;
    }
    (len, Ok(vec![(name, Value::Object(arguments))]))
}

/// `<function=name>{json}</function>` or with `<parameter=k>v</parameter>`.
fn function_call(at: &str) -> (usize, Calls) {
    let (block, len) = match find_ci(at, "</function>") {
        Some(close) => (&at[..close], close + "</function>".len()),
        None => (at, at.len()),
    };
    let after = &block["<function=".len().min(block.len())..];
    let (name, body) = match after.find('>') {
        Some(i) => (&after[..i], &after[i + 1..]),
        None => (after, ""),
    };
    let name = name
        .trim()
        .trim_matches(|c| c == '"' || c == '\'')
        .to_string();
    if name.is_empty() {
        return (len, Err("a <function=…> tag has no name".into()));
    }
    let body = body.trim();
    if find_ci(body, "<parameter").is_some() {
        let (_, calls) = invoke_call(&format!(
            "<invoke name=\"{}\">{body}</invoke>",
            name.replace('"', "")
        ));
        return (len, calls);
    }
    let arguments = if body.is_empty() {
        Ok(Value::Object(Map::new()))
    } else {
        lenient_json(body)
            .ok_or_else(|| format!("the arguments of `{name}` are not valid JSON"))
            .and_then(|v| arguments_value(&name, v))
    };
    (len, arguments.map(|a| vec![(name, a)]))
}

/// A fenced block holding a call; `None` when the block is not a call.
fn fenced_call(at: &str) -> Option<(usize, Calls)> {
    let after = &at[3..];
    let body_start = after.find('\n')? + 1;
    let close = after[body_start..].find("```")?;
    let body = &after[body_start..body_start + close];
    let value = lenient_json(body.trim())?;
    let looks_like_call = |v: &Value| {
        v.get("name").is_some_and(Value::is_string)
            && (v.get("arguments").is_some() || v.get("parameters").is_some())
    };
    let is_call = match &value {
        Value::Array(items) => !items.is_empty() && items.iter().all(looks_like_call),
        v => looks_like_call(v),
    };
    is_call.then(|| (3 + body_start + close + 3, calls_from_value(value)))
}

/// One call object or an array of them, as JSON text.
fn json_calls(body: &str) -> Calls {
    match lenient_json(body) {
        Some(value) => calls_from_value(value),
        None if body.is_empty() => Err("an empty tool call".into()),
        None => Err(format!(
            "a tool call that is not valid JSON: {}",
            excerpt(body)
        )),
    }
}

fn calls_from_value(value: Value) -> Calls {
    match value {
        Value::Array(items) => items.into_iter().map(call_from_value).collect(),
        v => call_from_value(v).map(|c| vec![c]),
    }
}

/// `{"name", "arguments"}`, also `parameters`, or OpenAI's `{"function": {…}}`.
fn call_from_value(value: Value) -> Result<(String, Value), String> {
    let Value::Object(mut map) = value else {
        return Err("a tool call must be a JSON object with \"name\" and \"arguments\"".into());
    };
    if let Some(Value::Object(function)) = map.remove("function") {
        return call_from_value(Value::Object(function));
    }
    let name = match map.remove("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => return Err("a tool call has no \"name\"".into()),
    };
    let arguments = map
        .remove("arguments")
        .or_else(|| map.remove("parameters"))
        .or_else(|| map.remove("args"))
        .unwrap_or_else(|| Value::Object(Map::new()));
    arguments_value(&name, arguments).map(|a| (name, a))
}

/// Arguments must be an object; a JSON string holding one is accepted.
fn arguments_value(name: &str, arguments: Value) -> Result<Value, String> {
    match arguments {
        Value::Object(_) => Ok(arguments),
        Value::Null => Ok(Value::Object(Map::new())),
        Value::String(s) if s.trim().is_empty() => Ok(Value::Object(Map::new())),
        Value::String(s) => match lenient_json(&s) {
            Some(v @ Value::Object(_)) => Ok(v),
            _ => Err(format!("the arguments of `{name}` must be a JSON object")),
        },
        _ => Err(format!("the arguments of `{name}` must be a JSON object")),
    }
}

/// JSON as written, else the first balanced `{…}` or `[…]` inside the text.
fn lenient_json(text: &str) -> Option<Value> {
    let text = text.trim();
    if let Ok(v) = serde_json::from_str(text) {
        return Some(v);
    }
    let start = text.find(['{', '['])?;
    let end = balanced_end(&text[start..])?;
    serde_json::from_str(&text[start..start + end]).ok()
}

/// The length of the balanced bracket group at the start of `s`.
fn balanced_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// A parameter value: JSON when it reads as JSON, else the trimmed text.
fn loose_value(text: &str) -> Value {
    let trimmed = text.trim();
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v) if !v.is_string() || trimmed.starts_with('"') => v,
        _ => Value::String(trimmed.to_string()),
    }
}

/// `key="value"` (or single quotes) inside a tag's head.
fn attribute(head: &str, key: &str) -> Option<String> {
    let at = find_ci(head, &format!("{key}="))? + key.len() + 1;
    let rest = &head[at..];
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = &rest[1..];
    let end = inner.find(quote)?;
    let value = inner[..end].trim();
    (!value.is_empty()).then(|| value.to_string())
}

/// `<parameter=key` style names.
fn equals_name(head: &str, prefix: &str) -> Option<String> {
    let rest = head
        .get(prefix.len()..)
        .filter(|_| starts_with_ci(head, prefix))?;
    let name = rest.trim().trim_matches(|c| c == '"' || c == '\'');
    (!name.is_empty()).then(|| name.to_string())
}

/// The text inside a ```json fence, if the whole body is one.
fn strip_fence(body: &str) -> &str {
    let Some(after) = body.strip_prefix("```") else {
        return body;
    };
    let Some(newline) = after.find('\n') else {
        return body;
    };
    let inner = &after[newline + 1..];
    inner.trim_end().strip_suffix("```").unwrap_or(inner).trim()
}

fn tidy(text: &str) -> String {
    let mut t = strip_echoed_results(text);
    for wrapper in WRAPPERS {
        while let Some(i) = find_ci(&t, wrapper) {
            t.replace_range(i..i + wrapper.len(), "");
        }
    }
    let mut out = String::new();
    let mut blank = 0;
    for line in t.trim().lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim().to_string()
}

/// Removes `<tool_result …>…</tool_result>` blocks a model copied from its
/// context into its reply; they are never meant for the user.
fn strip_echoed_results(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = find_ci(rest, "<tool_result") {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        rest = match find_ci(after, "</tool_result>") {
            Some(close) => &after[close + "</tool_result>".len()..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

fn push_line(buf: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !buf.is_empty() {
        buf.push('\n');
    }
    buf.push_str(text);
}

fn excerpt(text: &str) -> String {
    let cut: String = text.chars().take(80).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// Case-insensitive search for an ASCII needle; the index is a char boundary.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || h.len() < n.len() {
        return None;
    }
    (0..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests;
