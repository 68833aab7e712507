//! Spotting a reply that has fallen into a loop.
//!
//! Small models sometimes repeat one phrase until the token limit (a peer
//! runtime was seen producing 4,096-token run-away replies). This detector
//! looks at the tail of the generated tokens for a short period repeated many
//! times, so generation can stop early instead of making the user wait.

/// The longest repeated unit looked for, in tokens.
const MAX_PERIOD: usize = 32;
/// How many tokens the repeated tail must span before it counts.
const MIN_SPAN: usize = 64;
/// And how many times the unit must repeat at least.
const MIN_REPEATS: usize = 4;

/// True when the tail of `tokens` is one unit repeated: at least
/// `MIN_REPEATS` times and over at least `MIN_SPAN` tokens.
pub fn is_looping<T: PartialEq>(tokens: &[T]) -> bool {
    (1..=MAX_PERIOD).any(|period| {
        let span = MIN_SPAN.max(period * MIN_REPEATS);
        if tokens.len() < span {
            return false;
        }
        let tail = &tokens[tokens.len() - span..];
        tail.iter().zip(&tail[period..]).all(|(a, b)| a == b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_repeated_phrase() {
        let mut t: Vec<u32> = (0..50).collect();
        for _ in 0..20 {
            t.extend([7, 8, 9, 10, 11]);
        }
        assert!(is_looping(&t));
    }

    #[test]
    fn ordinary_text_is_not_a_loop() {
        let t: Vec<u32> = (0..500).map(|i| (i * 7919) % 1000).collect();
        assert!(!is_looping(&t));
        // A short repeat (a list of dashes, say) is not enough.
        let mut t: Vec<u32> = (0..100).collect();
        t.extend([5; 20]);
        assert!(!is_looping(&t));
    }
}
