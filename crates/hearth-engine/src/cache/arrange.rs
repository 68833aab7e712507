//! Carries out a [`Plan`] on a llama.cpp sequence.
//!
//! The fills are read first, after the old sequence. Then every run and
//! fill moves past all of it, so none lands on cells still waiting to move;
//! what stayed behind is removed, and everything comes down together.
//! llama.cpp rotates each moved key once, by the sum of its shifts, at the
//! next decode.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use super::reuse::Plan;

/// Leaves sequence `seq`, which holds `n_cached` tokens, holding the first
/// `plan.covered()` tokens of `prompt`; false when llama.cpp refused a step
/// (the sequence is then in no known state and must be cleared).
pub fn arrange(
    ctx: &mut LlamaContext<'_>,
    seq: usize,
    plan: &Plan,
    prompt: &[LlamaToken],
    n_cached: usize,
    n_batch: usize,
) -> bool {
    let id = seq as i32;
    if plan.moves.is_empty() {
        return ctx
            .clear_kv_cache_seq(Some(seq as u32), Some(plan.prefix as u32), None)
            .unwrap_or(false);
    }
    // Where each fill is read, after the old sequence.
    let mut fills = Vec::with_capacity(plan.fills.len());
    let mut end = n_cached;
    for fill in &plan.fills {
        fills.push((end, fill.start, fill.len()));
        end += fill.len();
    }
    let tokens: Vec<LlamaToken> = plan
        .fills
        .iter()
        .flat_map(|f| prompt[f.clone()].iter().copied())
        .collect();
    if !read(ctx, id, &tokens, n_cached, n_batch) {
        return false;
    }
    let park = end;
    let runs = plan.moves.iter().map(|m| (m.from, m.to, m.len));
    for (from, to, len) in fills.into_iter().chain(runs) {
        if !shift(
            ctx,
            id,
            from,
            Some(from + len),
            (park + to) as i64 - from as i64,
        ) {
            return false;
        }
    }
    ctx.clear_kv_cache_seq(
        Some(seq as u32),
        Some(plan.prefix as u32),
        Some(park as u32),
    )
    .unwrap_or(false)
        && shift(ctx, id, park, None, -(park as i64))
}

/// Decodes `tokens` at the end of sequence `id`, from position `at`.
fn read(
    ctx: &mut LlamaContext<'_>,
    id: i32,
    tokens: &[LlamaToken],
    at: usize,
    n_batch: usize,
) -> bool {
    let mut batch = LlamaBatch::new(n_batch.max(1), 1);
    for (n, chunk) in tokens.chunks(n_batch.max(1)).enumerate() {
        batch.clear();
        for (i, &token) in chunk.iter().enumerate() {
            let pos = at + n * n_batch.max(1) + i;
            if batch.add(token, pos as i32, &[id], false).is_err() {
                return false;
            }
        }
        if let Err(e) = ctx.decode(&mut batch) {
            tracing::debug!("reading the tokens between moved runs failed: {e}");
            return false;
        }
    }
    true
}

/// Adds `delta` to the positions of sequence `id` in `[from, to)`.
fn shift(ctx: &mut LlamaContext<'_>, id: i32, from: usize, to: Option<usize>, delta: i64) -> bool {
    let (Ok(from), Ok(to), Ok(delta)) = (
        u32::try_from(from),
        to.map(u32::try_from).transpose(),
        i32::try_from(delta),
    ) else {
        return false;
    };
    ctx.kv_cache_seq_add(id, Some(from), to, delta).is_ok()
}
