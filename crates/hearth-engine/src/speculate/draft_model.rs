//! A draft model: a small model with the target's vocabulary guesses the
//! next tokens, one decode each, and the target checks them all at once.
//!
//! The draft model has a context of its own with a sequence per slot.
//! Before each draft, a sequence is brought level with the target's (the
//! common prefix kept, the rest read anew), so a draft never needs saving:
//! after a restart or an eviction it catches up by reading the prompt.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use crate::sampling;

#[derive(Debug, thiserror::Error)]
enum DraftError {
    #[error("decode: {0}")]
    Decode(#[from] llama_cpp_2::DecodeError),
    #[error("batch: {0}")]
    Batch(#[from] llama_cpp_2::llama_batch::BatchAddError),
    #[error("the draft context refused to drop a sequence's tail")]
    Trim,
}

pub(crate) struct DraftModel<'d> {
    ctx: LlamaContext<'d>,
    /// What each sequence of the draft context holds.
    held: Vec<Vec<LlamaToken>>,
    batch: LlamaBatch<'static>,
    n_batch: usize,
    /// Positions per sequence.
    n_ctx_seq: usize,
}

/// Why a draft model cannot serve a target: what differs in their
/// vocabularies, or `None` when they match.
pub(crate) fn vocabulary_mismatch(target: &LlamaModel, draft: &LlamaModel) -> Option<String> {
    let (t, d) = (target.vocab(), draft.vocab());
    if t.n_tokens() != d.n_tokens() {
        return Some(format!(
            "{} tokens against the model's {}",
            d.n_tokens(),
            t.n_tokens()
        ));
    }
    if t.bos() != d.bos() || t.eos() != d.eos() {
        return Some("its start or end token differs".into());
    }
    let n = t.n_tokens().max(0);
    // Every token up to 4,096, then a spread of the rest.
    let step = (n / 4096).max(1) as usize;
    let sample = (0..n.min(4096)).chain((4096..n).step_by(step));
    for id in sample {
        let token = LlamaToken(id);
        if t.token_to_piece(token, true, None) != d.token_to_piece(token, true, None) {
            return Some(format!("token {id} differs"));
        }
    }
    None
}

impl<'d> DraftModel<'d> {
    pub(crate) fn new(ctx: LlamaContext<'d>, slots: usize, n_batch: usize) -> Self {
        let n_ctx_seq = ctx.n_ctx() as usize / slots.max(1);
        Self {
            ctx,
            held: vec![Vec::new(); slots.max(1)],
            batch: LlamaBatch::new(n_batch.max(1), 1),
            n_batch: n_batch.max(1),
            n_ctx_seq,
        }
    }

    /// Up to `most` tokens the draft model expects after `history` (the
    /// target sequence `seq`'s tokens). Nothing when it cannot say.
    pub(crate) fn draft(
        &mut self,
        seq: usize,
        history: &[LlamaToken],
        most: usize,
    ) -> Vec<LlamaToken> {
        if most == 0 || seq >= self.held.len() || history.len() + most > self.n_ctx_seq {
            return Vec::new();
        }
        match self.try_draft(seq, history, most) {
            Ok(draft) => draft,
            Err(e) => {
                tracing::debug!(seq, "draft model skipped a draft: {e}");
                let _ = self.ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
                self.held[seq].clear();
                Vec::new()
            }
        }
    }

    fn try_draft(
        &mut self,
        seq: usize,
        history: &[LlamaToken],
        most: usize,
    ) -> Result<Vec<LlamaToken>, DraftError> {
        let idx = self.catch_up(seq, history)?;
        let mut draft = Vec::with_capacity(most);
        let mut idx = idx;
        loop {
            let token = sampling::argmax(self.ctx.get_logits_ith(idx));
            draft.push(token);
            if draft.len() == most {
                return Ok(draft);
            }
            let pos = self.held[seq].len();
            self.batch.clear();
            self.batch.add(token, pos as i32, &[seq as i32], true)?;
            self.ctx.decode(&mut self.batch)?;
            self.held[seq].push(token);
            idx = 0;
        }
    }

    /// Makes sequence `seq` hold `history`, the last token decoded now;
    /// returns the batch index of the logits after it.
    fn catch_up(&mut self, seq: usize, history: &[LlamaToken]) -> Result<i32, DraftError> {
        let held = &mut self.held[seq];
        let mut common = held.iter().zip(history).take_while(|(a, b)| a == b).count();
        // The last token is decoded again for its logits.
        common = common.min(history.len().saturating_sub(1));
        if common < held.len() {
            if !self
                .ctx
                .clear_kv_cache_seq(Some(seq as u32), Some(common as u32), None)
                .unwrap_or(false)
            {
                return Err(DraftError::Trim);
            }
            held.truncate(common);
        }
        let mut idx = 0;
        for chunk in history[common..].chunks(self.n_batch) {
            self.batch.clear();
            let start = self.held[seq].len();
            for (k, &token) in chunk.iter().enumerate() {
                let last = start + k + 1 == history.len();
                self.batch
                    .add(token, (start + k) as i32, &[seq as i32], last)?;
            }
            self.ctx.decode(&mut self.batch)?;
            self.held[seq].extend_from_slice(chunk);
            idx = self.batch.n_tokens() - 1;
        }
        Ok(idx)
    }
}
