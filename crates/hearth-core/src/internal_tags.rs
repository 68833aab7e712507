//! hearth's own markup, kept out of what a person or an API client reads.
//!
//! hearth writes two kinds of markup into prompts: the results of tools in
//! its text protocol (`<tool_result name=… status=…>…</tool_result>`) and
//! the fence around text nobody in the conversation wrote (`<untrusted
//! source=…>…</untrusted>`, see [`super::fence`]). A small model repeats
//! them. A repeated result block is dropped whole when the reply says
//! anything else (it is hearth's, not the answer), and only its tags go
//! when it is all the reply holds (its text is then the only answer there
//! is); a repeated fence tag is dropped and its text kept, since the model
//! may be quoting a memory the person asked for.
//!
//! [`InternalTags`] does the same to a reply that streams: a tail that may
//! still become such a tag waits for the text after it, and so does a
//! reply that so far holds only result blocks.

use std::sync::LazyLock;

use regex::Regex;

/// A result block; an unclosed one runs to the end.
static RESULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)<tool_result\b[^>]*>.*?(?:</tool_result\s*>|\z)").expect("a valid pattern")
});
/// A fence tag, opening or closing, and a result's stray closing tag.
static STRAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)</?untrusted\b[^>]*>|</tool_result\s*>").expect("a valid pattern")
});
/// An opening tag cut before its `>` at the end of the text.
static CUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)</?(?:untrusted|tool_result)\b[^>]*\z").expect("a valid pattern")
});

/// The tag names this module removes.
const NAMES: [&str; 2] = ["tool_result", "untrusted"];

/// A result block's tags, to keep its text.
static RESULT_TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)<tool_result\b[^>]*>").expect("a valid pattern"));

/// `text` without hearth's internal markup.
pub fn strip(text: &str) -> String {
    match answer_beside_results(text) {
        Some(answer) => answer,
        None => strip_fences(&RESULT_TAG.replace_all(text, ""))
            .trim()
            .to_string(),
    }
}

/// `text` with its result blocks dropped, when something else is left.
fn answer_beside_results(text: &str) -> Option<String> {
    let answer = strip_fences(&RESULT.replace_all(text, ""));
    (!answer.trim().is_empty()).then_some(answer)
}

/// `text` without fence tags (their text kept) or a tag cut at its end.
pub fn strip_fences(text: &str) -> String {
    let text = STRAY.replace_all(text, "");
    CUT.replace_all(&text, "").into_owned()
}

/// How many bytes at the end of `text` may yet become an internal tag
/// (`<`, `</untr`, `<tool_res`…), and so must wait.
pub fn undecided_tail(text: &str) -> usize {
    let Some(at) = text.rfind('<') else {
        return 0;
    };
    let after = &text[at + 1..];
    if after.contains('>') {
        return 0;
    }
    let name = after
        .strip_prefix('/')
        .unwrap_or(after)
        .to_ascii_lowercase();
    let may = NAMES
        .iter()
        .any(|tag| tag.starts_with(name.as_str()) || name.starts_with(tag));
    if may { text.len() - at } else { 0 }
}

/// A reply streamed without hearth's internal markup.
#[derive(Debug, Default)]
pub struct InternalTags {
    raw: String,
    shown: usize,
}

impl InternalTags {
    /// Takes `delta` of the model's text; returns what may be shown now.
    pub fn push(&mut self, delta: &str) -> String {
        self.raw.push_str(delta);
        // Only result blocks so far: whether they go depends on what follows.
        let Some(clean) = answer_beside_results(&self.raw) else {
            return String::new();
        };
        let ready = clean.len() - undecided_tail(&clean);
        self.take(&clean[..ready])
    }

    /// The reply has ended: whatever is still held back.
    pub fn finish(&mut self) -> String {
        let clean = strip(&self.raw);
        self.take(&clean)
    }

    /// The part of `clean` past what was shown. Cleaning only ever takes
    /// away a tail that was held back, so `clean` extends what was shown;
    /// where it does not, nothing more is sent rather than text twice.
    fn take(&mut self, clean: &str) -> String {
        if clean.len() <= self.shown || !clean.is_char_boundary(self.shown) {
            return String::new();
        }
        let piece = clean[self.shown..].to_string();
        self.shown = clean.len();
        piece
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_results_and_fences_go_and_the_answer_stays() {
        let echoed = "<tool_result name=\"get_weather\" status=\"ok\">{\"temp\": 21}</tool_result>It is 21 °C in Paris.";
        assert_eq!(strip(echoed), "It is 21 °C in Paris.");
        let fence = "<untrusted source=\"memory\">\nYou like tea.\n</untrusted> So: tea.";
        assert_eq!(strip(fence), "\nYou like tea.\n So: tea.");
        assert_eq!(strip("Done. <tool_result name=\"x\" status=\"ok"), "Done. ");
        // A reply that is only an echoed result keeps the result's text.
        let alone =
            "<tool_result name=\"turn_on\" status=\"ok\">{\"success\": true}</tool_result>\n";
        assert_eq!(strip(alone), "{\"success\": true}");
        // Positive controls: what only looks alike is kept.
        for kept in [
            "if a <b then",
            "1 < 2",
            "<tool_resultant> x",
            "<untrustworthy>",
        ] {
            assert_eq!(strip(kept), kept);
        }
    }

    #[test]
    fn a_stream_holds_back_what_may_become_a_tag_and_never_shows_it() {
        let mut s = InternalTags::default();
        let mut shown = String::new();
        for delta in [
            "It is",
            " 21. <",
            "tool_res",
            "ult name=\"w\">{}</tool_",
            "result> Bye <",
            "3",
        ] {
            shown.push_str(&s.push(delta));
            assert!(!shown.contains("tool_res"), "{shown}");
        }
        shown.push_str(&s.finish());
        assert_eq!(shown, "It is 21.  Bye <3");
        let mut alone = InternalTags::default();
        let mut out = alone.push("<tool_result name=\"w\" status=\"ok\">sunny");
        out.push_str(&alone.push("</tool_result>"));
        assert_eq!(out, "", "held while it may be followed by an answer");
        out.push_str(&alone.finish());
        assert_eq!(out, "sunny");
        let mut fenced = InternalTags::default();
        let mut out = fenced.push("<untrusted source=\"m\">tea</untr");
        out.push_str(&fenced.push("usted>!"));
        out.push_str(&fenced.finish());
        assert_eq!(out, "tea!");
    }
}
