//! Which of a conversation's cached tokens the next prompt can keep.
//!
//! Most templates only append to a conversation, so the longest common
//! prefix of the cached tokens and the new prompt is nearly all of it. Some
//! move text between turns: Mistral Nemo writes the system text and the
//! tools into the last user turn, so on turn 2 they sit after the history
//! instead of before it, and the common prefix is one token. Like
//! llama-server's `--cache-reuse`, hearth then moves runs of cached tokens
//! to their new positions (llama.cpp re-rotates their keys) instead of
//! reading them again.
//!
//! llama.cpp only appends to a sequence at the position after its last
//! one, so what is kept must cover the new prompt from its start without a
//! hole: the plan is the common prefix, then runs of at least `min_chunk`
//! cached tokens, each taken whole from cells no other run uses. Fewer than
//! `4 * min_chunk` other tokens may fill the space before a run (Mistral's
//! `[INST]` and a short exchange before the moved tools); they are read
//! first, after the old sequence, and moved into place with the runs.
//! Shorter runs are not moved, so a prompt whose text changed is not
//! rebuilt from coincidental words. A moved run's keys and values were
//! computed after other text than the one now before it: the reuse is
//! close, not exact, and `min_chunk = 0` turns it off.

use std::collections::HashMap;
use std::hash::Hash;
use std::ops::Range;

/// Token comparisons one plan may spend before it settles for what it has.
const WORK_BUDGET: usize = 1 << 22;
/// A fill is shorter than this many times `min_chunk`.
const FILL_FACTOR: usize = 4;
/// Runs one plan may move (each move scans the sequence's cells).
const MAX_MOVES: usize = 256;

/// A run of cached tokens moved to another position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// Where the run starts among the cached tokens.
    pub from: usize,
    /// Where it starts in the new prompt.
    pub to: usize,
    pub len: usize,
}

/// What the new prompt keeps: its first `prefix` tokens where they are,
/// then `moves` and `fills` in prompt order, contiguous after the prefix,
/// each fill right before a move.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub prefix: usize,
    pub moves: Vec<Move>,
    /// Prompt ranges read before the moves, to stand between them.
    pub fills: Vec<Range<usize>>,
}

impl Plan {
    /// Tokens of the new prompt that need no decoding.
    pub fn kept(&self) -> usize {
        self.prefix + self.moves.iter().map(|m| m.len).sum::<usize>()
    }

    /// Where reading the prompt in order resumes.
    pub fn covered(&self) -> usize {
        self.kept() + self.fills.iter().map(|f| f.len()).sum::<usize>()
    }
}

/// What `prompt` keeps of `cached`. The prompt's last token is never kept:
/// it is decoded again for the logits of the reply's first token.
pub fn plan<T: Copy + Eq + Hash>(cached: &[T], prompt: &[T], min_chunk: usize) -> Plan {
    let limit = prompt.len().saturating_sub(1);
    let prefix = cached
        .iter()
        .zip(prompt)
        .take_while(|(a, b)| a == b)
        .count()
        .min(limit);
    let mut plan = Plan {
        prefix,
        ..Plan::default()
    };
    if min_chunk == 0 || prefix >= limit || prefix >= cached.len() {
        return plan;
    }
    let mut runs = Runs::new(cached, prompt, prefix, limit);
    let mut fill: Option<usize> = None;
    let mut at = prefix;
    while at < limit && plan.moves.len() < MAX_MOVES {
        match runs.longest(at) {
            Some(run) if run.len >= min_chunk => {
                if let Some(start) = fill.take() {
                    plan.fills.push(start..at);
                }
                runs.take(&run);
                plan.moves.push(run);
                at += run.len;
            }
            _ => {
                let start = *fill.get_or_insert(at);
                if at + 1 - start >= FILL_FACTOR * min_chunk {
                    break;
                }
                at += 1;
            }
        }
    }
    plan
}

/// The search for runs: cached positions by token, and which are taken.
struct Runs<'a, T> {
    cached: &'a [T],
    prompt: &'a [T],
    limit: usize,
    used: Vec<bool>,
    at: HashMap<T, Vec<usize>>,
    work: usize,
}

impl<'a, T: Copy + Eq + Hash> Runs<'a, T> {
    fn new(cached: &'a [T], prompt: &'a [T], prefix: usize, limit: usize) -> Self {
        let mut at: HashMap<T, Vec<usize>> = HashMap::new();
        for (i, t) in cached.iter().enumerate().skip(prefix) {
            at.entry(*t).or_default().push(i);
        }
        let mut used = vec![false; cached.len()];
        used[..prefix].fill(true);
        Self {
            cached,
            prompt,
            limit,
            used,
            at,
            work: WORK_BUDGET,
        }
    }

    /// The longest run of free cached cells that matches the prompt from
    /// `to`: the best found so far once the budget is spent, and `None`
    /// after that or when there is none.
    fn longest(&mut self, to: usize) -> Option<Move> {
        let mut best: Option<Move> = None;
        if self.work == 0 {
            return None;
        }
        for &from in self.at.get(&self.prompt[to])? {
            let mut len = 0;
            while to + len < self.limit
                && from + len < self.cached.len()
                && !self.used[from + len]
                && self.cached[from + len] == self.prompt[to + len]
            {
                len += 1;
            }
            if len > best.map_or(0, |b| b.len) {
                best = Some(Move { from, to, len });
            }
            self.work = self.work.saturating_sub(len + 1);
            if self.work == 0 {
                break;
            }
        }
        best
    }

    fn take(&mut self, run: &Move) {
        self.used[run.from..run.from + run.len].fill(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks what every plan must hold, and returns the tokens kept.
    fn check(cached: &[u32], prompt: &[u32], plan: &Plan, min_chunk: usize) -> usize {
        assert_eq!(cached[..plan.prefix], prompt[..plan.prefix]);
        let mut used = vec![false; cached.len()];
        let mut next = plan.prefix;
        let mut fills = plan.fills.iter().peekable();
        for m in &plan.moves {
            if let Some(fill) = fills.next_if(|f| f.start == next) {
                assert!(fill.end == m.to, "a fill stands right before a move");
                assert!(!fill.is_empty() && fill.len() < FILL_FACTOR * min_chunk);
                next = fill.end;
            }
            assert_eq!(m.to, next, "contiguous after the prefix");
            assert!(m.len >= min_chunk, "only long runs move");
            assert!(m.from >= plan.prefix, "the prefix stays where it is");
            assert_eq!(cached[m.from..m.from + m.len], prompt[m.to..m.to + m.len]);
            for u in &mut used[m.from..m.from + m.len] {
                assert!(!*u, "a cached cell is moved once");
                *u = true;
            }
            next += m.len;
        }
        assert!(fills.next().is_none(), "every fill precedes a move");
        assert_eq!(plan.covered(), next);
        assert!(
            plan.covered() < prompt.len().max(1),
            "the last token is decoded"
        );
        plan.kept()
    }

    fn span(start: u32, len: u32) -> Vec<u32> {
        (start..start + len).collect()
    }

    /// Mistral Nemo's turns 1 and 2 with its own tokenizer, where the
    /// markers are single tokens: the tools and the system text move from
    /// before the first user turn to before the last one.
    fn nemo() -> (Vec<u32>, Vec<u32>) {
        let (bos, inst, end_inst, eos, tools, end_tools) = (1, 2, 3, 4, 5, 6);
        let t = span(100, 300);
        let s = span(500, 120);
        let (u1, a1, u2) = (span(800, 7), span(900, 12), span(1000, 9));
        let cached = [
            vec![bos, tools],
            t.clone(),
            vec![end_tools, inst],
            s.clone(),
            u1.clone(),
            vec![end_inst],
            a1.clone(),
            vec![eos],
        ]
        .concat();
        let prompt = [
            vec![bos, inst],
            u1,
            vec![end_inst],
            a1,
            vec![eos, tools],
            t,
            vec![end_tools, inst],
            s,
            u2,
            vec![end_inst],
        ]
        .concat();
        (cached, prompt)
    }

    #[test]
    fn an_appended_turn_keeps_its_prefix_and_moves_nothing() {
        let cached = span(0, 50);
        let prompt = [span(0, 50), span(200, 10)].concat();
        let plan = plan(&cached, &prompt, 16);
        assert_eq!(plan.prefix, 50);
        assert!(plan.moves.is_empty() && plan.fills.is_empty());
    }

    #[test]
    fn moved_tools_and_system_text_are_kept() {
        let (cached, prompt) = nemo();
        let plan = plan(&cached, &prompt, 16);
        let kept = check(&cached, &prompt, &plan, 16);
        assert_eq!(plan.prefix, 1);
        // [INST] is read again; the history (7 + 1 + 12 + 1), the tools
        // (1 + 300 + 1) and [INST] with the system text (1 + 120) move;
        // the new user turn is read.
        assert_eq!(plan.fills, vec![Range { start: 1, end: 2 }]);
        assert_eq!(kept, 1 + 21 + 302 + 121, "{plan:?}");
        assert_eq!(plan.covered(), kept + 1);
        // Control: the prefix alone keeps one token.
        assert_eq!(super::plan(&cached, &prompt, 0).kept(), 1);
    }

    #[test]
    fn changed_text_is_not_rebuilt_from_coincidental_words() {
        // Words (2..9) recur across the text; an edit early on must not
        // be patched with short runs from elsewhere.
        let words = |seed: u32, n: usize| -> Vec<u32> {
            (0..n as u32)
                .map(|i| 2 + (i * 7 + seed * i / 5) % 8)
                .collect()
        };
        let cached = [vec![1], words(3, 200)].concat();
        let prompt = [vec![1], vec![42, 43], words(5, 200)].concat();
        let plan = plan(&cached, &prompt, 16);
        check(&cached, &prompt, &plan, 16);
        assert_eq!(plan.kept(), 1, "{plan:?}");
    }

    #[test]
    fn a_long_run_after_an_edit_is_moved() {
        // Positive control for the test above: the text after the edited
        // words is long and unchanged, so it moves (as history trimmed at
        // the front does), and the new words before it are read first.
        let cached = [span(0, 10), span(20, 5), span(100, 80)].concat();
        let prompt = [span(0, 10), vec![60, 61], span(100, 80), vec![7]].concat();
        let plan = plan(&cached, &prompt, 16);
        assert_eq!(check(&cached, &prompt, &plan, 16), 90);
        assert_eq!(plan.fills, vec![Range { start: 10, end: 12 }]);
        assert_eq!(
            plan.moves,
            [Move {
                from: 15,
                to: 12,
                len: 80
            }]
        );
    }

    #[test]
    fn a_run_behind_much_new_text_is_read_again() {
        let cached = [span(0, 10), span(100, 80)].concat();
        let behind = |new: u32| [span(0, 10), span(1000, new), span(100, 80), vec![7]].concat();
        let near = behind(FILL_FACTOR as u32 * 16 - 1);
        assert_eq!(check(&cached, &near, &plan(&cached, &near, 16), 16), 90);
        let far = behind(FILL_FACTOR as u32 * 16);
        assert_eq!(check(&cached, &far, &plan(&cached, &far, 16), 16), 10);
    }

    #[test]
    fn the_last_token_is_always_left_to_decode() {
        let cached = span(0, 40);
        assert_eq!(plan(&cached, &cached, 16).kept(), 39);
        let moved = [span(0, 4), span(50, 30)].concat();
        let prompt = [span(0, 4), span(60, 20)].concat();
        assert_eq!(check(&moved, &prompt, &plan(&moved, &prompt, 16), 16), 23);
        assert_eq!(plan(&[] as &[u32], &[9], 16).kept(), 0);
    }

    #[test]
    fn plans_hold_their_invariants_on_random_edits() {
        let mut state = 0x9e37_79b9_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as u32
        };
        for _ in 0..300 {
            let alphabet = 2 + next(30) as u64;
            let cached: Vec<u32> = (0..next(400)).map(|_| next(alphabet)).collect();
            // The prompt: slices of the cache in another order, with
            // fresh tokens between them.
            let mut prompt = Vec::new();
            for _ in 0..next(6) {
                if !cached.is_empty() {
                    let a = next(cached.len() as u64) as usize;
                    let b = (a + next(60) as usize).min(cached.len());
                    prompt.extend_from_slice(&cached[a..b]);
                }
                prompt.extend((0..next(5)).map(|_| next(alphabet)));
            }
            for min in [1, 4, 16] {
                check(&cached, &prompt, &plan(&cached, &prompt, min), min);
            }
            let prefix_only = plan(&cached, &prompt, 0);
            assert!(prefix_only.moves.is_empty() && prefix_only.fills.is_empty());
        }
    }

    #[test]
    fn a_repetitive_cache_stays_within_the_work_budget() {
        // Every cached cell starts a long candidate run.
        let cached = [vec![9], vec![7u32; 20_000]].concat();
        let prompt = vec![7; 20_000];
        let plan = plan(&cached, &prompt, 16);
        check(&cached, &prompt, &plan, 16);
        assert!(plan.kept() > 0);
    }
}
