//! Prompt lookup: the draft is what followed the last time the sequence
//! ended as it ends now.
//!
//! A reply that quotes its prompt (a tool result, a file it edits, an
//! earlier answer) repeats runs of tokens the sequence already holds. Each
//! earlier place where the sequence's last `MIN_NGRAM` tokens occur is a
//! candidate; the one whose match reaches furthest back (up to
//! `LONGEST_MATCH` tokens, the latest on a tie) gives the draft: the
//! tokens that followed it. A match shorter than `MIN_MATCH` drafts
//! nothing: in chat, short runs repeat by chance and their drafts are
//! mostly wrong, while a quote soon matches far back. It needs no second
//! model, and where nothing matches it drafts nothing and costs nothing.

use llama_cpp_2::token::LlamaToken;

/// Tokens every candidate matches.
const MIN_NGRAM: usize = 3;
/// Shortest match that drafts (measured with `hearth bench
/// --speculative`, docs/PERFORMANCE.md: with 3-token matches chat kept
/// about half its drafts and was slower than plain decoding on a CPU).
const MIN_MATCH: usize = 6;
/// A match is followed back no further than this.
const LONGEST_MATCH: usize = 64;

/// Up to `most` tokens that followed the earlier place matching the end of
/// `history` furthest back.
pub(super) fn draft(history: &[LlamaToken], most: usize) -> Vec<LlamaToken> {
    draft_matching(history, most, MIN_MATCH)
}

fn draft_matching(history: &[LlamaToken], most: usize, min_match: usize) -> Vec<LlamaToken> {
    let len = history.len();
    if most == 0 || len <= MIN_NGRAM {
        return Vec::new();
    }
    let tail = &history[len - MIN_NGRAM..];
    let mut best: Option<(usize, usize)> = None; // (match length, end)
    // Every start before the tail's own, latest first.
    for i in (0..len - MIN_NGRAM).rev() {
        if &history[i..i + MIN_NGRAM] != tail {
            continue;
        }
        let end = i + MIN_NGRAM;
        let reach = LONGEST_MATCH.min(end);
        let matched = (0..reach)
            .take_while(|&k| history[end - 1 - k] == history[len - 1 - k])
            .count();
        if best.is_none_or(|(m, _)| matched > m) {
            best = Some((matched, end));
        }
    }
    match best {
        Some((matched, from)) if matched >= min_match.max(MIN_NGRAM) => {
            history[from..(from + most).min(len)].to_vec()
        }
        _ => Vec::new(),
    }
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
        assert_eq!(draft_matching(&h, 2, 3), t(&[4, 5]));
        assert_eq!(draft_matching(&h, 10, 3), t(&[4, 5, 8, 7, 1, 2, 3]));
    }

    #[test]
    fn the_longest_ngram_wins_over_a_later_shorter_one() {
        // "2 3 4" last occurs before 6, but "1 2 3 4" only before 9.
        let h = t(&[1, 2, 3, 4, 9, 0, 2, 3, 4, 6, 0, 1, 2, 3, 4]);
        assert_eq!(draft_matching(&h, 1, 3), t(&[9]));
        // Without the longer match, the later trigram's follower.
        let h = t(&[7, 2, 3, 4, 9, 0, 2, 3, 4, 6, 0, 5, 2, 3, 4]);
        assert_eq!(draft_matching(&h, 1, 3), t(&[6]));
    }

    #[test]
    fn no_match_or_no_room_drafts_nothing() {
        assert!(
            draft_matching(&t(&[1, 2, 3, 4, 5, 6]), 4, 3).is_empty(),
            "no repeat"
        );
        assert!(
            draft_matching(&t(&[1, 2, 1]), 4, 3).is_empty(),
            "one token is no match"
        );
        assert!(
            draft_matching(&t(&[1, 2, 9, 1, 2]), 4, 3).is_empty(),
            "two tokens are too common to be worth a check"
        );
        assert!(
            draft_matching(&t(&[1, 2, 3, 1, 2]), 0, 3).is_empty(),
            "no room"
        );
        assert!(draft_matching(&[], 4, 3).is_empty());
        // The tail matching only itself drafts nothing.
        assert!(draft_matching(&t(&[5, 5]), 4, 3).is_empty());
    }

    #[test]
    fn a_repeated_token_run_drafts_its_continuation() {
        let h = t(&[5, 5, 5, 5]);
        // "5 5 5" occurs at 0 (before the tail's own start at 1): then 5.
        assert_eq!(draft_matching(&h, 3, 3), t(&[5]));
    }

    #[test]
    fn a_short_chance_match_drafts_nothing_and_a_quote_does() {
        // "1 2 3" repeats by chance, after different words: no draft.
        let chance = t(&[7, 8, 9, 1, 2, 3, 4, 5, 20, 21, 22, 23, 1, 2, 3]);
        assert!(draft(&chance, 4).is_empty());
        // Positive control: the last six tokens quote what came before.
        let quote = t(&[7, 8, 9, 1, 2, 3, 4, 5, 20, 7, 8, 9, 1, 2, 3]);
        assert_eq!(draft(&quote, 3), t(&[4, 5, 20]));
    }

    #[test]
    fn the_match_reaching_furthest_back_wins_over_a_later_one() {
        // "1 2 3" follows "8 9" early (then 4) and "0 9" later (then 6).
        let h = t(&[7, 8, 9, 1, 2, 3, 4, 0, 9, 1, 2, 3, 6, 5, 7, 8, 9, 1, 2, 3]);
        assert_eq!(draft(&h, 1), t(&[4]));
    }
}
