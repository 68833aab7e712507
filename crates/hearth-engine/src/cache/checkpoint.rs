//! Checkpoints of a sliding-window sequence: its window at a few earlier
//! positions, to go back to.
//!
//! A window-size cache (`[engine] swa_full = false`) reuses the cells that
//! fall out of the window, so a sequence cut back to an earlier position
//! has lost the window before it, and the next token would attend to what
//! is left. A checkpoint is the sequence's partial state at a position: the
//! window layers' cells only (llama.cpp's `PARTIAL_ONLY`); the full-
//! attention layers keep every position anyway. When a new prompt departs
//! from the cached one behind the window, the latest checkpoint at or
//! before the departure comes back and only the tokens after it are read.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::session::LlamaStateSeqFlags;

use super::SeqCache;

/// Prompt tokens between two checkpoints.
pub const EVERY: usize = 256;

/// The window of a sequence when it held `pos` tokens.
#[derive(Debug)]
pub struct Checkpoint {
    pos: usize,
    state: Vec<u8>,
}

impl SeqCache {
    /// Takes a checkpoint of `seq` when it has grown [`EVERY`] tokens past
    /// its last one (and checkpoints are on).
    pub fn checkpoint(&mut self, ctx: &LlamaContext<'_>, seq: usize) {
        let max = self.settings.checkpoints;
        if max == 0 {
            return;
        }
        let slot = self.slots.get_mut(seq);
        let pos = slot.tokens.len();
        let last = slot.checkpoints.last().map_or(0, |c| c.pos);
        if pos < last + EVERY {
            return;
        }
        let flags = LlamaStateSeqFlags::PARTIAL_ONLY;
        let size = ctx.state_seq_get_size_ext(seq as i32, flags);
        let mut state = vec![0u8; size];
        // SAFETY: `state` has exactly the size llama.cpp reported.
        let written = unsafe { ctx.state_seq_get_data_ext(state.as_mut_ptr(), seq as i32, flags) };
        if written != size {
            return;
        }
        if slot.checkpoints.len() >= max {
            slot.checkpoints.remove(0);
        }
        tracing::trace!(seq, pos, bytes = size, "window checkpoint taken");
        slot.checkpoints.push(Checkpoint { pos, state });
    }

    /// Brings `seq` back to its latest checkpoint at or before `limit`:
    /// the sequence then holds that checkpoint's tokens. Returns how many,
    /// or `None` when there is none (or llama.cpp refused it).
    pub fn restore_checkpoint(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        seq: usize,
        limit: usize,
    ) -> Option<usize> {
        let slot = self.slots.get_mut(seq);
        slot.checkpoints.retain(|c| c.pos <= limit);
        let checkpoint = slot.checkpoints.last()?;
        let pos = checkpoint.pos;
        // The full-attention layers are cut back to `pos`; the window
        // layers take the checkpoint's cells.
        let cut = ctx
            .clear_kv_cache_seq(Some(seq as u32), Some(pos as u32), None)
            .unwrap_or(false);
        // SAFETY: the bytes were read from this very context, sequence
        // `seq`, with the same flags.
        let ok = cut
            && unsafe {
                ctx.state_seq_set_data_ext(
                    &checkpoint.state,
                    seq as i32,
                    LlamaStateSeqFlags::PARTIAL_ONLY,
                )
            };
        if !ok {
            tracing::warn!(seq, pos, "llama.cpp refused a window checkpoint");
            slot.checkpoints.clear();
            return None;
        }
        slot.tokens.truncate(pos);
        Some(pos)
    }

    /// Forgets the checkpoints of `seq` past `pos`: the tokens after it
    /// have changed.
    pub fn trim_checkpoints(&mut self, seq: usize, pos: usize) {
        self.slots.get_mut(seq).checkpoints.retain(|c| c.pos <= pos);
    }
}
