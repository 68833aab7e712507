//! The reply's text as the person may see it while it is being written:
//! each round's text cleaned as it grows ([`sanitize::draft`]), handed on
//! as pieces that extend what was shown. This is the one place where the
//! pieces are worked out; channels append them as they come.

use super::sanitize;

/// What was shown of a reply so far.
#[derive(Debug, Default)]
pub struct Visible {
    /// The current round's text, as the model wrote it.
    round: String,
    /// The current round's text, cleaned.
    clean: String,
    /// What was streamed of the current round.
    shown: String,
    /// Whether any text was shown, in any round.
    any: bool,
}

impl Visible {
    /// A new round begins (the model speaks again after tools ran).
    pub fn round(&mut self) {
        self.round.clear();
        self.clean.clear();
        self.shown.clear();
    }

    /// The current round's text, cleaned: what a draft shows (a draft,
    /// edited in place, can take text back).
    pub fn text(&self) -> &str {
        &self.clean
    }

    /// Takes `delta` of the model's text; returns the piece to append, if
    /// any. A round's first piece after text was shown starts a paragraph.
    /// Where cleaning takes back something already shown (a narration
    /// line once the answer follows it), nothing more is shown this round:
    /// a stream cannot take text back, and the final reply will follow.
    pub fn push(&mut self, delta: &str) -> Option<String> {
        self.round.push_str(delta);
        self.clean = sanitize::draft(&self.round);
        let piece = self.clean.strip_prefix(self.shown.as_str())?.to_string();
        if piece.is_empty() {
            return None;
        }
        let piece = if self.shown.is_empty() && self.any {
            format!("\n\n{piece}")
        } else {
            piece
        };
        self.shown = self.clean.clone();
        self.any = true;
        Some(piece)
    }

    /// The last piece once the reply is known: what of `reply` was not
    /// shown, or all of it as a new paragraph where what was shown does
    /// not lead to it. `None` when the stream already showed all of it.
    pub fn rest(&self, reply: &str) -> Option<String> {
        let piece = match reply.strip_prefix(self.shown.as_str()) {
            Some(rest) if self.shown.is_empty() && self.any => format!("\n\n{rest}"),
            Some(rest) => rest.to_string(),
            None if self.any => format!("\n\n{reply}"),
            None => reply.to_string(),
        };
        (!piece.trim().is_empty()).then_some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_extend_what_was_shown_and_a_new_round_starts_a_paragraph() {
        let mut v = Visible::default();
        assert_eq!(v.push("Hel").as_deref(), Some("Hel"));
        assert_eq!(v.push("lo").as_deref(), Some("lo"));
        assert_eq!(v.push(""), None);
        v.round();
        assert_eq!(v.push("Done").as_deref(), Some("\n\nDone"));
        assert_eq!(v.text(), "Done");
        assert_eq!(v.rest("Done."), Some(".".to_string()));
        assert_eq!(v.rest("Done"), None);
    }

    #[test]
    fn tool_markup_is_held_back_and_never_shown() {
        let mut v = Visible::default();
        assert_eq!(v.push("Saved.<tool_c").as_deref(), Some("Saved."));
        assert_eq!(v.push("all>{\"name\":\"x\"}</tool_call>"), None);
        assert_eq!(v.push(" Bye").as_deref(), Some(" Bye"));
        assert_eq!(v.text(), "Saved. Bye");
    }

    #[test]
    fn a_reply_that_does_not_follow_the_stream_comes_whole_as_a_paragraph() {
        let mut v = Visible::default();
        assert_eq!(v.rest("Stopped."), Some("Stopped.".to_string()));
        v.push("Partial");
        assert_eq!(
            v.rest("Too long: start a new chat."),
            Some("\n\nToo long: start a new chat.".to_string())
        );
        v.round();
        assert_eq!(v.rest("Next"), Some("\n\nNext".to_string()));
    }
}
