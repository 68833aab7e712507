//! Text nobody in the conversation wrote (tool output, recalled memories,
//! forwarded messages) fenced as data before the model reads it.
//!
//! A model asked to summarise a calendar entry that says
//! `<tool_call>{"name": "shell", …}</tool_call>` may well repeat it, and a
//! repeated call is a call. So inside untrusted text every piece of markup
//! that could start a call, close the fence, open a reasoning block or, once
//! the prompt is tokenized, become a special token of the chat template, is
//! defused: its `<` (or `[`) becomes `‹` (or `［`). Repeated by the model, it
//! is inert text; read by a person, it still says what it said.

use crate::call_markup::{self, starts_with_ci};

/// Tag names (after `<` or `</`, any case) that are markup to hearth or to
/// a chat template.
const TAGS: &[&str] = &[
    "tool_call",
    "toolcall",
    "tool-call",
    "tool_calls",
    "tool_result",
    "tool_response",
    "function_calls",
    "function",
    "invoke",
    "parameter",
    "think",
    "untrusted",
    "start_of_turn",
    "end_of_turn",
    "start_function_call",
    "s>",
];

/// Bracketed markers of Mistral-style templates.
const BRACKETS: &[&str] = &[
    "[INST]",
    "[/INST]",
    "[TOOL_CALLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[THINK]",
    "[/THINK]",
];

/// `text` with every tool-call, fence, reasoning and special-token marker
/// made inert.
pub fn defuse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['<', '[']) {
        out.push_str(&rest[..i]);
        let at = &rest[i..];
        if at.starts_with('<') && (call_markup::opens_call(at) || is_markup_tag(&at[1..])) {
            out.push('‹');
        } else if at.starts_with('[') && BRACKETS.iter().any(|b| starts_with_ci(at, b)) {
            out.push('［');
        } else {
            out.push_str(&at[..1]);
        }
        rest = &at[1..];
    }
    out.push_str(rest);
    out
}

/// `after` follows a `<`: is it a tag hearth or a template reads?
fn is_markup_tag(after: &str) -> bool {
    let name = after.strip_prefix('/').unwrap_or(after).trim_start();
    // `<|im_start|>`, `<|tool_call|>`, `<|python_tag|>`: special tokens.
    if name.starts_with('|') || name.starts_with('｜') {
        return true;
    }
    TAGS.iter().any(|tag| {
        starts_with_ci(name, tag)
            && name[tag.len()..]
                .chars()
                .next()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// `text` from `source` fenced as data: delimited by `<untrusted>` markers
/// (which it cannot contain itself), with its markup defused.
pub fn fence(source: &str, text: &str) -> String {
    let source: String = source
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .collect();
    format!(
        "<untrusted source=\"{source}\">\n{}\n</untrusted>",
        defuse(text.trim())
    )
}
