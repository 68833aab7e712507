//! A reply streamed as pieces to append, from the whole texts of a draft.
//!
//! The pipeline hands channels the whole reply so far (a draft is edited
//! in place); clients of a stream (a WebSocket, a streamed completion, an
//! editor over ACP) append pieces instead.

/// The pieces a client appends, from the whole texts of a draft sent
/// again as it grows. A text that does not continue the last one (the
/// model's next round after a tool) starts a new paragraph.
#[derive(Default)]
pub struct Deltas {
    shown: String,
}

impl Deltas {
    pub fn next(&mut self, whole: &str) -> Option<String> {
        let piece = match whole.strip_prefix(self.shown.as_str()) {
            Some("") => return None,
            Some(rest) => rest.to_string(),
            None if self.shown.is_empty() => whole.to_string(),
            None => format!("\n\n{whole}"),
        };
        self.shown = whole.to_string();
        Some(piece)
    }

    /// Whether any text went out.
    pub fn started(&self) -> bool {
        !self.shown.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_append_and_a_new_round_starts_a_paragraph() {
        let mut d = Deltas::default();
        assert_eq!(d.next("Hel").as_deref(), Some("Hel"));
        assert_eq!(d.next("Hello").as_deref(), Some("lo"));
        assert_eq!(d.next("Hello"), None);
        assert_eq!(d.next("Done").as_deref(), Some("\n\nDone"));
        assert!(d.started());
    }
}
