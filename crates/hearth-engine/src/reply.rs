//! One reply in flight: the prompt still to read, the sampler, and what
//! the caller has been told so far.
//!
//! The [`super::batcher`] feeds a reply's pending tokens into the shared
//! batch. When the logits after them come back, the reply picks its next
//! token, turns it into text, reasoning or tool calls for its caller, and
//! queues the token to be fed in the next step. Its end-of-turn token is
//! fed after the caller has its answer, so the next turn finds it cached.

use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use tokio_util::sync::CancellationToken;

use super::coalesce::{Gone, Outbox};
use super::formats::{self, Format, Ids, Piece, Splitter};
use super::speculate::DraftGate;
use super::utf8::Utf8Stream;
use super::vision::Picture;
use super::{echo, pieces, repetition, sampling::Picker};
use hearth_core::chat::{ChatRequest, FinishReason, Priority, ProviderError, StreamEvent, Usage};

/// Why a reply ended early: an error, or the caller stopped listening.
pub(super) enum Stop {
    Error(ProviderError),
    Gone,
}

impl From<Gone> for Stop {
    fn from(_: Gone) -> Self {
        Stop::Gone
    }
}

impl From<ProviderError> for Stop {
    fn from(e: ProviderError) -> Self {
        Stop::Error(e)
    }
}

/// Whether a reply still needs the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Running,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Reading,
    Generating,
    /// The caller has its answer; the end-of-turn token is being kept.
    Closing,
}

/// What a reply was given when it was admitted (see `Generator::start`).
pub(super) struct Admitted {
    pub request: ChatRequest,
    pub sampler: Picker,
    pub splitter: Splitter,
    pub seq: usize,
    /// The prompt's tokens not already in the sequence.
    pub unread: Vec<LlamaToken>,
    /// The pictures among them, placed by their position in the sequence.
    pub pictures: Vec<Picture>,
    pub usage: Usage,
    /// Most tokens the reply may generate.
    pub budget: usize,
    pub started: Instant,
}

pub(super) struct Reply<'m> {
    model: &'m LlamaModel,
    format: &'static dyn Format,
    /// Whether control tokens are written out as text (the format's say).
    special_tokens: bool,
    seq: usize,
    request: ChatRequest,
    cancel: CancellationToken,
    outbox: Outbox,
    sampler: Picker,
    splitter: Splitter,
    phase: Phase,
    /// Tokens to decode into the sequence, in order, from `fed` on.
    feed: Vec<LlamaToken>,
    fed: usize,
    /// Pictures among the prompt's tokens still to be shown.
    pictures: Vec<Picture>,
    ids: Ids,
    text: Utf8Stream,
    generated: Vec<LlamaToken>,
    usage: Usage,
    budget: usize,
    reasoning_budget: usize,
    reasoned: usize,
    started: Instant,
    /// What its drafts have earned (see [`DraftGate`]).
    drafts: DraftGate,
    /// The text sent since the last call, its tail (see [`super::echo`]).
    said: String,
}

impl<'m> Reply<'m> {
    pub(super) fn new(
        model: &'m LlamaModel,
        format: &'static dyn Format,
        a: Admitted,
        cancel: CancellationToken,
        outbox: Outbox,
    ) -> Self {
        let reasoning_budget = reasoning_budget(&a.request.sampling, a.budget);
        Self {
            model,
            format,
            special_tokens: format.syntax().special_tokens,
            seq: a.seq,
            request: a.request,
            cancel,
            outbox,
            sampler: a.sampler,
            splitter: a.splitter,
            phase: Phase::Reading,
            feed: a.unread,
            fed: 0,
            pictures: a.pictures,
            ids: Ids::random(),
            text: Utf8Stream::default(),
            generated: Vec::new(),
            usage: a.usage,
            budget: a.budget,
            reasoning_budget,
            reasoned: 0,
            started: a.started,
            drafts: DraftGate::default(),
            said: String::new(),
        }
    }

    pub(super) fn seq(&self) -> usize {
        self.seq
    }

    pub(super) fn conversation(&self) -> &str {
        &self.request.conversation
    }

    pub(super) fn priority(&self) -> Priority {
        self.request.priority
    }

    /// Whether the reply is still reading its prompt.
    pub(super) fn is_reading(&self) -> bool {
        self.phase == Phase::Reading
    }

    /// The tokens still to be decoded into the sequence.
    pub(super) fn pending(&self) -> &[LlamaToken] {
        &self.feed[self.fed..]
    }

    /// The picture that starts at position `pos` of the sequence.
    pub(super) fn picture_at(&self, pos: usize) -> Option<&Picture> {
        self.pictures.iter().find(|p| p.at == pos)
    }

    /// How many tokens from position `pos` on come before the next
    /// picture (all of them when none is left).
    pub(super) fn text_from(&self, pos: usize) -> usize {
        self.pictures
            .iter()
            .filter(|p| p.at >= pos)
            .map(|p| p.at - pos)
            .min()
            .unwrap_or(usize::MAX)
    }

    /// The picture at `pos` is in the sequence: its run is fed.
    pub(super) fn shown(&mut self, pos: usize) -> usize {
        let Some(i) = self.pictures.iter().position(|p| p.at == pos) else {
            return 0;
        };
        let n = self.pictures.swap_remove(i).run.len();
        self.fed(n);
        n
    }

    /// Whether the reply is generating (not reading, not closing).
    pub(super) fn is_generating(&self) -> bool {
        self.phase == Phase::Generating
    }

    /// Tokens the reply may still generate.
    pub(super) fn tokens_left(&self) -> usize {
        self.budget.saturating_sub(self.generated.len())
    }

    /// Most tokens to draft for this reply now: what its drafts have earned
    /// (see [`DraftGate`]), within what it may still generate.
    pub(super) fn draft_room(&self) -> usize {
        self.drafts
            .room(self.generated.len())
            .min(self.tokens_left())
    }

    /// `n` drafted tokens were put in the batch after the pending ones.
    pub(super) fn drafted(&mut self, n: usize) {
        self.usage.drafted_tokens += n as u32;
    }

    /// Of `drafted` tokens, `accepted` were kept.
    pub(super) fn draft_checked(&mut self, drafted: usize, accepted: usize) {
        self.drafts.checked(drafted, accepted, self.generated.len());
    }

    /// A drafted token was what the reply picked: it is in the sequence,
    /// and the pick after it comes from the logits at its batch index.
    pub(super) fn draft_accepted(&mut self) -> Status {
        self.usage.accepted_tokens += 1;
        self.fed(1)
    }

    /// Whether the logits after the pending tokens are wanted.
    pub(super) fn wants_logits(&self) -> bool {
        self.phase != Phase::Closing
    }

    /// `n` pending tokens are now in the sequence. A closing reply whose
    /// last token is in is done.
    pub(super) fn fed(&mut self, n: usize) -> Status {
        self.fed += n;
        if self.fed == self.feed.len() {
            self.feed.clear();
            self.fed = 0;
            if self.phase == Phase::Closing {
                return Status::Done;
            }
        }
        Status::Running
    }

    /// Ends the reply if its caller cancelled it (not once it is closing:
    /// the caller already has its answer).
    pub(super) fn check_cancelled(&mut self) -> Status {
        if self.phase != Phase::Closing && self.cancel.is_cancelled() {
            tracing::info!(
                tokens = self.generated.len(),
                "reply cancelled by its caller; its sequence is free"
            );
            return self.end(Ok(FinishReason::Cancelled), None);
        }
        Status::Running
    }

    /// A decode that held this reply's tokens failed.
    pub(super) fn fail(&mut self, error: ProviderError) -> Status {
        if self.phase == Phase::Closing {
            tracing::debug!("end-of-turn token not kept: {error}");
            return Status::Done;
        }
        self.end(Err(Stop::Error(error)), None)
    }

    /// The logits after the pending tokens are at batch index `idx`: picks
    /// the next token and tells the caller what it means.
    pub(super) fn on_logits(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> Status {
        if self.phase == Phase::Reading {
            self.usage.prompt_ms = self.started.elapsed().as_secs_f64() * 1e3;
            self.started = Instant::now();
            self.phase = Phase::Generating;
        }
        if self.generated.len() >= self.budget {
            return self.end(Ok(FinishReason::Length), None);
        }
        // `pick` also accepts the token into the chain (grammar included);
        // accepting it again would corrupt the grammar.
        let token = match self.sampler.pick(self.model, ctx, idx) {
            Ok(token) => token,
            Err(e) => return self.end(Err(Stop::Error(e)), None),
        };
        if self.model.vocab().is_eog(token) {
            return self.end(Ok(FinishReason::Stop), Some(token));
        }
        match self.take(token) {
            Ok(None) => Status::Running,
            Ok(Some(finish)) => self.end(Ok(finish), None),
            Err(stop) => self.end(Err(stop), None),
        }
    }

    /// Takes a generated token: its text goes to the caller, the token into
    /// the feed. Returns why the reply ends here, if it does.
    fn take(&mut self, token: LlamaToken) -> Result<Option<FinishReason>, Stop> {
        self.generated.push(token);
        if self.say(token)? {
            return Ok(Some(FinishReason::Stop));
        }
        self.feed.push(token);
        if self.splitter.is_in_reasoning() {
            self.reasoned += 1;
            if self.reasoned >= self.reasoning_budget
                && let Some(close) = self.format.close_reasoning()
            {
                // The reasoning is closed for the model, which answers.
                tracing::info!(reasoned = self.reasoned, "reasoning budget spent; closed");
                for forced in self.model.vocab().tokenize(close.as_bytes(), false, true) {
                    self.generated.push(forced);
                    self.say(forced)?;
                    self.feed.push(forced);
                }
                self.reasoned = 0;
                return Ok(None);
            }
        }
        if !self.splitter.is_in_call() && repetition::is_looping(&self.generated) {
            tracing::info!(tokens = self.generated.len(), "reply was looping; stopped");
            return Ok(Some(FinishReason::Repetition));
        }
        Ok(None)
    }

    /// Passes a token's text through the splitter. True at a stop string.
    fn say(&mut self, token: LlamaToken) -> Result<bool, Stop> {
        let piece = self
            .text
            .push(&pieces::piece(self.model, token, self.special_tokens));
        let mut stop = false;
        for part in self.splitter.push(&piece) {
            stop |= self.forward(part)?;
        }
        Ok(stop)
    }

    /// Sends one decided piece of output. Returns true at a stop string.
    fn forward(&mut self, part: Piece) -> Result<bool, Stop> {
        match part {
            Piece::Content(t) => {
                self.said.push_str(&t);
                echo::keep_tail(&mut self.said);
                self.outbox.push(StreamEvent::TextDelta(t))?
            }
            Piece::Reasoning(t) => self.outbox.push(StreamEvent::ReasoningDelta(t))?,
            Piece::Call { text, closed } => {
                if echo::copies_system(&self.said, &self.request.messages) {
                    tracing::info!(
                        "the reply copied its system text into a tool call; the call is dropped and the reply ends"
                    );
                    return Ok(true);
                }
                self.said.clear();
                let tools = self.request.offered_tools();
                let mut calls = self.format.parse(&text, tools, &mut self.ids);
                if !closed && (calls.calls.is_empty() || !calls.malformed.is_empty()) {
                    // Cut short: what could not be read is the cut, not a
                    // fault of the model's to name.
                    calls.malformed = vec![format!(
                        "the reply ended inside a tool call (cut at the token limit): {}",
                        formats::excerpt(text.trim())
                    )];
                }
                for call in calls.calls {
                    self.outbox.push(StreamEvent::ToolCall(call))?;
                }
                for problem in calls.malformed {
                    tracing::warn!("model produced an invalid tool call: {problem}");
                    self.outbox.push(StreamEvent::MalformedCall(problem))?;
                }
                if !calls.text.is_empty() {
                    self.outbox.push(StreamEvent::TextDelta(calls.text))?;
                }
            }
            Piece::Stop => return Ok(true),
        }
        Ok(false)
    }

    /// Sends the closing event. With `end_of_turn`, the reply goes on to
    /// keep that token in its sequence.
    fn end(
        &mut self,
        result: Result<FinishReason, Stop>,
        end_of_turn: Option<LlamaToken>,
    ) -> Status {
        let closing = match result.and_then(|finish| self.wrap_up(finish)) {
            Ok(event) => event,
            Err(Stop::Error(e)) => StreamEvent::Error(e),
            Err(Stop::Gone) => {
                tracing::info!(
                    tokens = self.generated.len(),
                    "reply cancelled by its caller (it stopped listening); its sequence is free"
                );
                return Status::Done;
            }
        };
        if self.outbox.push(closing).is_err() {
            return Status::Done;
        }
        match end_of_turn {
            Some(token) => {
                // The template writes it after the reply in the next prompt;
                // in the sequence it keeps the runs after it reusable.
                self.feed = vec![token];
                self.fed = 0;
                self.phase = Phase::Closing;
                Status::Running
            }
            None => Status::Done,
        }
    }

    /// Sends what the splitter still holds; the `Done` event to send.
    fn wrap_up(&mut self, finish: FinishReason) -> Result<StreamEvent, Stop> {
        let rest = self.text.finish();
        let mut tail = self.splitter.push(&rest);
        tail.extend(match finish {
            FinishReason::Length => self.splitter.finish_cut(),
            _ => self.splitter.finish(),
        });
        for part in tail {
            self.forward(part)?;
        }
        self.outbox.flush()?;
        let mut usage = self.usage;
        usage.completion_tokens = self.generated.len() as u32;
        if self.phase == Phase::Generating {
            usage.generation_ms = self.started.elapsed().as_secs_f64() * 1e3;
        }
        tracing::debug!(?usage, ?finish, "reply done");
        Ok(StreamEvent::Done { usage, finish })
    }
}

/// Tokens a reply may reason before its reasoning is closed: the
/// configured budget, else three quarters of the reply's, and always
/// leaving room for an answer.
fn reasoning_budget(sampling: &hearth_core::chat::SamplingParams, budget: usize) -> usize {
    let room = budget.saturating_sub(budget / 4).max(1);
    match sampling.max_reasoning_tokens as usize {
        0 => room,
        n => n.min(room),
    }
}
