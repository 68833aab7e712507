//! gpt-oss's harmony format. The reply is a run of messages, each a header
//! and a body: `<|channel|>analysis<|message|>…<|end|>` is reasoning,
//! `<|start|>assistant<|channel|>final<|message|>…` the answer, and a call
//! names its recipient in the header, before or after the channel:
//! `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{…}<|call|>`.
//! Commentary without a recipient is a preamble for the user. `<|call|>`
//! and `<|return|>` end the reply (end-of-generation tokens); `<|end|>`
//! ends one message. The template takes one call per assistant turn and
//! names a result's tool from the call before it.

use serde_json::Value;

use super::grammar::ToolRules;
use super::splitter::{Piece, Splitter, held_back};
use super::{Calls, Format, Ids, ModelFamily, Syntax, json, messages};
use hearth_core::chat::{ChatMessage, ToolSpec};

const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
const END: &str = "<|end|>";
const START: &str = "<|start|>";
const CALL: &str = "<|call|>";
const RETURN: &str = "<|return|>";
const RECIPIENT: &str = "to=functions.";
/// A header longer than this is not a header: the model writes plain text.
const MAX_HEADER: usize = 160;

pub struct Harmony;

impl Format for Harmony {
    fn family(&self) -> ModelFamily {
        ModelFamily::Harmony
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            reasoning: Some(("<|channel|>analysis<|message|>", END)),
            calls: &[RECIPIENT],
            calls_at_start: &[],
            call_end: None,
            strip: &[],
            special_tokens: true,
        }
    }

    fn grammar(&self, tools: &ToolRules, _most: usize) -> String {
        let call = tools.alternatives(|name, args| format!(r#""{name}" header {args}"#));
        format!(
            "root ::= ( \"{CHANNEL}commentary \" )? \"{RECIPIENT}\" {call}\nheader ::= ( \"{CHANNEL}commentary\" )? ( \" \" \"<|constrain|>\"? \"json\" )? \"{MESSAGE}\"\n"
        )
    }

    fn parse(&self, section: &str, tools: &[ToolSpec], ids: &mut Ids) -> Calls {
        let mut out = Calls::default();
        let Some((header, body)) = section.split_once(MESSAGE) else {
            out.malformed.push(format!(
                "a call without {MESSAGE}: {}",
                json::excerpt(section)
            ));
            return out;
        };
        let Some(name) = recipient(header) else {
            out.malformed.push(format!(
                "a call without a recipient to=functions.NAME: {}",
                json::excerpt(header)
            ));
            return out;
        };
        let body = [END, CALL, RETURN]
            .iter()
            .fold(body, |b, m| b.strip_suffix(m).unwrap_or(b));
        let arguments = match json::leading_value(body) {
            Some((v, _)) => v,
            None if body.trim().is_empty() => Value::Object(Default::default()),
            None => {
                out.malformed.push(format!(
                    "the arguments of `{name}` are not JSON: {}",
                    json::excerpt(body.trim())
                ));
                return out;
            }
        };
        match json::checked(&name, arguments, tools, self.new_id(ids)) {
            Ok(call) => out.calls.push(call),
            Err(e) => out.malformed.push(e.to_string()),
        }
        out
    }

    fn messages(&self, messages: &[ChatMessage]) -> Vec<Value> {
        messages::standard(&messages::one_call_per_turn(messages), &|id| id.to_string())
    }

    fn close_reasoning(&self) -> Option<String> {
        Some(format!("{END}{START}assistant{CHANNEL}final{MESSAGE}"))
    }

    fn splitter(&self, _in_reasoning: bool, stops: Vec<String>, tools: bool) -> Splitter {
        Splitter::Harmony(HarmonySplitter::new(stops, tools))
    }
}

/// The tool a header addresses: `to=functions.NAME`.
fn recipient(header: &str) -> Option<String> {
    let after = &header[header.find(RECIPIENT)? + RECIPIENT.len()..];
    let end = after
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        .unwrap_or(after.len());
    (end > 0).then(|| after[..end].to_string())
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Reading a header, up to `<|message|>`.
    Header(String),
    /// Inside a message's body.
    Body(Kind),
    /// Between messages.
    Between,
    Stopped,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Reasoning,
    Content,
    /// A call: its header and the body so far.
    Call(String),
}

/// Harmony's splitter: headers decide what each body is.
#[derive(Debug)]
pub struct HarmonySplitter {
    state: State,
    pending: String,
    stops: Vec<String>,
    tools: bool,
}

impl HarmonySplitter {
    fn new(stops: Vec<String>, tools: bool) -> Self {
        Self {
            // The generation prompt ends with `<|start|>assistant`.
            state: State::Header(String::new()),
            pending: String::new(),
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            tools,
        }
    }

    pub fn is_in_call(&self) -> bool {
        matches!(self.state, State::Body(Kind::Call(_)))
    }

    pub fn is_in_reasoning(&self) -> bool {
        self.state == State::Body(Kind::Reasoning)
    }

    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        self.pending.push_str(text);
        let mut out = Vec::new();
        while self.step(&mut out) {}
        out
    }

    /// The end of the reply; `cut`: it was cut short, so an open call
    /// section is handed over unclosed.
    pub fn finish(&mut self, cut: bool) -> Vec<Piece> {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        match std::mem::replace(&mut self.state, State::Between) {
            State::Header(header) => {
                let text = plain(&(header + &rest));
                if !text.trim().is_empty() {
                    out.push(Piece::Content(text));
                }
            }
            State::Body(Kind::Call(mut section)) => {
                section.push_str(&rest);
                out.push(Piece::Call {
                    text: section,
                    closed: !cut,
                });
            }
            State::Body(Kind::Reasoning) if !rest.is_empty() => out.push(Piece::Reasoning(rest)),
            State::Body(Kind::Content) if !rest.is_empty() => out.push(Piece::Content(rest)),
            State::Between if !rest.trim().is_empty() => out.push(Piece::Content(plain(&rest))),
            _ => {}
        }
        out
    }

    /// Decides what it can; false when it must wait for more text.
    fn step(&mut self, out: &mut Vec<Piece>) -> bool {
        let ends: &[&str] = &[END, CALL, RETURN, START];
        match self.state.clone() {
            State::Stopped => {
                self.pending.clear();
                false
            }
            State::Header(mut header) => {
                header.push_str(&std::mem::take(&mut self.pending));
                if let Some(at) = header.find(MESSAGE) {
                    self.pending = header.split_off(at + MESSAGE.len());
                    self.state = State::Body(self.kind(&header));
                    true
                } else if header.len() > MAX_HEADER {
                    // Not harmony: plain text from here on.
                    out.push(Piece::Content(plain(&header)));
                    self.state = State::Body(Kind::Content);
                    false
                } else {
                    self.state = State::Header(header);
                    false
                }
            }
            State::Between => match self.pending.find(START).or(self.pending.find(CHANNEL)) {
                Some(at) => {
                    let skipped: String = self.pending.drain(..at).collect();
                    if !skipped.trim().is_empty() {
                        out.push(Piece::Content(skipped));
                    }
                    self.state = State::Header(String::new());
                    true
                }
                None => false,
            },
            State::Body(kind) => {
                let stops: Vec<&str> = match kind {
                    Kind::Content => self.stops.iter().map(String::as_str).collect(),
                    _ => Vec::new(),
                };
                let found = ends
                    .iter()
                    .chain(stops.iter())
                    .filter_map(|m| self.pending.find(m).map(|at| (at, *m)))
                    .min_by_key(|(at, m)| (*at, usize::MAX - m.len()));
                let Some((at, marker)) = found else {
                    let keep = held_back(&self.pending, ends.iter().copied().chain(stops));
                    let ready: String = self.pending.drain(..self.pending.len() - keep).collect();
                    self.body(kind, ready, out);
                    return false;
                };
                let body: String = self.pending.drain(..at).collect();
                let is_stop = !ends.contains(&marker);
                if marker != START {
                    self.pending.drain(..marker.len());
                }
                match kind {
                    Kind::Call(mut section) => {
                        section.push_str(&body);
                        out.push(Piece::Call {
                            text: section,
                            closed: true,
                        });
                    }
                    kind => self.body(kind, body, out),
                }
                self.state = if is_stop {
                    out.push(Piece::Stop);
                    State::Stopped
                } else {
                    State::Between
                };
                true
            }
        }
    }

    fn body(&mut self, kind: Kind, text: String, out: &mut Vec<Piece>) {
        match kind {
            Kind::Call(mut section) => {
                section.push_str(&text);
                self.state = State::Body(Kind::Call(section));
            }
            kind => {
                if !text.is_empty() {
                    out.push(match kind {
                        Kind::Reasoning => Piece::Reasoning(text),
                        _ => Piece::Content(text),
                    });
                }
                self.state = State::Body(kind);
            }
        }
    }

    fn kind(&self, header: &str) -> Kind {
        if self.tools && header.contains(RECIPIENT) {
            Kind::Call(header.to_string())
        } else if header.contains("analysis") {
            Kind::Reasoning
        } else {
            Kind::Content
        }
    }
}

/// Text with harmony's framing tokens taken out.
fn plain(text: &str) -> String {
    let mut out = text.to_string();
    for marker in [START, CHANNEL, MESSAGE, END] {
        out = out.replace(marker, "");
    }
    out.strip_prefix("assistant").unwrap_or(&out).to_string()
}
