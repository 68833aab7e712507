//! Splitting the model's output stream into reply text, reasoning and tool
//! calls, as it streams.
//!
//! Text inside `<think>…</think>` is reasoning (also when the prompt already
//! opened the block for the model); text inside `<tool_call>…</tool_call>`
//! is a call. Neither ever reaches the reply. A stop string ends the reply
//! before it. Since a tag may arrive split over several tokens, a tail that
//! could still become a tag or a stop string is held back until it is
//! decided. Inside a call, a closing tag within a JSON string is part of
//! the string, so a grammar-constrained argument may contain it.

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
pub const CALL_OPEN: &str = "<tool_call>";
pub const CALL_CLOSE: &str = "</tool_call>";

/// A decided part of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Content(String),
    Reasoning(String),
    /// The text between `<tool_call>` and `</tool_call>`.
    ToolCall(String),
    /// A call whose closing tag never came (the reply was cut).
    UnfinishedCall(String),
    /// A stop string was reached: the reply ends here.
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    Reasoning,
    Call,
    Stopped,
}

#[derive(Debug)]
pub struct OutputFilter {
    mode: Mode,
    pending: String,
    /// What ends plain content: `<think>`, `<tool_call>` with tools, stops.
    content_markers: Vec<String>,
    reasoning_markers: Vec<String>,
}

impl OutputFilter {
    /// `in_reasoning`: the prompt ends inside an open `<think>` block.
    /// `tools`: `<tool_call>` starts a call (otherwise it is plain text).
    pub fn new(in_reasoning: bool, stops: Vec<String>, tools: bool) -> Self {
        Self {
            mode: if in_reasoning {
                Mode::Reasoning
            } else {
                Mode::Content
            },
            pending: String::new(),
            content_markers: [THINK_OPEN]
                .into_iter()
                .chain(tools.then_some(CALL_OPEN))
                .map(String::from)
                .chain(stops.into_iter().filter(|s| !s.is_empty()))
                .collect(),
            reasoning_markers: vec![THINK_CLOSE.to_string()],
        }
    }

    pub fn is_in_call(&self) -> bool {
        self.mode == Mode::Call
    }

    /// Adds generated text; returns what is now decided.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        if self.mode == Mode::Stopped {
            return Vec::new();
        }
        self.pending.push_str(text);
        let mut out = Vec::new();
        loop {
            if self.mode == Mode::Call {
                // A call is kept whole until its closing tag.
                let Some(at) = call_close(&self.pending) else {
                    return out;
                };
                let body: String = self.pending.drain(..at).collect();
                self.pending.drain(..CALL_CLOSE.len());
                out.push(Piece::ToolCall(body.trim().to_string()));
                self.mode = Mode::Content;
                continue;
            }
            let markers = match self.mode {
                Mode::Content => &self.content_markers,
                _ => &self.reasoning_markers,
            };
            let found = markers
                .iter()
                .filter_map(|m| self.pending.find(m.as_str()).map(|i| (i, m.as_str())))
                .min_by_key(|(i, m)| (*i, usize::MAX - m.len()));
            let Some((at, marker)) = found else {
                // Emit all but a tail that may still grow into a marker.
                let keep = held_back(&self.pending, markers);
                let ready: String = self.pending.drain(..self.pending.len() - keep).collect();
                self.emit(ready, &mut out);
                return out;
            };
            let marker_len = marker.len();
            let is_think = marker == THINK_OPEN;
            let is_call = marker == CALL_OPEN;
            let before: String = self.pending.drain(..at).collect();
            self.pending.drain(..marker_len);
            match self.mode {
                Mode::Content if is_think => {
                    self.emit(before, &mut out);
                    self.mode = Mode::Reasoning;
                }
                Mode::Content if is_call => {
                    self.emit(before, &mut out);
                    self.mode = Mode::Call;
                }
                Mode::Content => {
                    self.emit(before, &mut out);
                    out.push(Piece::Stop);
                    self.mode = Mode::Stopped;
                    self.pending.clear();
                    return out;
                }
                _ => {
                    self.emit(before, &mut out);
                    self.mode = Mode::Content;
                }
            }
        }
    }

    /// The end of the stream: everything still held back is decided.
    pub fn finish(&mut self) -> Vec<Piece> {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        if self.mode == Mode::Call {
            // An unbalanced quote hid the closing tag: fall back to the first
            // tag anywhere.
            match rest.find(CALL_CLOSE) {
                Some(at) => {
                    out.push(Piece::ToolCall(rest[..at].trim().to_string()));
                    self.mode = Mode::Content;
                    out.extend(self.push(&rest[at + CALL_CLOSE.len()..]));
                    out.extend(self.finish());
                }
                None => out.push(Piece::UnfinishedCall(rest)),
            }
        } else {
            self.emit(rest, &mut out);
        }
        out
    }

    fn emit(&self, text: String, out: &mut Vec<Piece>) {
        if text.is_empty() {
            return;
        }
        match self.mode {
            Mode::Content => out.push(Piece::Content(text)),
            Mode::Reasoning => out.push(Piece::Reasoning(text)),
            Mode::Call | Mode::Stopped => {}
        }
    }
}

/// Where `</tool_call>` first occurs outside a JSON string in a call body.
fn call_close(body: &str) -> Option<usize> {
    let (mut in_string, mut escaped) = (false, false);
    for (i, c) in body.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c == '<' && body[i..].starts_with(CALL_CLOSE) {
            return Some(i);
        }
    }
    None
}

/// The length of the longest tail of `text` that is a proper prefix of a
/// marker, cut at a character boundary.
fn held_back(text: &str, markers: &[String]) -> usize {
    let longest = markers.iter().map(String::len).max().unwrap_or(0);
    (1..longest.min(text.len() + 1))
        .rev()
        .filter(|&n| text.is_char_boundary(text.len() - n))
        .find(|&n| {
            let tail = &text[text.len() - n..];
            markers.iter().any(|m| m.len() > n && m.starts_with(tail))
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` one by one and joins the pieces by kind.
    fn run(filter: &mut OutputFilter, chunks: &[&str]) -> Vec<Piece> {
        let mut pieces: Vec<Piece> = chunks.iter().flat_map(|c| filter.push(c)).collect();
        pieces.extend(filter.finish());
        // Merge neighbouring pieces of the same kind.
        let mut merged: Vec<Piece> = Vec::new();
        for p in pieces {
            match (merged.last_mut(), p) {
                (Some(Piece::Content(a)), Piece::Content(b)) => a.push_str(&b),
                (Some(Piece::Reasoning(a)), Piece::Reasoning(b)) => a.push_str(&b),
                (_, p) => merged.push(p),
            }
        }
        merged
    }

    fn every_split(text: &str) -> Vec<Vec<&str>> {
        (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .map(|i| vec![&text[..i], &text[i..]])
            .collect()
    }

    #[test]
    fn think_is_reasoning_however_it_is_split() {
        let text = "<think>plan it</think>The answer.";
        for chunks in every_split(text) {
            let mut f = OutputFilter::new(false, vec![], false);
            assert_eq!(
                run(&mut f, &chunks),
                [
                    Piece::Reasoning("plan it".into()),
                    Piece::Content("The answer.".into())
                ],
                "{chunks:?}"
            );
        }
    }

    #[test]
    fn a_template_opened_think_block() {
        let mut f = OutputFilter::new(true, vec![], false);
        assert_eq!(
            run(&mut f, &["weigh ", "options</th", "ink>\n\nDone"]),
            [
                Piece::Reasoning("weigh options".into()),
                Piece::Content("\n\nDone".into())
            ]
        );
    }

    #[test]
    fn tool_calls_are_cut_out_of_the_text() {
        let text = "Let me look.<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
        for chunks in every_split(text) {
            let mut f = OutputFilter::new(false, vec![], true);
            assert_eq!(
                run(&mut f, &chunks),
                [
                    Piece::Content("Let me look.".into()),
                    Piece::ToolCall("{\"name\": \"f\", \"arguments\": {}}".into())
                ],
                "{chunks:?}"
            );
        }
    }

    #[test]
    fn a_closing_tag_inside_a_json_string_does_not_end_the_call() {
        let body = r#"{"name": "f", "arguments": {"q": "a}}</tool_call>b \" </tool_call>"}}"#;
        let text = format!("<tool_call>{body}</tool_call>after");
        for chunks in every_split(&text) {
            let mut f = OutputFilter::new(false, vec![], true);
            assert_eq!(
                run(&mut f, &chunks),
                [Piece::ToolCall(body.into()), Piece::Content("after".into())],
                "{chunks:?}"
            );
        }
    }

    #[test]
    fn an_unbalanced_quote_still_ends_at_the_first_closing_tag() {
        let mut f = OutputFilter::new(false, vec![], true);
        assert_eq!(
            run(&mut f, &["<tool_call>{\"q\": \"it</tool_call>", " done"]),
            [
                Piece::ToolCall("{\"q\": \"it".into()),
                Piece::Content(" done".into())
            ]
        );
    }

    #[test]
    fn without_tools_a_call_tag_is_text() {
        let mut f = OutputFilter::new(false, vec![], false);
        assert_eq!(
            run(&mut f, &["a <tool_call> b"]),
            [Piece::Content("a <tool_call> b".into())]
        );
    }

    #[test]
    fn an_unfinished_call_is_reported() {
        let mut f = OutputFilter::new(false, vec![], true);
        assert_eq!(
            run(&mut f, &["<tool_call>{\"name\": \"f\", \"argu"]),
            [Piece::UnfinishedCall("{\"name\": \"f\", \"argu".into())]
        );
    }

    #[test]
    fn stop_strings_end_the_reply_before_them() {
        for chunks in every_split("Hello.\nUser: more") {
            let mut f = OutputFilter::new(false, vec!["\nUser:".into()], false);
            assert_eq!(
                run(&mut f, &chunks),
                [Piece::Content("Hello.".into()), Piece::Stop],
                "{chunks:?}"
            );
        }
    }

    #[test]
    fn held_back_text_is_released_when_it_is_not_a_tag() {
        let mut f = OutputFilter::new(false, vec![], true);
        assert_eq!(f.push("a <"), [Piece::Content("a ".into())]);
        assert_eq!(f.push("b"), [Piece::Content("<b".into())]);
        assert_eq!(f.push("é<thi"), [Piece::Content("é".into())]);
        assert_eq!(f.finish(), [Piece::Content("<thi".into())]);
    }
}
