//! The llama.cpp sampler chain for one request.

use llama_cpp_2::sampling::LlamaSampler;

use crate::providers::SamplingParams;

/// Builds the chain: repeat penalty, then greedy at temperature 0, else
/// top-k → top-p → min-p → temperature → a seeded draw.
pub fn chain(params: &SamplingParams, n_vocab: i32) -> LlamaSampler {
    let mut samplers = Vec::new();
    if params.repeat_penalty != 1.0 {
        samplers.push(LlamaSampler::penalties(
            n_vocab,
            64,
            params.repeat_penalty,
            0.0,
            0.0,
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
        let seed = params.seed.unwrap_or_else(random_seed);
        samplers.push(LlamaSampler::dist(seed));
    }
    LlamaSampler::chain_simple(samplers)
}

fn random_seed() -> u32 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) as u32
}
