//! Continuous batching: every reply in flight advances in one decode.
//!
//! Each step puts the next token of every generating reply into one batch
//! (a reply's first token, its end-of-turn token and a closed reasoning's
//! forced tokens are just more tokens to feed), then fills what room is
//! left with the prompts still being read, interactive before background,
//! oldest first. One `llama_decode` serves them all: each conversation has
//! its own KV sequence in the one context, so batching costs no memory. A
//! request that arrives joins at the next step; a reply that ends (or is
//! cancelled) leaves at once, and the others carry on unchanged.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use super::cache::SeqCache;
use super::reply::{Reply, Status};
use super::speculate::Drafter;
use super::vision::{Vision, is_stand_in};
use hearth_core::chat::{Priority, ProviderError};

pub(super) struct Batcher<'m> {
    /// Replies in flight, in the order they were admitted.
    active: Vec<Reply<'m>>,
    batch: LlamaBatch<'static>,
    n_batch: usize,
    /// Most prompt tokens of one reply per step.
    prompt_chunk: usize,
    /// Where drafts of generating replies come from (see
    /// [`super::speculate`]).
    drafter: Drafter<'m>,
}

/// What one reply put into the batch.
struct Share {
    reply: usize,
    tokens: usize,
    /// The batch index of its logits, when it asked for them.
    logits: Option<i32>,
    /// Tokens drafted after its own, each with logits, in the batch
    /// positions after `logits`.
    draft: Vec<LlamaToken>,
}

impl<'m> Batcher<'m> {
    pub(super) fn new(n_batch: usize, prompt_chunk: usize) -> Self {
        let n_batch = n_batch.max(1);
        Self {
            active: Vec::new(),
            batch: LlamaBatch::new(n_batch, 1),
            n_batch,
            prompt_chunk: prompt_chunk.max(1),
            drafter: Drafter::Off,
        }
    }

    /// Drafts generating replies' next tokens with `drafter`.
    pub(super) fn with_drafter(mut self, drafter: Drafter<'m>) -> Self {
        self.drafter = drafter;
        self
    }

    pub(super) fn is_empty(&self) -> bool {
        self.active.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.active.len()
    }

    /// The sequences of the replies in flight.
    pub(super) fn busy(&self) -> Vec<usize> {
        self.active.iter().map(Reply::seq).collect()
    }

    /// The whole prompts of the replies still reading theirs: what their
    /// sequences hold, then what is still to be read.
    pub(super) fn reading(&self, cache: &mut SeqCache) -> Vec<Vec<LlamaToken>> {
        self.active
            .iter()
            .filter(|r| r.is_reading())
            .map(|r| {
                let mut prompt = cache.tokens_mut(r.seq()).clone();
                prompt.extend_from_slice(r.pending());
                prompt
            })
            .collect()
    }

    /// Whether a reply of `conversation` is in flight (its sequence can
    /// take only one reply at a time).
    pub(super) fn serves(&self, conversation: &str) -> bool {
        self.active.iter().any(|r| r.conversation() == conversation)
    }

    pub(super) fn add(&mut self, reply: Reply<'m>) {
        self.active.push(reply);
    }

    /// One decode for every reply in flight.
    pub(super) fn step(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        cache: &mut SeqCache,
        vision: Option<&mut Vision>,
    ) {
        self.active
            .retain_mut(|r| r.check_cancelled() == Status::Running);
        if let Some(vision) = vision {
            self.show_pictures(ctx, cache, vision);
        }
        let shares = self.fill(cache);
        if shares.is_empty() {
            return;
        }
        let mut done = vec![false; self.active.len()];
        if let Err(e) = ctx.decode(&mut self.batch) {
            // The sequences may hold part of the batch: forget them all.
            let error = ProviderError::Failed(format!("llama.cpp decode failed: {e}"));
            for share in &shares {
                let reply = &mut self.active[share.reply];
                cache.forget(ctx, reply.seq());
                done[share.reply] = reply.fail(error.clone()) == Status::Done;
            }
        } else {
            for share in &shares {
                let reply = &mut self.active[share.reply];
                let fed = &reply.pending()[..share.tokens];
                cache.tokens_mut(reply.seq()).extend_from_slice(fed);
                cache.checkpoint(ctx, reply.seq());
                let mut status = reply.fed(share.tokens);
                if let (Status::Running, Some(idx)) = (status, share.logits) {
                    status = reply.on_logits(ctx, idx);
                    if !share.draft.is_empty() {
                        status = check_draft(ctx, cache, reply, &share.draft, (idx, status));
                    }
                }
                done[share.reply] = status == Status::Done;
            }
        }
        let mut done = done.into_iter();
        self.active.retain(|_| !done.next().unwrap_or(false));
    }

    /// Decodes the pictures that come next in the prompts being read, each
    /// in a decode of its own (its embeddings, not tokens).
    fn show_pictures(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        cache: &mut SeqCache,
        vision: &mut Vision,
    ) {
        let n_batch = self.n_batch;
        self.active.retain_mut(|reply| {
            let seq = reply.seq();
            loop {
                let at = cache.tokens_mut(seq).len();
                let Some(picture) = reply.picture_at(at) else {
                    if reply.pending().first().is_some_and(|&t| is_stand_in(t)) {
                        // Never fed as a token: llama.cpp would read past its vocabulary.
                        cache.forget(ctx, seq);
                        let lost =
                            ProviderError::Failed("an image's place in the prompt was lost".into());
                        return reply.fail(lost) != Status::Done;
                    }
                    return true;
                };
                let started = std::time::Instant::now();
                if let Err(e) = vision.show(ctx, picture, seq, n_batch) {
                    cache.forget(ctx, seq);
                    return reply.fail(e) != Status::Done;
                }
                let run = picture.run.clone();
                tracing::debug!(
                    seq,
                    at,
                    tokens = run.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "picture decoded"
                );
                cache.tokens_mut(seq).extend_from_slice(&run);
                reply.shown(at);
            }
        });
    }

    /// Builds the batch: generating replies' tokens first, then prompts in
    /// order of priority and age, each as much as fits.
    fn fill(&mut self, cache: &mut SeqCache) -> Vec<Share> {
        let mut order: Vec<usize> = (0..self.active.len()).collect();
        // Stable: admission order within a rank.
        order.sort_by_key(|&i| {
            let r = &self.active[i];
            (r.is_reading(), r.priority() != Priority::Interactive)
        });
        self.batch.clear();
        let mut shares = Vec::new();
        let mut room = self.n_batch;
        for i in order {
            let reply = &self.active[i];
            let pending = reply.pending();
            let most = if reply.is_reading() {
                self.prompt_chunk
            } else {
                room
            };
            let seq = reply.seq();
            let start = cache.tokens_mut(seq).len();
            // A picture is never put in a batch (see `show_pictures`).
            let n = pending
                .len()
                .min(room)
                .min(most)
                .min(reply.text_from(start));
            if n == 0 {
                continue;
            }
            let wants = n == pending.len() && reply.wants_logits();
            let draft = if wants && reply.is_generating() {
                let room = (room - n).min(reply.draft_room());
                self.drafter
                    .draft(seq, cache.tokens_mut(seq), pending, room)
            } else {
                Vec::new()
            };
            for (k, &token) in pending[..n].iter().enumerate() {
                let logits = wants && k + 1 == n;
                // `room` keeps the batch within the `n_batch` it holds.
                if let Err(e) = self
                    .batch
                    .add(token, (start + k) as i32, &[seq as i32], logits)
                {
                    tracing::error!("batch refused a token ({e}); the rest waits a step");
                    if k > 0 {
                        shares.push(Share {
                            reply: i,
                            tokens: k,
                            logits: None,
                            draft: Vec::new(),
                        });
                    }
                    return shares;
                }
            }
            room -= n;
            let logits = wants.then(|| self.batch.n_tokens() - 1);
            let draft = self.add_draft(draft, start + n, seq);
            room -= draft.len();
            shares.push(Share {
                reply: i,
                tokens: n,
                logits,
                draft,
            });
        }
        shares
    }

    /// Puts as much of `draft` as the batch takes after a reply's token, at
    /// positions from `pos` on, each with logits; returns what went in.
    fn add_draft(&mut self, mut draft: Vec<LlamaToken>, pos: usize, seq: usize) -> Vec<LlamaToken> {
        for (k, &token) in draft.iter().enumerate() {
            if self
                .batch
                .add(token, (pos + k) as i32, &[seq as i32], true)
                .is_err()
            {
                draft.truncate(k);
                break;
            }
        }
        draft
    }
}

/// After a reply picked from the logits at `idx` (leaving it `status`):
/// keeps each drafted token it would have picked anyway, picking the next
/// from that token's logits, until one differs; the rest of the draft
/// leaves the KV cache.
fn check_draft(
    ctx: &mut LlamaContext<'_>,
    cache: &mut SeqCache,
    reply: &mut Reply<'_>,
    draft: &[LlamaToken],
    (idx, mut status): (i32, Status),
) -> Status {
    reply.drafted(draft.len());
    let seq = reply.seq();
    let mut accepted = 0;
    for (k, &token) in draft.iter().enumerate() {
        if status != Status::Running || reply.pending() != [token] {
            break;
        }
        accepted += 1;
        cache.tokens_mut(seq).push(token);
        status = reply.draft_accepted();
        if status == Status::Running {
            status = reply.on_logits(ctx, idx + 1 + k as i32);
        }
    }
    reply.draft_checked(draft.len(), accepted);
    let kept = cache.tokens_mut(seq).len();
    let dropped = ctx.kv_cache_seq_pos_max(seq as i32) < kept as i32
        || ctx
            .clear_kv_cache_seq(Some(seq as u32), Some(kept as u32), None)
            .unwrap_or(false);
    // Checked, not assumed: a rejected token left in the sequence would be
    // attended to by every later one.
    if !dropped || ctx.kv_cache_seq_pos_max(seq as i32) >= kept as i32 {
        // The sequence would hold tokens the reply did not choose.
        cache.forget(ctx, seq);
        if status == Status::Done {
            return status;
        }
        let e = ProviderError::Failed("llama.cpp refused to drop a rejected draft".into());
        return reply.fail(e);
    }
    status
}
