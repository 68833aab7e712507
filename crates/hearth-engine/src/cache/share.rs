//! A new conversation starts from another one's prompt.
//!
//! Conversations of one front end open alike: hearth's system prompt, the
//! tools, the same first words. A conversation that has nothing cached yet
//! takes the longest common prefix of its prompt that another sequence, or
//! a state kept in RAM, already holds: that state is copied into its
//! sequence and cut back to the prefix, so only the rest is decoded (what
//! llama-server does by giving a request the slot whose prompt is most
//! alike). Copying a state costs far less per token than decoding one
//! (a memory copy against a forward pass), but it copies the whole source,
//! so a short prefix of a long conversation is not worth it: see
//! [`worth_copying`].
//!
//! Sequences of a sliding-window model hold only their window, so a cut
//! copy would miss the cells before it; such models do not share.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::session::LlamaStateSeqFlags;
use llama_cpp_2::token::LlamaToken;

use super::{SeqCache, read_state};

/// Fewest shared tokens worth a copy.
const MIN_SHARED: usize = 8;
/// A copy of `n` tokens' state costs about what decoding `n / COPY_RATIO`
/// tokens does, with a wide margin (measured: a forward pass per token is
/// hundreds of times a copy of its cells on the CPU).
const COPY_RATIO: usize = 64;

/// Where a shared prefix comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Slot(usize),
    Ram(usize),
}

/// Whether copying a `source_len`-token state to keep `shared` tokens
/// saves time.
pub fn worth_copying(shared: usize, source_len: usize) -> bool {
    shared >= MIN_SHARED && shared * COPY_RATIO >= source_len
}

/// How many leading tokens `a` and `b` share.
fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl SeqCache {
    /// How many leading tokens of `tokens` a new conversation could take
    /// from what is cached now.
    pub fn shareable(&self, tokens: &[LlamaToken]) -> usize {
        self.best_source(tokens).map_or(0, |(_, shared)| shared)
    }

    /// The sequence or RAM state sharing the longest prefix of `tokens`
    /// (all but the last) worth a copy, and how long.
    fn best_source(&self, tokens: &[LlamaToken]) -> Option<(Source, usize)> {
        let wanted = &tokens[..tokens.len().saturating_sub(1)];
        let slots = self
            .slots
            .occupied()
            .map(|i| (Source::Slot(i), &self.slots.get(i).tokens));
        let ram = self
            .ram
            .iter()
            .enumerate()
            .map(|(i, (_, saved))| (Source::Ram(i), &saved.tokens));
        slots
            .chain(ram)
            .map(|(source, held)| (source, common_prefix(held, wanted), held.len()))
            .filter(|&(_, shared, len)| worth_copying(shared, len))
            .max_by_key(|&(_, shared, _)| shared)
            .map(|(source, shared, _)| (source, shared))
    }

    /// Fills empty sequence `seq` with the longest prefix of `tokens`
    /// (leaving at least the last token to decode, whose logits are needed)
    /// that another sequence or a RAM state holds, when that is worth a
    /// copy. The sequence's token list then names the prefix. Returns how
    /// many tokens it now holds (0: nothing shared).
    pub fn share_prefix(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        seq: usize,
        tokens: &[LlamaToken],
    ) -> usize {
        if !self.slots.get(seq).tokens.is_empty() || tokens.len() < 2 {
            return 0;
        }
        let Some((source, shared)) = self.best_source(tokens) else {
            return 0;
        };
        let copied = match source {
            Source::Slot(i) => read_state(ctx, i).is_some_and(|state| set_state(ctx, seq, &state)),
            Source::Ram(i) => set_state(ctx, seq, &self.ram[i].1.state),
        };
        // Cut back to the prefix; a model whose cells cannot be cut (a
        // recurrent state) starts empty instead.
        let cut = copied
            && ctx
                .clear_kv_cache_seq(Some(seq as u32), Some(shared as u32), None)
                .unwrap_or(false);
        if !cut {
            let _ = ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
            return 0;
        }
        tracing::debug!(
            seq,
            ?source,
            shared,
            "prompt prefix copied from another sequence"
        );
        let held = &mut self.slots.get_mut(seq).tokens;
        held.clear();
        held.extend_from_slice(&tokens[..shared]);
        shared
    }
}

fn set_state(ctx: &mut LlamaContext<'_>, seq: usize, state: &[u8]) -> bool {
    // SAFETY: the bytes come from `read_state` on this very context (a
    // sequence now, or one evicted to RAM).
    unsafe { ctx.state_seq_set_data_ext(state, seq as i32, LlamaStateSeqFlags::empty()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_worth_it_for_a_real_prefix_of_a_source_not_far_longer() {
        assert!(worth_copying(8, 100));
        assert!(worth_copying(2000, 8000));
        assert!(!worth_copying(7, 7), "too few tokens to bother");
        assert!(
            !worth_copying(30, 8000),
            "30 tokens of an 8000-token conversation: the copy costs more"
        );
    }

    #[test]
    fn the_prefix_is_counted_token_by_token() {
        let t = |v: &[i32]| v.iter().map(|&x| LlamaToken(x)).collect::<Vec<_>>();
        assert_eq!(common_prefix(&t(&[1, 2, 3, 4]), &t(&[1, 2, 9])), 2);
        assert_eq!(common_prefix(&t(&[]), &t(&[1])), 0);
        assert_eq!(common_prefix(&t(&[5, 6]), &t(&[5, 6, 7])), 2);
    }
}
