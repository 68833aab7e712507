//! The llama.cpp sampler chain for one request.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::formats::{self, Format};
use hearth_core::chat::{ProviderError, ReplyFormat, SamplingParams, ToolChoice, ToolSpec};

/// Picks the next token.
pub enum Picker {
    /// Plain greedy decoding: the highest logit, read straight from the
    /// context. Same result as llama.cpp's greedy sampler without building a
    /// candidate array over the whole vocabulary for every token.
    Argmax,
    Chain(Box<LlamaSampler>),
}

impl Picker {
    /// Greedy requests without tools or penalties take the argmax path.
    pub fn new(
        model: &LlamaModel,
        params: &SamplingParams,
        tools: &[ToolSpec],
        choice: ToolChoice,
        format: &dyn Format,
    ) -> Result<Self, ProviderError> {
        let plain = params.repeat_penalty == 1.0
            && params.frequency_penalty == 0.0
            && params.presence_penalty == 0.0
            && params.format == ReplyFormat::Text;
        if params.temperature <= 0.0 && tools.is_empty() && plain {
            check(params)?;
            return Ok(Self::Argmax);
        }
        chain(model, params, tools, choice, format).map(|c| Self::Chain(Box::new(c)))
    }

    /// The next token from the logits at batch index `idx`. A chain also
    /// accepts the token into its state (grammar included): never accept it
    /// again.
    pub fn pick(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> LlamaToken {
        match self {
            Self::Argmax => {
                let logits = ctx.get_logits_ith(idx);
                let mut best = 0;
                for (i, &l) in logits.iter().enumerate() {
                    if l > logits[best] {
                        best = i;
                    }
                }
                LlamaToken(best as i32)
            }
            Self::Chain(sampler) => sampler.sample(ctx, idx),
        }
    }
}

/// Builds the chain: the tool-call grammar of the model's family (when
/// tools are offered; lazy, woken by the family's call marker, unless a
/// call is required) or the reply format's grammar, the penalties, then
/// greedy at temperature 0, else top-k → top-p → min-p → temperature → a
/// seeded draw.
pub fn chain(
    model: &LlamaModel,
    params: &SamplingParams,
    tools: &[ToolSpec],
    choice: ToolChoice,
    format: &dyn Format,
) -> Result<LlamaSampler, ProviderError> {
    check(params)?;
    let mut samplers = Vec::new();
    if !tools.is_empty() {
        let grammar = formats::call_grammar(format, tools)?;
        let sampler = match choice {
            ToolChoice::Required => LlamaSampler::grammar(model, &grammar, "root"),
            _ => LlamaSampler::grammar_lazy_patterns(
                model,
                &grammar,
                "root",
                &format.triggers(),
                &[],
            ),
        }
        .map_err(|e| {
            ProviderError::InvalidRequest(format!("tool grammar rejected by llama.cpp: {e}"))
        })?;
        samplers.push(sampler);
    } else if let Some(grammar) = format_grammar(&params.format)? {
        let sampler = LlamaSampler::grammar(model, &grammar, "root").map_err(|e| {
            ProviderError::InvalidRequest(format!(
                "response_format: llama.cpp refused its grammar: {e}"
            ))
        })?;
        samplers.push(sampler);
    }
    if params.repeat_penalty != 1.0
        || params.frequency_penalty != 0.0
        || params.presence_penalty != 0.0
    {
        samplers.push(LlamaSampler::penalties(
            model.n_vocab(),
            64,
            params.repeat_penalty,
            params.frequency_penalty,
            params.presence_penalty,
        ));
    }
    if params.temperature <= 0.0 {
        samplers.push(LlamaSampler::greedy());
    } else {
        if params.top_k > 0 {
            samplers.push(LlamaSampler::top_k(params.top_k.min(i32::MAX as u32) as i32));
        }
        if params.top_p < 1.0 {
            samplers.push(LlamaSampler::top_p(params.top_p, 1));
        }
        if params.min_p > 0.0 {
            samplers.push(LlamaSampler::min_p(params.min_p, 1));
        }
        samplers.push(LlamaSampler::temp(params.temperature));
        samplers.push(LlamaSampler::dist(params.seed.unwrap_or_else(random_seed)));
    }
    Ok(LlamaSampler::chain_simple(samplers))
}

/// The grammar of a reply format; `None` for free text.
fn format_grammar(format: &ReplyFormat) -> Result<Option<String>, ProviderError> {
    let schema = match format {
        ReplyFormat::Text => return Ok(None),
        ReplyFormat::JsonObject => serde_json::json!({"type": "object"}),
        ReplyFormat::JsonSchema(schema) => schema.clone(),
    };
    llama_cpp_2::json_schema_to_grammar(&schema.to_string())
        .map(Some)
        .map_err(|e| {
            ProviderError::InvalidRequest(format!(
                "response_format: the JSON schema cannot be turned into a grammar: {e}"
            ))
        })
}

/// Sampling values that llama.cpp would misbehave on are refused here.
fn check(p: &SamplingParams) -> Result<(), ProviderError> {
    let bad = |what: &str| Err(ProviderError::InvalidRequest(format!("sampling: {what}")));
    if !(p.temperature.is_finite() && p.temperature >= 0.0) {
        return bad("temperature must be 0 or more");
    }
    if !(p.top_p.is_finite() && (0.0..=1.0).contains(&p.top_p)) {
        return bad("top_p must be within 0..=1");
    }
    if !(p.min_p.is_finite() && (0.0..=1.0).contains(&p.min_p)) {
        return bad("min_p must be within 0..=1");
    }
    if !(p.repeat_penalty.is_finite() && p.repeat_penalty > 0.0) {
        return bad("repeat_penalty must be above 0");
    }
    for (name, value) in [
        ("frequency_penalty", p.frequency_penalty),
        ("presence_penalty", p.presence_penalty),
    ] {
        if !(value.is_finite() && (-2.0..=2.0).contains(&value)) {
            return bad(&format!("{name} must be within -2..=2"));
        }
    }
    if p.max_tokens == 0 {
        return bad("max_tokens must be at least 1");
    }
    Ok(())
}

fn random_seed() -> u32 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) as u32
}

/// Whether `format`'s call grammar for `tools` takes `text` whole: each of
/// its tokens allowed in turn, and the end of the reply allowed after the
/// last. For tests and `hearth doctor`; nothing is decoded.
pub fn grammar_accepts(
    model: &LlamaModel,
    format: &dyn Format,
    tools: &[ToolSpec],
    text: &str,
) -> Result<bool, ProviderError> {
    use llama_cpp_2::token::data::LlamaTokenData;
    use llama_cpp_2::token::data_array::LlamaTokenDataArray;

    let grammar = formats::call_grammar(format, tools)?;
    let mut sampler = LlamaSampler::grammar(model, &grammar, "root").map_err(|e| {
        ProviderError::InvalidRequest(format!("tool grammar rejected by llama.cpp: {e}"))
    })?;
    let allowed = |sampler: &mut LlamaSampler, token: LlamaToken| {
        let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 1.0)], false);
        sampler.apply(&mut one);
        one.data[0].logit().is_finite()
    };
    let vocab = model.vocab();
    for token in vocab.tokenize(text.as_bytes(), false, true) {
        if !allowed(&mut sampler, token) {
            return Ok(false);
        }
        sampler.accept(token);
    }
    Ok(allowed(&mut sampler, vocab.eos()))
}
