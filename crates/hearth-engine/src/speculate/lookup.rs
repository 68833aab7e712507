//! Prompt lookup: the draft is what followed the last time the sequence
//! ended as it ends now.
//!
//! A reply that quotes its prompt (a tool result, a file it edits, an
//! earlier answer) repeats runs of tokens the sequence already holds. The
//! longest n-gram at the end of the sequence (from `MAX_NGRAM` tokens down
//! to `MIN_NGRAM`) is looked up in what came before, most recent first;
//! the tokens that followed it are the draft. It needs no second model,
//! and where nothing matches it drafts nothing and costs nothing.

use llama_cpp_2::token::LlamaToken;

/// Longest n-gram looked up.
const MAX_NGRAM: usize = 4;
/// Shortest: one or two tokens match too often in chat to be worth
/// checking (measured with `hearth bench --speculative`: two-token matches
/// were kept 17% of the time in chat, and drafting made it slower).
const MIN_NGRAM: usize = 3;

/// Up to `most` tokens that followed the latest earlier occurrence of the
/// longest n-gram `history` ends with.
pub(super) fn draft(history: &[LlamaToken], most: usize) -> Vec<LlamaToken> {
    let len = history.len();
    if most == 0 {
        return Vec::new();
    }
    for n in (MIN_NGRAM..=MAX_NGRAM).rev() {
        if len <= n {
            continue;
        }
        let tail = &history[len - n..];
        // Every start before the tail's own, latest first.
        let found = (0..len - n).rev().find(|&i| &history[i..i + n] == tail);
        if let Some(i) = found {
            let from = i + n;
            let to = (from + most).min(len);
            if from < to {
                return history[from..to].to_vec();
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[i32]) -> Vec<LlamaToken> {
        v.iter().map(|&x| LlamaToken(x)).collect()
    }

    #[test]
    fn the_tokens_after_the_latest_match_are_drafted() {
        // "1 2 3 4 5 … 1 2 3" → "4 5"
        let h = t(&[9, 1, 2, 3, 4, 5, 8, 7, 1, 2, 3]);
        assert_eq!(draft(&h, 2), t(&[4, 5]));
        assert_eq!(draft(&h, 10), t(&[4, 5, 8, 7, 1, 2, 3]));
    }

    #[test]
    fn the_longest_ngram_wins_over_a_later_shorter_one() {
        // "2 3 4" last occurs before 6, but "1 2 3 4" only before 9.
        let h = t(&[1, 2, 3, 4, 9, 0, 2, 3, 4, 6, 0, 1, 2, 3, 4]);
        assert_eq!(draft(&h, 1), t(&[9]));
        // Without the longer match, the later trigram's follower.
        let h = t(&[7, 2, 3, 4, 9, 0, 2, 3, 4, 6, 0, 5, 2, 3, 4]);
        assert_eq!(draft(&h, 1), t(&[6]));
    }

    #[test]
    fn no_match_or_no_room_drafts_nothing() {
        assert!(draft(&t(&[1, 2, 3, 4, 5, 6]), 4).is_empty(), "no repeat");
        assert!(draft(&t(&[1, 2, 1]), 4).is_empty(), "one token is no match");
        assert!(
            draft(&t(&[1, 2, 9, 1, 2]), 4).is_empty(),
            "two tokens are too common to be worth a check"
        );
        assert!(draft(&t(&[1, 2, 3, 1, 2]), 0).is_empty(), "no room");
        assert!(draft(&[], 4).is_empty());
        // The tail matching only itself drafts nothing.
        assert!(draft(&t(&[5, 5]), 4).is_empty());
    }

    #[test]
    fn a_repeated_token_run_drafts_its_continuation() {
        let h = t(&[5, 5, 5, 5]);
        // "5 5 5" occurs at 0 (before the tail's own start at 1): then 5.
        assert_eq!(draft(&h, 3), t(&[5]));
    }
}
