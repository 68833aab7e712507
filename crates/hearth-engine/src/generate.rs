//! Admitting a request: render the prompt, find its conversation's
//! sequence, keep what it already holds.
//!
//! The conversation's sequence already holds the tokens of its last turn
//! (see [`super::cache`]). What the new prompt can keep of them (the common
//! prefix, and runs a template moved, see [`reuse`]) stays; the rest is
//! left to the [`super::batcher`] to decode, alongside other replies.
//! Generated tokens stay in the sequence as sampled, followed by the
//! end-of-turn token, so the next turn finds them.

use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::cache::reuse::{self, Plan};
use super::cache::{SeqCache, arrange};
use super::coalesce::Outbox;
use super::control::ControlTexts;
use super::formats::{Format, ModelFamily};
use super::reply::{Admitted, Reply};
use super::template::{ChatTemplate, Turn};
use super::vision::{Picture, Vision, image_marker, whole_pictures};
use super::{Job, pieces, sampling};
use hearth_core::chat::{ChatRequest, FinishReason, ProviderError, StreamEvent, Usage};

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
    /// `[engine] share_prompts`.
    sharing: bool,
    /// Where an image goes in the rendered prompt: random, so no message
    /// can forge one.
    image_marker: String,
}

/// A prompt as text and as tokens, with the pictures among them.
struct Rendered {
    text: String,
    tokens: Vec<LlamaToken>,
    pictures: Vec<Picture>,
}

/// What became of a job handed to [`Generator::start`].
pub(super) enum Admission<'m> {
    /// It joins the batch.
    Reply(Box<Reply<'m>>),
    /// It ended here: cancelled, or refused with the error sent.
    Ended,
    /// It waits for a prompt being read now, whose tokens it will copy.
    Wait(Box<Job>),
}

/// Whether a prompt is better off waiting for one of `reading` to be read:
/// one of them opens with most of it (half or more, and more than a few
/// tokens beyond the `available` ones the cache already holds).
fn waits_for(tokens: &[LlamaToken], reading: &[Vec<LlamaToken>], available: usize) -> bool {
    reading.iter().any(|other| {
        let shared = tokens.iter().zip(other).take_while(|(a, b)| a == b).count();
        shared >= available + 8 && shared * 2 >= tokens.len()
    })
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

impl<'m> Generator<'m> {
    pub(super) fn new(
        model: &'m LlamaModel,
        template: &'m ChatTemplate,
        format: &'static dyn Format,
        n_batch: usize,
        reuse: Reuse,
    ) -> Self {
        let bos_text = pieces::text(model, model.vocab().bos());
        Self {
            model,
            template,
            format,
            n_batch: n_batch.max(1),
            reuse,
            bos_text,
            control: ControlTexts::of(model),
            window: None,
            sharing: true,
            image_marker: image_marker(),
        }
    }

    /// The generator of a loaded model as `settings` ask (`batch_size`,
    /// `share_prompts`), with its sliding window if it has one.
    pub(super) fn of(
        settings: &super::EngineSettings,
        (model, template, family): (&'m LlamaModel, &'m ChatTemplate, ModelFamily),
        (reuse, window): (Reuse, Option<usize>),
    ) -> Self {
        let n_batch = settings.batch_size as usize;
        Self::new(
            model,
            template,
            super::formats::format(family),
            n_batch,
            reuse,
        )
        .with_window(window)
        .with_sharing(settings.share_prompts)
    }

    /// For a model with sliding-window layers of `window` positions.
    pub(super) fn with_window(mut self, window: Option<usize>) -> Self {
        self.window = window;
        self
    }

    /// Admits a job: renders and tokenises its prompt, gives its
    /// conversation a sequence (never one of `busy`), and keeps what the
    /// sequence already holds of the prompt. A new conversation whose
    /// prompt is mostly one of `reading` (the prompts being read now) waits
    /// until that one is in the cache, then copies it instead of reading it
    /// again (see [`super::cache`]'s sharing).
    pub(super) fn start(
        &self,
        ctx: &mut LlamaContext<'_>,
        cache: &mut SeqCache,
        job: Job,
        (busy, reading): (&[usize], &[Vec<LlamaToken>]),
        vision: Option<&Vision>,
    ) -> Admission<'m> {
        let Job {
            request,
            cancel,
            events,
        } = job;
        let mut outbox = Outbox::new(events);
        if cancel.is_cancelled() {
            tracing::info!(
                tokens = 0,
                "reply cancelled by its caller before it began; nothing was decoded"
            );
            let _ = outbox.push(StreamEvent::Done {
                usage: Usage::default(),
                finish: FinishReason::Cancelled,
            });
            return Admission::Ended;
        }
        let started = Instant::now();
        let rendered = match self.prompt(&request, vision) {
            Ok(p) => p,
            Err(e) => {
                let _ = outbox.push(StreamEvent::Error(e));
                return Admission::Ended;
            }
        };
        if self.shares()
            && !cache.knows(&request.conversation)
            && waits_for(&rendered.tokens, reading, cache.shareable(&rendered.tokens))
        {
            tracing::debug!(conversation = %request.conversation, "waiting for a prompt being read that opens alike");
            return Admission::Wait(Box::new(Job {
                request,
                cancel,
                events: outbox.into_sender(),
            }));
        }
        match self.admit(ctx, cache, request, busy, rendered, started) {
            Ok(admitted) => Admission::Reply(Box::new(Reply::new(
                self.model,
                self.format,
                admitted,
                cancel,
                outbox,
            ))),
            Err(e) => {
                let _ = outbox.push(StreamEvent::Error(e));
                Admission::Ended
            }
        }
    }

    /// Whether a new conversation may copy another's prompt (`[engine]
    /// share_prompts`).
    pub(super) fn with_sharing(mut self, sharing: bool) -> Self {
        self.sharing = sharing;
        self
    }

    /// Whether this model's conversations can start from each other's
    /// prompts: sharing and the prompt cache are on, and no layer has a
    /// sliding window.
    pub(super) fn shares(&self) -> bool {
        self.sharing && self.reuse != Reuse::Off && self.window.is_none()
    }

    /// The request's prompt, rendered and tokenised.
    fn prompt(
        &self,
        request: &ChatRequest,
        vision: Option<&Vision>,
    ) -> Result<Rendered, ProviderError> {
        let vocab = self.model.vocab();
        let tools = request.offered_tools();
        let format = self.format;
        // A known family gets the tools through its template; under
        // hearth's own protocol the system prompt describes them.
        let native = format.family() != ModelFamily::Xml;
        let messages = self.control.messages(&request.messages);
        let messages = self.mark_images(messages, vision)?;
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
        let mut pieces = prompt.split(self.image_marker.as_str());
        let mut tokens = vocab.tokenize(pieces.next().unwrap_or("").as_bytes(), add_bos, true);
        let mut pictures = Vec::new();
        let mut images = request.messages.iter().flat_map(|m| &m.images);
        for piece in pieces {
            let (Some(vision), Some(image)) = (vision, images.next()) else {
                return Err(ProviderError::Failed(
                    "the chat template placed an image hearth did not send".into(),
                ));
            };
            let picture = vision.picture(image, tokens.len())?;
            tokens.extend_from_slice(&picture.run);
            pictures.push(picture);
            tokens.extend(vocab.tokenize(piece.as_bytes(), false, true));
        }
        if images.next().is_some() {
            return Err(ProviderError::Failed(
                "the chat template left out an image of the conversation".into(),
            ));
        }
        tracing::trace!(prompt, n = tokens.len(), "rendered prompt");
        Ok(Rendered {
            text: prompt,
            tokens,
            pictures,
        })
    }

    /// The messages with a marker where each image goes (before the text
    /// of its message); refused when the model cannot see or a message
    /// has too many.
    fn mark_images<'a>(
        &self,
        messages: std::borrow::Cow<'a, [hearth_core::chat::ChatMessage]>,
        vision: Option<&Vision>,
    ) -> Result<std::borrow::Cow<'a, [hearth_core::chat::ChatMessage]>, ProviderError> {
        if messages.iter().all(|m| m.images.is_empty()) {
            return Ok(messages);
        }
        let Some(vision) = vision else {
            return Err(ProviderError::InvalidRequest(
                "this model cannot see images; fix: set `[model] mmproj` to its vision projector, or route images to a provider that takes them".into(),
            ));
        };
        let mut messages = messages.into_owned();
        for m in messages.iter_mut().filter(|m| !m.images.is_empty()) {
            if m.images.len() > vision.per_message() {
                return Err(ProviderError::InvalidRequest(format!(
                    "{} images in one message, over the limit of {} (`[model] images_per_message`)",
                    m.images.len(),
                    vision.per_message()
                )));
            }
            let text = m.content.replace(self.image_marker.as_str(), "");
            m.content = format!("{}{text}", self.image_marker.repeat(m.images.len()));
        }
        Ok(std::borrow::Cow::Owned(messages))
    }

    fn admit(
        &self,
        ctx: &mut LlamaContext<'_>,
        cache: &mut SeqCache,
        request: ChatRequest,
        busy: &[usize],
        rendered: Rendered,
        started: Instant,
    ) -> Result<Admitted, ProviderError> {
        let Rendered {
            text: prompt,
            tokens,
            mut pictures,
        } = rendered;
        let tools = request.offered_tools();
        let format = self.format;
        // Checked before anything reaches llama.cpp.
        let sampler = sampling::Picker::new(
            self.model,
            &request.sampling,
            tools,
            (request.tool_choice, request.most_calls()),
            format,
        )?;
        let n_ctx_seq = ctx.n_ctx() as usize / cache.n_slots();
        if tokens.is_empty() {
            return Err(ProviderError::InvalidRequest("the prompt is empty".into()));
        }
        if tokens.len() + 1 > n_ctx_seq {
            return Err(ProviderError::ContextOverflow {
                needed: tokens.len() as u32,
                limit: n_ctx_seq as u32,
            });
        }
        let mut usage = Usage {
            prompt_tokens: tokens.len() as u32,
            ..Usage::default()
        };
        let (seq, mut origin) = cache.acquire(ctx, &request.conversation, busy);
        // A conversation with nothing cached starts from another's prefix.
        if self.shares() && cache.share_prefix(ctx, seq, &tokens) > 0 {
            origin = hearth_core::chat::CacheOrigin::Shared;
        }
        let reuse = match self.reuse {
            // A moved run's fills are decoded as tokens: never a picture's.
            Reuse::Moved { .. } if !pictures.is_empty() => Reuse::Prefix,
            reuse => reuse,
        };
        let kept = self.keep(ctx, cache, seq, &tokens, reuse);
        let kept = whole_pictures(ctx, cache, seq, &mut pictures, kept);
        usage.cached_tokens = kept as u32;
        usage.cache_origin = if kept > 0 {
            origin
        } else {
            hearth_core::chat::CacheOrigin::Fresh
        };
        let covered = cache.tokens_mut(seq).len();
        tracing::debug!(conversation = %request.conversation, ?origin, cached = kept, decoded = tokens.len() - kept, "prompt planned");
        let syntax = format.syntax();
        let in_reasoning = syntax
            .reasoning
            .is_some_and(|(open, _)| prompt.trim_end().ends_with(open.trim_end()));
        let splitter = format.splitter(
            in_reasoning,
            request.sampling.stop.clone(),
            !tools.is_empty(),
        );
        let budget = (request.sampling.max_tokens as usize).min(n_ctx_seq - tokens.len());
        Ok(Admitted {
            request,
            sampler,
            splitter,
            seq,
            unread: tokens[covered..].to_vec(),
            pictures,
            usage,
            budget,
            started,
        })
    }

    /// Leaves sequence `seq` holding what it can keep of `tokens` (the
    /// common prefix, moved runs and the fills between them), and the
    /// cache listing it. Returns how many tokens were reused.
    fn keep(
        &self,
        ctx: &mut LlamaContext<'_>,
        cache: &mut SeqCache,
        seq: usize,
        tokens: &[LlamaToken],
        reuse: Reuse,
    ) -> usize {
        let cached = cache.tokens_mut(seq);
        let n_cached = cached.len();
        let plan = match reuse {
            Reuse::Off => Plan::default(),
            Reuse::Prefix => reuse::plan(cached, tokens, 0),
            Reuse::Moved { min_chunk } => reuse::plan(cached, tokens, min_chunk),
        };
        let (mut keep, mut covered) = (plan.kept(), plan.covered());
        if !arrange(ctx, seq, &plan, tokens, n_cached, self.n_batch) {
            tracing::debug!(
                seq,
                keep,
                "KV removal or move refused; clearing the sequence"
            );
            let _ = ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
            (keep, covered) = (0, 0);
        } else if let Some(window) = self.window
            && keep < n_cached
            && ctx.kv_cache_seq_pos_min(seq as i32) > keep.saturating_sub(window) as i32
        {
            // A sliding-window cache reuses cells that fell out of the
            // window; cut back this far, the window before the prefix's end
            // is gone, and the next token would attend to what is left.
            // An earlier window saved on the way brings it back.
            match cache.restore_checkpoint(ctx, seq, keep) {
                Some(pos) => {
                    tracing::debug!(seq, keep, pos, "window checkpoint restored");
                    (keep, covered) = (pos, pos);
                }
                None => {
                    tracing::debug!(
                        seq,
                        keep,
                        window,
                        "the sliding window before the kept prefix is gone; reading the prompt whole"
                    );
                    let _ = ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
                    (keep, covered) = (0, 0);
                }
            }
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
        cache.trim_checkpoints(seq, covered);
        let cached = cache.tokens_mut(seq);
        cached.clear();
        cached.extend_from_slice(&tokens[..covered]);
        keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[i32]) -> Vec<LlamaToken> {
        v.iter().map(|&x| LlamaToken(x)).collect()
    }

    #[test]
    fn a_prompt_waits_only_for_one_that_gives_it_most_of_itself() {
        let prompt = t(&(0..20).collect::<Vec<_>>());
        let alike = t(&(0..16).chain(100..110).collect::<Vec<_>>());
        let other = t(&(0..4).chain(100..120).collect::<Vec<_>>());
        assert!(waits_for(&prompt, std::slice::from_ref(&alike), 0));
        assert!(
            !waits_for(&prompt, std::slice::from_ref(&other), 0),
            "4 tokens"
        );
        assert!(
            !waits_for(&prompt, std::slice::from_ref(&alike), 12),
            "the cache already has 12 of the 16"
        );
        assert!(!waits_for(&prompt, &[], 0), "nothing is being read");
        let long = t(&(0..100).collect::<Vec<_>>());
        assert!(
            !waits_for(&long, std::slice::from_ref(&alike), 0),
            "16 of 100 tokens: not worth a wait"
        );
    }
}
