//! The llama.cpp sampler chain for one request.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use super::call_grammar::{self, CallGrammar, Offer};
use super::formats::{self, Format};
use super::pieces;
use hearth_core::chat::{ProviderError, ReplyFormat, SamplingParams, ToolChoice, ToolSpec};

/// Picks the next token.
pub enum Picker {
    /// Plain greedy decoding: the highest logit, read straight from the
    /// context. Same result as llama.cpp's greedy sampler without building a
    /// candidate array over the whole vocabulary for every token.
    Argmax,
    Chain {
        /// The tool-call or reply-format grammar, kept apart from the
        /// rest so that a token it would choke on can be refused.
        grammar: Option<Box<CallGrammar>>,
        rest: Box<LlamaSampler>,
    },
}

/// Picks in a row that a waking grammar may refuse before the reply ends
/// with an error (each refusal takes the best token out).
const MOST_REFUSALS: usize = 16;

impl Picker {
    /// Greedy requests without tools or penalties take the argmax path.
    pub fn new(
        model: &LlamaModel,
        params: &SamplingParams,
        tools: &[ToolSpec],
        (choice, most_calls): (ToolChoice, usize),
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
        check(params)?;
        Ok(Self::Chain {
            grammar: grammar(model, params, tools, (choice, most_calls), format)?.map(Box::new),
            rest: Box::new(chain(model, params)),
        })
    }

    /// The next token from the logits at batch index `idx`. A chain also
    /// accepts the token into its state (grammar included): never accept it
    /// again. An error ends this reply only.
    pub fn pick(
        &mut self,
        model: &LlamaModel,
        ctx: &LlamaContext<'_>,
        idx: i32,
    ) -> Result<LlamaToken, ProviderError> {
        self.pick_from(model, ctx.get_logits_ith(idx))
    }

    /// [`Self::pick`] from a row of logits, one per vocabulary entry.
    pub fn pick_from(
        &mut self,
        model: &LlamaModel,
        logits: &[f32],
    ) -> Result<LlamaToken, ProviderError> {
        let (grammar, rest) = match self {
            Self::Argmax => return Ok(argmax(logits)),
            Self::Chain { grammar, rest } => (grammar, rest),
        };
        let mut refused = Vec::new();
        while refused.len() < MOST_REFUSALS {
            let mut candidates = candidates(logits, &refused);
            rest.apply(&mut candidates);
            if let Some(g) = grammar.as_deref_mut().filter(|g| g.is_awake())
                && !chosen(&candidates).is_some_and(|t| g.allows(t.id()))
            {
                // llama.cpp's own order (common_sampler_sample): the pick
                // without the grammar stands when the grammar takes it, and
                // only otherwise is the whole vocabulary masked and picked
                // from again. Greedy picks the same token as masking first
                // would, plain sampling has the same distribution (a token the
                // grammar allows, in proportion to its probability), top-k and
                // top-p cut over the whole vocabulary as llama-server's do;
                // and the vocabulary is not matched against the grammar at
                // every step.
                candidates = self::candidates(logits, &refused);
                g.sampler_mut().apply(&mut candidates);
                rest.apply(&mut candidates);
            }
            let Some(chosen) = chosen(&candidates) else {
                return Err(ProviderError::Failed("the sampler chose no token".into()));
            };
            let token = chosen.id();
            if !chosen.logit().is_finite() || !pieces::known(model, token) {
                // Everything was masked: accepting it could abort llama.cpp.
                return Err(ProviderError::Failed(
                    "no token is left that the reply's grammar allows".into(),
                ));
            }
            let offer = match grammar.as_deref_mut() {
                Some(g) => g.offer(model, token)?,
                None => Offer::Taken,
            };
            if offer == Offer::Refused {
                refused.push(token);
                continue;
            }
            call_grammar::accept(rest, model, token)?;
            return Ok(token);
        }
        Err(ProviderError::Failed(format!(
            "the model wrote {MOST_REFUSALS} tokens in a row that carry text its call grammar cannot take after the call marker"
        )))
    }
}

/// Every token of the vocabulary with its logit, those `refused` masked.
fn candidates(logits: &[f32], refused: &[LlamaToken]) -> LlamaTokenDataArray {
    let mut candidates = LlamaTokenDataArray::from_iter(
        (0..)
            .zip(logits)
            .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i), l, 0.0)),
        false,
    );
    for &LlamaToken(i) in refused {
        candidates.data[i as usize] = LlamaTokenData::new(LlamaToken(i), f32::NEG_INFINITY, 0.0);
    }
    candidates
}

/// The candidate the sampler chain selected.
fn chosen(candidates: &LlamaTokenDataArray) -> Option<&LlamaTokenData> {
    candidates.selected.and_then(|i| candidates.data.get(i))
}

/// The token with the highest logit.
pub fn argmax(logits: &[f32]) -> LlamaToken {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    LlamaToken(best as i32)
}

/// The tool-call grammar of the model's family (when tools are offered;
/// lazy, woken by the family's call marker, unless a call is required) or
/// the reply format's grammar.
fn grammar(
    model: &LlamaModel,
    params: &SamplingParams,
    tools: &[ToolSpec],
    (choice, most_calls): (ToolChoice, usize),
    format: &dyn Format,
) -> Result<Option<CallGrammar>, ProviderError> {
    if !tools.is_empty() {
        let grammar = formats::call_grammar(format, tools, most_calls)?;
        let refused = |e| refused_tools(model, format, tools, &e);
        return Ok(Some(match choice {
            ToolChoice::Required => CallGrammar::required(
                LlamaSampler::grammar(model, &grammar, "root").map_err(refused)?,
            ),
            _ => CallGrammar::lazy(
                LlamaSampler::grammar_lazy_patterns(
                    model,
                    &grammar,
                    "root",
                    &format.triggers(),
                    &[],
                )
                .map_err(refused)?,
                &format.syntax(),
            ),
        }));
    }
    let Some(grammar) = format_grammar(&params.format)? else {
        return Ok(None);
    };
    let sampler = LlamaSampler::grammar(model, &grammar, "root").map_err(|e| {
        ProviderError::InvalidRequest(format!(
            "response_format: llama.cpp refused its grammar: {e}"
        ))
    })?;
    Ok(Some(CallGrammar::required(sampler)))
}

/// Why llama.cpp refused the call grammar of `tools`, naming the first
/// tool whose grammar it refuses alone.
fn refused_tools(
    model: &LlamaModel,
    format: &dyn Format,
    tools: &[ToolSpec],
    why: &dyn std::fmt::Display,
) -> ProviderError {
    let refused_alone = |tool: &&ToolSpec| {
        formats::call_grammar(format, std::slice::from_ref(*tool), 1)
            .is_ok_and(|grammar| LlamaSampler::grammar(model, &grammar, "root").is_err())
    };
    let which = tools.iter().find(refused_alone).map_or_else(
        || "the tools' schemas together make".to_string(),
        |tool| format!("the parameters of tool `{}` make", tool.name),
    );
    ProviderError::InvalidRequest(format!(
        "{which} a grammar llama.cpp refuses ({why}): a `$ref` loop with no value in it, \
         or more rules than its grammar takes"
    ))
}

/// The rest of the chain after the grammar: the penalties, then greedy at
/// temperature 0, else top-k → top-p → min-p → temperature → a seeded
/// draw.
fn chain(model: &LlamaModel, params: &SamplingParams) -> LlamaSampler {
    let mut samplers = Vec::new();
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
    LlamaSampler::chain_simple(samplers)
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
    (tools, most_calls): (&[ToolSpec], usize),
    text: &str,
) -> Result<bool, ProviderError> {
    let grammar = formats::call_grammar(format, tools, most_calls)?;
    let mut sampler = LlamaSampler::grammar(model, &grammar, "root")
        .map_err(|e| refused_tools(model, format, tools, &e))?;
    let vocab = model.vocab();
    for token in vocab.tokenize(text.as_bytes(), false, true) {
        if !call_grammar::allows(&mut sampler, token) {
            return Ok(false);
        }
        call_grammar::accept(&mut sampler, model, token)?;
    }
    Ok(call_grammar::allows(&mut sampler, vocab.eos()))
}
