//! How much one reply drafts: as much as its drafts have earned.
//!
//! A drafted token that is wrong costs a batch position, and on a CPU a
//! position costs most of a decode of its own. So a reply's drafts grow
//! while they are kept and shrink when they are not, and a reply whose
//! drafts are mostly wrong stops drafting for a while. Chat rarely repeats
//! itself and soon pauses; a reply that quotes a tool result or a file
//! keeps drafting. Measured with `hearth bench --speculative`
//! (docs/PERFORMANCE.md): prompt lookup in chat kept about half its drafts
//! and was slower than plain decoding without this pause.

/// Drafted tokens judged before a reply's rate decides anything.
const SAMPLE: usize = 8;
/// Below this share of drafted tokens kept (half), the reply pauses.
const KEPT_SHARE: (usize, usize) = (1, 2);
/// Generated tokens of each pause in turn; the last repeats.
const PAUSES: [usize; 5] = [16, 32, 64, 128, 256];
#[cfg(test)]
const FIRST_PAUSE: usize = PAUSES[0];

/// One reply's draft allowance.
#[derive(Debug, Clone)]
pub(crate) struct DraftGate {
    /// Most tokens in the next draft.
    limit: usize,
    /// Drafted and kept since the reply started or last resumed.
    drafted: usize,
    kept: usize,
    /// No drafts until the reply has generated this many tokens.
    resume_at: usize,
    /// Pauses taken so far.
    pauses: usize,
    /// Just back from a pause: the first draft must be kept whole, or the
    /// next, longer pause starts at once.
    probation: bool,
}

impl Default for DraftGate {
    fn default() -> Self {
        Self {
            limit: usize::MAX,
            drafted: 0,
            kept: 0,
            resume_at: 0,
            pauses: 0,
            probation: false,
        }
    }
}

impl DraftGate {
    /// Most tokens to draft now, after `generated` tokens of the reply.
    pub(crate) fn room(&self, generated: usize) -> usize {
        if generated < self.resume_at {
            0
        } else {
            self.limit
        }
    }

    /// Of `drafted` tokens, `kept` were kept, after `generated` tokens of
    /// the reply. A draft kept whole may be twice as long next time; one
    /// cut short, as long as the part kept (one at least). Once `SAMPLE`
    /// tokens are judged and fewer than half were kept, the reply
    /// drafts nothing for a pause, then starts again from one token; if
    /// that first draft is wrong, a pause twice as long starts at once.
    pub(crate) fn checked(&mut self, drafted: usize, kept: usize, generated: usize) {
        self.drafted += drafted;
        self.kept += kept;
        self.limit = if kept == drafted {
            drafted.saturating_mul(2).max(2)
        } else {
            kept.max(1)
        };
        let failed_probation = self.probation && kept < drafted;
        self.probation = false;
        let mostly_wrong =
            self.drafted >= SAMPLE && self.kept * KEPT_SHARE.1 < self.drafted * KEPT_SHARE.0;
        if failed_probation || mostly_wrong {
            self.resume_at = generated + PAUSES[self.pauses.min(PAUSES.len() - 1)];
            self.pauses += 1;
            self.limit = 1;
            self.drafted = 0;
            self.kept = 0;
            self.probation = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drafts_that_are_kept_grow_and_wrong_ones_pause_the_reply() {
        // Positive control: a reply whose drafts are kept never pauses.
        let mut quoting = DraftGate::default();
        let mut generated = 0;
        for _ in 0..20 {
            let n = quoting.room(generated).min(8);
            assert!(n > 0, "paused at {generated}");
            quoting.checked(n, n, generated);
            generated += n + 1;
        }
        assert_eq!(quoting.room(generated), 16);

        // A third kept: the reply pauses once enough has been judged.
        let mut chat = DraftGate::default();
        chat.checked(3, 1, 1);
        chat.checked(3, 1, 4);
        assert_eq!(chat.room(6), 1, "6 judged: not yet");
        chat.checked(3, 1, 6);
        assert_eq!(chat.room(7), 0, "9 judged, a third kept: paused");
        assert_eq!(chat.room(6 + FIRST_PAUSE - 1), 0);
        assert_eq!(chat.room(6 + FIRST_PAUSE), 1, "resumes with one token");
        // The first draft after the pause is wrong: the next pause, twice
        // as long, starts at once.
        chat.checked(1, 0, 30);
        assert_eq!(chat.room(30 + 2 * FIRST_PAUSE - 1), 0);
        assert_eq!(chat.room(30 + 2 * FIRST_PAUSE), 1);
        // Positive control: kept whole after a pause, drafting goes on
        // and grows.
        chat.checked(1, 1, 30 + 2 * FIRST_PAUSE);
        assert_eq!(chat.room(30 + 2 * FIRST_PAUSE + 2), 2);
    }

    #[test]
    fn half_kept_is_enough_to_go_on() {
        let mut gate = DraftGate::default();
        gate.checked(4, 2, 1);
        gate.checked(4, 2, 5);
        assert_eq!(gate.room(9), 2);
        // Positive control: one fewer kept pauses it.
        gate.checked(4, 1, 9);
        assert_eq!(gate.room(10), 0);
    }
}
