//! One reply: render the prompt, decode what is new, sample until done.
//!
//! The conversation's sequence already holds the tokens of its last turn
//! (see [`super::cache`]). What the new prompt can keep of them (the common
//! prefix, and runs a template moved, see [`reuse`]) stays; the rest is
//! decoded, in `n_batch` chunks. Generated tokens stay in the sequence as
//! sampled, followed by the end-of-turn token, so the next turn finds them.

use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc::Sender;
use tokio_util::sync::CancellationToken;

use super::cache::reuse::{self, Plan};
use super::cache::{SeqCache, arrange};
use super::control::ControlTexts;
use super::formats::{Format, Ids, ModelFamily, Piece};
use super::outbox::{Gone, Outbox};
use super::template::{ChatTemplate, Turn};
use super::utf8::Utf8Stream;
use super::{Job, repetition, sampling};
use crate::chat::{ChatRequest, FinishReason, ProviderError, StreamEvent, ToolSpec, Usage};

pub(super) struct Generator<'m> {
    model: &'m LlamaModel,
    template: &'m ChatTemplate,
    /// The model family's way of calling tools and reasoning.
    format: &'static dyn Format,
    n_batch: usize,
    reuse: Reuse,
    bos_text: String,
    /// The model's control-token texts, defused inside messages.
    control: ControlTexts,
    /// A sliding-window model's window: the cells it keeps before a cut.
    window: Option<usize>,
}

/// How much of a conversation's cached tokens a new prompt may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reuse {
    /// Nothing: every prompt is read whole (only to measure the cache).
    Off,
    /// The common prefix (models whose cached cells cannot move).
    Prefix,
    /// The prefix and moved runs of at least `min_chunk` tokens.
    Moved { min_chunk: usize },
}

/// Why a reply ended early: an error, or the caller stopped listening.
enum Stop {
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

impl<'m> Generator<'m> {
    pub(super) fn new(
        model: &'m LlamaModel,
        template: &'m ChatTemplate,
        format: &'static dyn Format,
        n_batch: usize,
        reuse: Reuse,
    ) -> Self {
        let vocab = model.vocab();
        let bos_text =
            String::from_utf8_lossy(&vocab.token_to_piece(vocab.bos(), true, None)).into_owned();
        Self {
            model,
            template,
            format,
            n_batch: n_batch.max(1),
            reuse,
            bos_text,
            control: ControlTexts::of(model),
            window: None,
        }
    }

    /// For a model with sliding-window layers of `window` positions.
    pub(super) fn with_window(mut self, window: Option<usize>) -> Self {
        self.window = window;
        self
    }

    /// Runs one job to its end and sends the closing event.
    pub(super) fn serve(&self, ctx: &mut LlamaContext<'_>, cache: &mut SeqCache, job: Job) {
        let Job {
            request,
            cancel,
            events,
        } = job;
        let mut ended = None;
        let closing = match self.run(ctx, cache, &request, &cancel, &events, &mut ended) {
            Ok((usage, finish)) => StreamEvent::Done { usage, finish },
            Err(Stop::Error(e)) => StreamEvent::Error(e),
            Err(Stop::Gone) => return,
        };
        let _ = events.blocking_send(closing);
        // The template writes the end-of-turn token after the reply in the
        // next prompt; in the sequence it keeps the runs after it reusable.
        // Decoded once the caller has its answer.
        if let Some((seq, token)) = ended {
            let mut batch = LlamaBatch::new(1, 1);
            if let Err(Stop::Error(e)) = append(ctx, cache, seq, &mut batch, token) {
                tracing::debug!("end-of-turn token not kept: {e}");
            }
        }
    }

    fn run(
        &self,
        ctx: &mut LlamaContext<'_>,
        cache: &mut SeqCache,
        request: &ChatRequest,
        cancel: &CancellationToken,
        events: &Sender<StreamEvent>,
        ended: &mut Option<(usize, LlamaToken)>,
    ) -> Result<(Usage, FinishReason), Stop> {
        let mut usage = Usage::default();
        if cancel.is_cancelled() {
            return Ok((usage, FinishReason::Cancelled));
        }
        let vocab = self.model.vocab();
        let tools = request.offered_tools();
        let format = self.format;
        // Checked before anything reaches llama.cpp.
        let mut sampler = sampling::Picker::new(
            self.model,
            &request.sampling,
            tools,
            request.tool_choice,
            format,
        )?;
        // A known family gets the tools through its template; under
        // hearth's own protocol the system prompt describes them.
        let native = format.family() != ModelFamily::Xml;
        let messages = self.control.messages(&request.messages);
        let prompt = self
            .template
            .render_turn(&Turn {
                format,
                messages: &messages,
                tools: if native { tools } else { &[] },
                reasoning: request.sampling.reasoning,
                add_generation_prompt: true,
            })
            .map_err(|e| ProviderError::InvalidRequest(e.to_string()))?;
        let add_bos = vocab.should_add_bos()
            && (self.bos_text.is_empty() || !prompt.starts_with(&self.bos_text));
        let tokens = vocab.tokenize(prompt.as_bytes(), add_bos, true);
        tracing::trace!(prompt, n = tokens.len(), "rendered prompt");
        let n_ctx_seq = ctx.n_ctx() as usize / cache.n_slots();
        if tokens.is_empty() {
            return Err(ProviderError::InvalidRequest("the prompt is empty".into()).into());
        }
        if tokens.len() + 1 > n_ctx_seq {
            return Err(ProviderError::ContextOverflow {
                needed: tokens.len() as u32,
                limit: n_ctx_seq as u32,
            }
            .into());
        }
        usage.prompt_tokens = tokens.len() as u32;

        let started = Instant::now();
        let (seq, origin) = cache.acquire(ctx, &request.conversation);
        let cached = cache.tokens_mut(seq);
        let Some((kept, mut logits_at)) = self.read_prompt(ctx, seq, cached, &tokens, cancel)?
        else {
            return Ok((usage, FinishReason::Cancelled));
        };
        usage.cached_tokens = kept as u32;
        usage.cache_origin = if kept > 0 {
            origin
        } else {
            crate::chat::CacheOrigin::Fresh
        };
        usage.prompt_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(conversation = %request.conversation, ?origin, cached = kept, decoded = tokens.len() - kept, "prompt read");

        let started = Instant::now();
        let budget = (request.sampling.max_tokens as usize).min(n_ctx_seq - tokens.len());
        let reasoning_budget = reasoning_budget(&request.sampling, budget);
        let mut reasoned = 0;
        let syntax = format.syntax();
        let in_reasoning = syntax
            .reasoning
            .is_some_and(|(open, _)| prompt.trim_end().ends_with(open.trim_end()));
        let mut filter = format.splitter(
            in_reasoning,
            request.sampling.stop.clone(),
            !tools.is_empty(),
        );
        let mut ids = Ids::random();
        let mut text = Utf8Stream::default();
        let mut generated: Vec<LlamaToken> = Vec::new();
        let mut batch = LlamaBatch::new(1, 1);
        let mut outbox = Outbox::new(events);
        let finish = 'generation: loop {
            if cancel.is_cancelled() {
                break FinishReason::Cancelled;
            }
            if generated.len() >= budget {
                break FinishReason::Length;
            }
            // `sample` also accepts the token into the chain (grammar
            // included); accepting it again would corrupt the grammar.
            let token = sampler.pick(ctx, logits_at);
            if vocab.is_eog(token) {
                *ended = Some((seq, token));
                break FinishReason::Stop;
            }
            generated.push(token);
            let piece = text.push(&vocab.token_to_piece(token, syntax.special_tokens, None));
            for part in filter.push(&piece) {
                if self.forward(part, tools, &mut ids, &mut outbox)? {
                    break 'generation FinishReason::Stop;
                }
            }
            if filter.is_in_reasoning() {
                reasoned += 1;
                if reasoned >= reasoning_budget
                    && let Some(close) = format.close_reasoning()
                {
                    // The reasoning is closed for the model, which answers.
                    tracing::info!(reasoned, "reasoning budget spent; closed");
                    append(ctx, cache, seq, &mut batch, token)?;
                    for forced in vocab.tokenize(close.as_bytes(), false, true) {
                        generated.push(forced);
                        let piece =
                            text.push(&vocab.token_to_piece(forced, syntax.special_tokens, None));
                        for part in filter.push(&piece) {
                            self.forward(part, tools, &mut ids, &mut outbox)?;
                        }
                        append(ctx, cache, seq, &mut batch, forced)?;
                    }
                    reasoned = 0;
                    logits_at = 0;
                    continue;
                }
            }
            if !filter.is_in_call() && repetition::is_looping(&generated) {
                tracing::info!(tokens = generated.len(), "reply was looping; stopped");
                break FinishReason::Repetition;
            }
            append(ctx, cache, seq, &mut batch, token)?;
            logits_at = 0;
        };
        let rest = text.finish();
        let mut tail = filter.push(&rest);
        tail.extend(filter.finish());
        for part in tail {
            self.forward(part, tools, &mut ids, &mut outbox)?;
        }
        outbox.flush()?;
        usage.completion_tokens = generated.len() as u32;
        usage.generation_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(?usage, ?finish, "reply done");
        Ok((usage, finish))
    }

    /// Sends one decided piece of output. Returns true at a stop string.
    fn forward(
        &self,
        part: Piece,
        tools: &[ToolSpec],
        ids: &mut Ids,
        outbox: &mut Outbox<'_>,
    ) -> Result<bool, Stop> {
        match part {
            Piece::Content(t) => outbox.push(StreamEvent::TextDelta(t))?,
            Piece::Reasoning(t) => outbox.push(StreamEvent::ReasoningDelta(t))?,
            Piece::Call { text, closed } => {
                let calls = self.format.parse(&text, tools, ids);
                if calls.calls.is_empty() && calls.malformed.is_empty() && !closed {
                    outbox.push(StreamEvent::MalformedCall(
                        "the reply ended inside a tool call (cut at the token limit?)".into(),
                    ))?;
                }
                for call in calls.calls {
                    outbox.push(StreamEvent::ToolCall(call))?;
                }
                for problem in calls.malformed {
                    tracing::warn!("model produced an invalid tool call: {problem}");
                    outbox.push(StreamEvent::MalformedCall(problem))?;
                }
                if !calls.text.is_empty() {
                    outbox.push(StreamEvent::TextDelta(calls.text))?;
                }
            }
            Piece::Stop => return Ok(true),
        }
        Ok(false)
    }

    /// Brings sequence `seq` to hold `tokens`, decoding only what is new.
    /// Returns how many tokens were reused and the batch index of the last
    /// token's logits, or `None` when cancelled.
    fn read_prompt(
        &self,
        ctx: &mut LlamaContext<'_>,
        seq: usize,
        cached: &mut Vec<LlamaToken>,
        tokens: &[LlamaToken],
        cancel: &CancellationToken,
    ) -> Result<Option<(usize, i32)>, Stop> {
        let plan = match self.reuse {
            Reuse::Off => Plan::default(),
            Reuse::Prefix => reuse::plan(cached, tokens, 0),
            Reuse::Moved { min_chunk } => reuse::plan(cached, tokens, min_chunk),
        };
        let (mut keep, mut covered) = (plan.kept(), plan.covered());
        if !arrange(ctx, seq, &plan, tokens, cached.len(), self.n_batch) {
            tracing::debug!(
                seq,
                keep,
                "KV removal or move refused; clearing the sequence"
            );
            let _ = ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
            (keep, covered) = (0, 0);
        } else if let Some(window) = self.window
            && keep < cached.len()
            && ctx.kv_cache_seq_pos_min(seq as i32) > keep.saturating_sub(window) as i32
        {
            // A sliding-window cache reuses cells that fell out of the
            // window; cut back this far, the window before the prefix's end
            // is gone, and the next token would attend to what is left.
            tracing::debug!(
                seq,
                keep,
                window,
                "the sliding window before the kept prefix is gone; reading the prompt whole"
            );
            let _ = ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
            (keep, covered) = (0, 0);
        }
        if !plan.moves.is_empty() && keep > 0 {
            tracing::debug!(
                seq,
                prefix = plan.prefix,
                moved = keep - plan.prefix,
                runs = plan.moves.len(),
                read_between = covered - keep,
                "cached runs moved to where the template put them"
            );
        }
        cached.clear();
        cached.extend_from_slice(&tokens[..covered]);

        let mut batch = LlamaBatch::new(self.n_batch, 1);
        let mut last = 0;
        for chunk in tokens[covered..].chunks(self.n_batch) {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            batch.clear();
            let start = cached.len();
            for (i, &token) in chunk.iter().enumerate() {
                let is_last = start + i + 1 == tokens.len();
                batch
                    .add(token, (start + i) as i32, &[seq as i32], is_last)
                    .map_err(|e| ProviderError::Failed(format!("batch: {e}")))?;
            }
            decode(ctx, cached, seq, &mut batch)?;
            cached.extend_from_slice(chunk);
            last = batch.n_tokens() - 1;
        }
        Ok(Some((keep, last)))
    }
}

/// Tokens a reply may reason before its reasoning is closed: the
/// configured budget, else three quarters of the reply's, and always
/// leaving room for an answer.
fn reasoning_budget(sampling: &crate::chat::SamplingParams, budget: usize) -> usize {
    let room = budget.saturating_sub(budget / 4).max(1);
    match sampling.max_reasoning_tokens as usize {
        0 => room,
        n => n.min(room),
    }
}

/// Decodes one token at the end of sequence `seq` and keeps it there.
fn append(
    ctx: &mut LlamaContext<'_>,
    cache: &mut SeqCache,
    seq: usize,
    batch: &mut LlamaBatch,
    token: LlamaToken,
) -> Result<(), Stop> {
    let at = cache.tokens_mut(seq).len() as i32;
    batch.clear();
    batch
        .add(token, at, &[seq as i32], true)
        .map_err(|e| ProviderError::Failed(format!("batch: {e}")))?;
    decode(ctx, cache.tokens_mut(seq), seq, batch)?;
    cache.tokens_mut(seq).push(token);
    Ok(())
}

fn decode(
    ctx: &mut LlamaContext<'_>,
    cached: &mut Vec<LlamaToken>,
    seq: usize,
    batch: &mut LlamaBatch,
) -> Result<(), Stop> {
    ctx.decode(batch).map_err(|e| {
        // The sequence may hold part of the batch: forget it entirely.
        let _ = ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
        cached.clear();
        Stop::Error(ProviderError::Failed(format!(
            "llama.cpp decode failed: {e}"
        )))
    })
}
