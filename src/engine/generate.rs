//! One reply: render the prompt, decode what is new, sample until done.
//!
//! The context keeps the tokens of the last request in sequence 0. A new
//! request shares a prefix with it (the earlier turns of the conversation),
//! so only the tokens after the longest common prefix are decoded.

use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::Job;
use super::repetition;
use super::sampling;
use super::template::ChatTemplate;
use super::utf8::Utf8Stream;
use crate::providers::{ChatRequest, FinishReason, ProviderError, StreamEvent, Usage};

/// The tokens currently held in the context's KV cache (sequence 0).
#[derive(Debug, Default)]
pub(super) struct KvState {
    tokens: Vec<LlamaToken>,
}

pub(super) struct Generator<'m> {
    model: &'m LlamaModel,
    template: &'m ChatTemplate,
    n_batch: usize,
    bos_text: String,
}

/// Why a reply failed; `Gone` means the caller stopped listening.
enum Stop {
    Error(ProviderError),
    Gone,
}

impl From<ProviderError> for Stop {
    fn from(e: ProviderError) -> Self {
        Stop::Error(e)
    }
}

impl<'m> Generator<'m> {
    pub(super) fn new(model: &'m LlamaModel, template: &'m ChatTemplate, n_batch: usize) -> Self {
        let vocab = model.vocab();
        let bos_text =
            String::from_utf8_lossy(&vocab.token_to_piece(vocab.bos(), true, None)).into_owned();
        Self {
            model,
            template,
            n_batch: n_batch.max(1),
            bos_text,
        }
    }

    /// Runs one job to its end and sends the closing event.
    pub(super) fn serve(&self, ctx: &mut LlamaContext<'_>, kv: &mut KvState, job: Job) {
        let Job {
            request,
            cancel,
            events,
        } = job;
        let result = self.run(ctx, kv, &request, &cancel, &events);
        let closing = match result {
            Ok((usage, finish)) => StreamEvent::Done { usage, finish },
            Err(Stop::Error(e)) => StreamEvent::Error(e),
            Err(Stop::Gone) => return,
        };
        let _ = events.blocking_send(closing);
    }

    fn run(
        &self,
        ctx: &mut LlamaContext<'_>,
        kv: &mut KvState,
        request: &ChatRequest,
        cancel: &tokio_util::sync::CancellationToken,
        events: &tokio::sync::mpsc::Sender<StreamEvent>,
    ) -> Result<(Usage, FinishReason), Stop> {
        let mut usage = Usage::default();
        if cancel.is_cancelled() {
            return Ok((usage, FinishReason::Cancelled));
        }
        let vocab = self.model.vocab();
        let prompt = self
            .template
            .render(&request.messages, true)
            .map_err(|e| ProviderError::InvalidRequest(e.to_string()))?;
        let add_bos = vocab.should_add_bos()
            && (self.bos_text.is_empty() || !prompt.starts_with(&self.bos_text));
        let tokens = vocab.tokenize(prompt.as_bytes(), add_bos, true);
        tracing::trace!(prompt, add_bos, n = tokens.len(), first = ?tokens.iter().take(8).collect::<Vec<_>>(), "rendered prompt");
        let n_ctx = ctx.n_ctx() as usize;
        if tokens.is_empty() {
            return Err(ProviderError::InvalidRequest("the prompt is empty".into()).into());
        }
        if tokens.len() + 1 > n_ctx {
            return Err(ProviderError::ContextOverflow {
                needed: tokens.len() as u32,
                limit: n_ctx as u32,
            }
            .into());
        }
        usage.prompt_tokens = tokens.len() as u32;

        let started = Instant::now();
        let last_logits = self.read_prompt(ctx, kv, &tokens, cancel)?;
        let Some(mut logits_at) = last_logits else {
            return Ok((usage, FinishReason::Cancelled));
        };
        usage.prompt_ms = started.elapsed().as_secs_f64() * 1e3;

        let started = Instant::now();
        let mut sampler = sampling::chain(&request.sampling, self.model.n_vocab());
        let budget = (request.sampling.max_tokens as usize).min(n_ctx - tokens.len());
        let mut text = Utf8Stream::default();
        let mut generated: Vec<LlamaToken> = Vec::new();
        let mut batch = LlamaBatch::new(1, 1);
        let finish = loop {
            if cancel.is_cancelled() {
                break FinishReason::Cancelled;
            }
            if generated.len() >= budget {
                break FinishReason::Length;
            }
            // `sample` also accepts the token into the chain's state.
            let token = sampler.sample(ctx, logits_at);
            if vocab.is_eog(token) {
                break FinishReason::Stop;
            }
            generated.push(token);
            let delta = text.push(&vocab.token_to_piece(token, false, None));
            if !delta.is_empty() && events.blocking_send(StreamEvent::TextDelta(delta)).is_err() {
                return Err(Stop::Gone);
            }
            if repetition::is_looping(&generated) {
                tracing::info!(tokens = generated.len(), "reply was looping; stopped");
                break FinishReason::Repetition;
            }
            batch.clear();
            let pos = kv.tokens.len() as i32;
            batch
                .add(token, pos, &[0], true)
                .map_err(|e| ProviderError::Failed(format!("batch: {e}")))?;
            self.decode(ctx, kv, &mut batch)?;
            kv.tokens.push(token);
            logits_at = 0;
        };
        let rest = text.finish();
        if !rest.is_empty() && events.blocking_send(StreamEvent::TextDelta(rest)).is_err() {
            return Err(Stop::Gone);
        }
        usage.completion_tokens = generated.len() as u32;
        usage.generation_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(
            prompt_tokens = usage.prompt_tokens,
            prompt_ms = usage.prompt_ms,
            completion_tokens = usage.completion_tokens,
            generation_ms = usage.generation_ms,
            ?finish,
            "reply done"
        );
        Ok((usage, finish))
    }

    /// Brings the KV cache to hold `tokens`, decoding only what is new.
    /// Returns the batch index of the last token's logits, or `None` when
    /// cancelled.
    fn read_prompt(
        &self,
        ctx: &mut LlamaContext<'_>,
        kv: &mut KvState,
        tokens: &[LlamaToken],
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<i32>, Stop> {
        let mut keep = common_prefix(&kv.tokens, tokens);
        if keep == tokens.len() {
            // Everything is cached, but the last token must be decoded again
            // to have logits to sample from.
            keep -= 1;
        }
        let removed = ctx
            .clear_kv_cache_seq(Some(0), Some(keep as u32), None)
            .unwrap_or(false);
        if !removed {
            ctx.clear_kv_cache();
            keep = 0;
        }
        kv.tokens.truncate(keep);
        tracing::debug!(cached = keep, new = tokens.len() - keep, "prompt");

        let mut batch = LlamaBatch::new(self.n_batch, 1);
        let mut last = 0;
        for chunk in tokens[keep..].chunks(self.n_batch) {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            batch.clear();
            let start = kv.tokens.len();
            for (i, &token) in chunk.iter().enumerate() {
                let is_last = start + i + 1 == tokens.len();
                batch
                    .add(token, (start + i) as i32, &[0], is_last)
                    .map_err(|e| ProviderError::Failed(format!("batch: {e}")))?;
            }
            self.decode(ctx, kv, &mut batch)?;
            kv.tokens.extend_from_slice(chunk);
            last = batch.n_tokens() - 1;
        }
        Ok(Some(last))
    }

    fn decode(
        &self,
        ctx: &mut LlamaContext<'_>,
        kv: &mut KvState,
        batch: &mut LlamaBatch,
    ) -> Result<(), Stop> {
        ctx.decode(batch).map_err(|e| {
            // The cache may hold part of the batch: forget it entirely.
            ctx.clear_kv_cache();
            kv.tokens.clear();
            Stop::Error(ProviderError::Failed(format!(
                "llama.cpp decode failed: {e}"
            )))
        })
    }
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
