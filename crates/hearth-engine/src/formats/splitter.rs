//! Splitting a reply into answer, reasoning and call sections as it
//! streams, by a family's markers ([`super::Syntax`]).
//!
//! A marker may arrive split over several tokens, so a tail that could
//! still become a marker (or a stop string) is held back until it is
//! decided. A call section runs from its opening marker to the family's
//! closing one, found outside JSON strings (a grammar-constrained argument
//! may contain it), or to the end of the reply; it is handed over whole,
//! for the family to read. Harmony's channels have a splitter of their own.

use super::Syntax;
use super::harmony::HarmonySplitter;

/// A decided part of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Content(String),
    Reasoning(String),
    /// A call section, its markers included. `closed`: its closing marker
    /// came (or the family has none and the reply ended).
    Call {
        text: String,
        closed: bool,
    },
    /// A stop string was reached: the reply ends here.
    Stop,
}

/// The splitter for one reply.
#[derive(Debug)]
pub enum Splitter {
    Marked(Marked),
    Harmony(HarmonySplitter),
}

impl Splitter {
    pub fn marked(syntax: Syntax, in_reasoning: bool, stops: Vec<String>, tools: bool) -> Self {
        Self::Marked(Marked::new(syntax, in_reasoning, stops, tools))
    }

    /// Adds generated text; returns what is now decided.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        match self {
            Self::Marked(m) => m.push(text),
            Self::Harmony(h) => h.push(text),
        }
    }

    /// The end of the reply: everything held back is decided.
    pub fn finish(&mut self) -> Vec<Piece> {
        match self {
            Self::Marked(m) => m.finish(false),
            Self::Harmony(h) => h.finish(false),
        }
    }

    /// The end of a reply cut short (at the token limit): as [`Self::finish`],
    /// but an open call section is handed over unclosed, never closed at a
    /// marker that stood inside one of its strings.
    pub fn finish_cut(&mut self) -> Vec<Piece> {
        match self {
            Self::Marked(m) => m.finish(true),
            Self::Harmony(h) => h.finish(true),
        }
    }

    pub fn is_in_call(&self) -> bool {
        match self {
            Self::Marked(m) => m.mode == Mode::Call,
            Self::Harmony(h) => h.is_in_call(),
        }
    }

    pub fn is_in_reasoning(&self) -> bool {
        match self {
            Self::Marked(m) => m.mode == Mode::Reasoning,
            Self::Harmony(h) => h.is_in_reasoning(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    Reasoning,
    Call,
    Stopped,
}

/// What a marker found in content does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cue {
    Think,
    Call,
    CallAtStart,
    Strip,
    Stop,
}

#[derive(Debug)]
pub struct Marked {
    syntax: Syntax,
    mode: Mode,
    pending: String,
    content_markers: Vec<(String, Cue)>,
    /// Whether anything but whitespace has been answered yet.
    answered: bool,
    section: String,
    /// How far the open section has been searched for its closing marker.
    scan: Scan,
}

impl Marked {
    fn new(syntax: Syntax, in_reasoning: bool, stops: Vec<String>, tools: bool) -> Self {
        let mut content_markers: Vec<(String, Cue)> = Vec::new();
        if let Some((open, _)) = syntax.reasoning {
            content_markers.push((open.into(), Cue::Think));
        }
        if tools {
            content_markers.extend(syntax.calls.iter().map(|m| (m.to_string(), Cue::Call)));
            content_markers.extend(
                syntax
                    .calls_at_start
                    .iter()
                    .map(|m| (m.to_string(), Cue::CallAtStart)),
            );
        }
        content_markers.extend(syntax.strip.iter().map(|m| (m.to_string(), Cue::Strip)));
        content_markers.extend(
            stops
                .into_iter()
                .filter(|s| !s.is_empty())
                .map(|s| (s, Cue::Stop)),
        );
        Self {
            syntax,
            mode: if in_reasoning && syntax.reasoning.is_some() {
                Mode::Reasoning
            } else {
                Mode::Content
            },
            pending: String::new(),
            content_markers,
            answered: false,
            section: String::new(),
            scan: Scan::default(),
        }
    }

    fn push(&mut self, text: &str) -> Vec<Piece> {
        if self.mode == Mode::Stopped {
            return Vec::new();
        }
        self.pending.push_str(text);
        let mut out = Vec::new();
        loop {
            match self.mode {
                Mode::Stopped => return out,
                Mode::Call => {
                    let Some(end) = self.syntax.call_end else {
                        self.section.push_str(&std::mem::take(&mut self.pending));
                        return out;
                    };
                    self.section.push_str(&std::mem::take(&mut self.pending));
                    let Some(at) = self.scan.find(&self.section, end) else {
                        return out;
                    };
                    self.pending = self.section.split_off(at + end.len());
                    out.push(Piece::Call {
                        text: std::mem::take(&mut self.section),
                        closed: true,
                    });
                    self.mode = Mode::Content;
                }
                Mode::Reasoning => {
                    let close = self.syntax.reasoning.map_or("", |(_, c)| c);
                    match self.pending.find(close).filter(|_| !close.is_empty()) {
                        Some(at) => {
                            let before: String = self.pending.drain(..at).collect();
                            self.pending.drain(..close.len());
                            emit(Mode::Reasoning, before, &mut out);
                            self.mode = Mode::Content;
                        }
                        None => {
                            let keep = held_back(&self.pending, [close].into_iter());
                            let ready = self.pending.drain(..self.pending.len() - keep).collect();
                            emit(Mode::Reasoning, ready, &mut out);
                            return out;
                        }
                    }
                }
                Mode::Content => {
                    let found = self.next_marker();
                    let Some((at, len, cue)) = found else {
                        let keep = held_back(
                            &self.pending,
                            self.content_markers.iter().map(|(m, _)| m.as_str()),
                        );
                        let ready: String =
                            self.pending.drain(..self.pending.len() - keep).collect();
                        self.answer(ready, &mut out);
                        return out;
                    };
                    let before: String = self.pending.drain(..at).collect();
                    let marker: String = self.pending.drain(..len).collect();
                    self.answer(before, &mut out);
                    match cue {
                        Cue::Think => self.mode = Mode::Reasoning,
                        Cue::Call | Cue::CallAtStart => {
                            self.section = marker;
                            self.scan = Scan::default();
                            self.mode = Mode::Call;
                        }
                        Cue::Strip => {}
                        Cue::Stop => {
                            out.push(Piece::Stop);
                            self.mode = Mode::Stopped;
                            self.pending.clear();
                        }
                    }
                }
            }
        }
    }

    /// The first marker in the pending text (the longest where two start
    /// at one place); a start-only marker counts before any answer.
    fn next_marker(&self) -> Option<(usize, usize, Cue)> {
        let lead = self.pending.len() - self.pending.trim_start().len();
        self.content_markers
            .iter()
            .filter_map(|(m, cue)| {
                let at = match cue {
                    Cue::CallAtStart if self.answered => None,
                    Cue::CallAtStart => {
                        self.pending[lead..].starts_with(m.as_str()).then_some(lead)
                    }
                    _ => self.pending.find(m.as_str()),
                }?;
                Some((at, m.len(), *cue))
            })
            .min_by_key(|(at, len, _)| (*at, usize::MAX - len))
    }

    fn answer(&mut self, text: String, out: &mut Vec<Piece>) {
        self.answered |= !text.trim().is_empty();
        emit(Mode::Content, text, out);
    }

    fn finish(&mut self, cut: bool) -> Vec<Piece> {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        match self.mode {
            Mode::Call => {
                self.section.push_str(&rest);
                let section = std::mem::take(&mut self.section);
                match self.syntax.call_end {
                    // The reply stopped mid-call: whatever follows the open
                    // string is the string's, not a closing marker.
                    _ if cut => out.push(Piece::Call {
                        text: section,
                        closed: false,
                    }),
                    // An unbalanced quote hid the closing marker: the first
                    // one anywhere closes the section.
                    Some(end) => match section.find(end) {
                        Some(at) => {
                            let after = section[at + end.len()..].to_string();
                            out.push(Piece::Call {
                                text: section[..at + end.len()].to_string(),
                                closed: true,
                            });
                            self.mode = Mode::Content;
                            out.extend(self.push(&after));
                            out.extend(self.finish(cut));
                        }
                        None => out.push(Piece::Call {
                            text: section,
                            closed: false,
                        }),
                    },
                    None => out.push(Piece::Call {
                        text: section,
                        closed: true,
                    }),
                }
            }
            Mode::Content => self.answer(rest, &mut out),
            mode => emit(mode, rest, &mut out),
        }
        out
    }
}

fn emit(mode: Mode, text: String, out: &mut Vec<Piece>) {
    if text.is_empty() {
        return;
    }
    match mode {
        Mode::Content => out.push(Piece::Content(text)),
        Mode::Reasoning => out.push(Piece::Reasoning(text)),
        Mode::Call | Mode::Stopped => {}
    }
}

/// A search for a marker outside JSON strings in text that grows, resumed
/// where the last one stopped, so a long call costs one pass, not one per
/// token.
#[derive(Debug, Default)]
struct Scan {
    at: usize,
    in_string: bool,
    escaped: bool,
}

impl Scan {
    /// Where `marker` first occurs outside a JSON string in `text`, which
    /// holds the text of earlier calls and more.
    fn find(&mut self, text: &str, marker: &str) -> Option<usize> {
        for (i, c) in text[self.at..].char_indices() {
            let i = self.at + i;
            if self.in_string {
                match c {
                    _ if self.escaped => self.escaped = false,
                    '\\' => self.escaped = true,
                    '"' => self.in_string = false,
                    _ => {}
                }
            } else if c == '"' {
                self.in_string = true;
            } else if text[i..].starts_with(marker) {
                self.at = i;
                return Some(i);
            } else if marker.starts_with(&text[i..]) {
                // Perhaps the marker's head: look again when more comes.
                self.at = i;
                return None;
            }
        }
        self.at = text.len();
        None
    }
}

/// The length of the longest tail of `text` that is a proper prefix of a
/// marker, cut at a character boundary.
pub fn held_back<'m>(text: &str, markers: impl Iterator<Item = &'m str> + Clone) -> usize {
    let longest = markers.clone().map(str::len).max().unwrap_or(0);
    (1..longest.min(text.len() + 1))
        .rev()
        .filter(|&n| text.is_char_boundary(text.len() - n))
        .find(|&n| {
            let tail = &text[text.len() - n..];
            markers.clone().any(|m| m.len() > n && m.starts_with(tail))
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
