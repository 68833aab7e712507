//! Model families: each one's way of declaring tools, writing calls,
//! getting results back and reasoning.
//!
//! The family is recognised from the chat template by the markers it uses
//! ([`detect`]), or named by `[model] tool_format`. A known family gets the
//! tools through its template (hearth's system prompt does not list them
//! again), a lazy grammar woken by its own call marker and constraining its
//! own call shape ([`grammar`]), an output splitter that reads its calls and
//! reasoning ([`splitter`], [`harmony`]), and its calls and results written
//! back in its own form ([`messages`]). [`ModelFamily::Xml`] is hearth's
//! `<tool_call>` protocol described in the system prompt: the fallback.
//!
//! One file per family; each says what its models write, after the
//! published format.

mod command_r;
mod deepseek;
pub mod detect;
mod gemma4;
mod glm;
pub mod grammar;
pub mod harmony;
mod hermes;
mod json;
mod kimi;
mod listed;
mod llama3;
pub mod messages;
mod mistral;
mod schema_refs;
pub mod splitter;

use serde_json::Value;

use grammar::ToolRules;
use hearth_core::chat::{ChatMessage, ProviderError, ToolCall, ToolSpec};
pub use hearth_core::model::ModelFamily;
pub use json::excerpt;
pub use splitter::{Piece, Splitter};

/// Where a family's output puts reasoning and calls, for the splitter.
#[derive(Debug, Clone, Copy)]
pub struct Syntax {
    /// The markers around reasoning: open, close.
    pub reasoning: Option<(&'static str, &'static str)>,
    /// Markers that open a call section anywhere in the reply.
    pub calls: &'static [&'static str],
    /// Markers that open a call section only at the start of the reply
    /// (Llama 3's bare JSON).
    pub calls_at_start: &'static [&'static str],
    /// The marker that closes a section, after which text may follow;
    /// `None`: a section runs to the end of the reply.
    pub call_end: Option<&'static str>,
    /// Wrappers around the answer, removed from it.
    pub strip: &'static [&'static str],
    /// The format's markers are special tokens: the output is read with
    /// special tokens rendered.
    pub special_tokens: bool,
}

/// What a call section held.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Calls {
    pub calls: Vec<ToolCall>,
    /// Recognisably calls that could not be read, one sentence each.
    pub malformed: Vec<String>,
    /// Text in the section that is not a call (after it, between calls).
    pub text: String,
}

/// How a family speaks. The defaults are the common case: calls and
/// results in the shape Hugging Face templates read.
pub trait Format: Send + Sync {
    fn family(&self) -> ModelFamily;

    fn syntax(&self) -> Syntax;

    /// GBNF rules for the reply's calls, rooted at `root`, over the
    /// arguments' rules in `tools` (which the caller appends): at most
    /// `most` calls where the family's format carries several in one reply
    /// (OpenAI's `parallel_tool_calls`), else one. hearth's own assistant
    /// asks for one: a small model left to list calls fills the reply with
    /// them.
    fn grammar(&self, tools: &ToolRules, most: usize) -> String;

    /// Regexes that wake the lazy grammar (llama.cpp starts it at the first
    /// group): the call markers, anywhere or at the start.
    fn triggers(&self) -> Vec<String> {
        let syntax = self.syntax();
        let anywhere = syntax
            .calls
            .iter()
            .map(|m| format!(r"[\s\S]*?({})[\s\S]*", regex::escape(m)));
        let at_start = syntax
            .calls_at_start
            .iter()
            .map(|m| format!(r"^\s*({})[\s\S]*$", regex::escape(m)));
        anywhere.chain(at_start).collect()
    }

    /// Reads one call section (its opening marker included; its closing
    /// one when it came).
    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls;

    /// The messages as the template reads them.
    fn messages(&self, messages: &[ChatMessage]) -> Vec<Value> {
        messages::standard(messages, &|id| id.to_string())
    }

    /// What ends reasoning early, when its budget is spent.
    fn close_reasoning(&self) -> Option<String> {
        self.syntax()
            .reasoning
            .map(|(_, close)| format!("{close}\n\n"))
    }

    /// A fresh call id in the family's form.
    fn new_id(&self, ids: &mut Ids) -> String {
        format!("call_{}", ids.letters(8))
    }

    /// The output splitter for one reply.
    fn splitter(&self, in_reasoning: bool, stops: Vec<String>, tools: bool) -> Splitter {
        Splitter::marked(self.syntax(), in_reasoning, stops, tools)
    }
}

/// The format of `family`.
pub fn format(family: ModelFamily) -> &'static dyn Format {
    match family {
        ModelFamily::Xml => &hermes::XML,
        ModelFamily::Hermes => &hermes::HERMES,
        ModelFamily::Llama3 => &llama3::Llama3,
        ModelFamily::Mistral => &mistral::V3,
        ModelFamily::MistralV7 => &mistral::V7,
        ModelFamily::Harmony => &harmony::Harmony,
        ModelFamily::DeepSeek => &deepseek::DeepSeek,
        ModelFamily::CommandR => &command_r::CommandR,
        ModelFamily::Phi4 => &listed::PHI4,
        ModelFamily::Granite => &listed::GRANITE,
        ModelFamily::Nemotron => &listed::NEMOTRON,
        ModelFamily::Gemma4 => &gemma4::Gemma4,
        ModelFamily::Glm => &glm::Glm,
        ModelFamily::Kimi => &kimi::Kimi,
    }
}

/// The complete grammar of a reply's calls for `tools` in `format`: at
/// most `most` of them where the format carries several.
pub fn call_grammar(
    format: &dyn Format,
    tools: &[ToolSpec],
    most: usize,
) -> Result<String, ProviderError> {
    let rules = grammar::tool_rules(tools)?;
    Ok(format!(
        "{}\n{}",
        format.grammar(&rules, most.max(1)),
        rules.rules
    ))
}

/// Fresh call ids: letters and digits from a generator seeded per reply.
#[derive(Debug)]
pub struct Ids {
    state: u64,
}

impl Ids {
    pub fn new(seed: u64) -> Self {
        Self { state: seed | 1 }
    }

    /// Seeded from the clock and the process's hasher keys.
    pub fn random() -> Self {
        use std::hash::{BuildHasher, RandomState};
        Self::new(RandomState::new().hash_one(std::time::SystemTime::now()))
    }

    /// `n` letters and digits.
    pub fn letters(&mut self, n: usize) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..n)
            .map(|_| {
                // xorshift64*
                self.state ^= self.state >> 12;
                self.state ^= self.state << 25;
                self.state ^= self.state >> 27;
                let r = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D);
                ALPHABET[(r >> 32) as usize % ALPHABET.len()] as char
            })
            .collect()
    }
}

#[cfg(test)]
mod fixtures;
