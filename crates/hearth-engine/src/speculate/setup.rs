//! Choosing and loading the drafter for the loaded model.

use std::num::NonZeroU32;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;

use super::{DraftModel, Drafter, Speculation, draft_model};
use crate::{EngineError, EngineSettings};

/// Whether drafts can be dropped from this model's KV cache: not from a
/// recurrent state, and not from a window-size cache (drafted positions
/// may already have pushed older cells out of the window).
pub(crate) fn can_speculate(model: &LlamaModel, window: Option<usize>, swa_full: bool) -> bool {
    !model.is_recurrent() && !model.is_hybrid() && (window.is_none() || swa_full)
}

/// The draft model named by `[engine] draft_model`, loaded beside the
/// target, or `None` when drafts come from elsewhere. All of its layers go
/// to the GPU when all of the target's do.
pub(crate) fn load_draft_model(
    backend: &LlamaBackend,
    speculation: &Speculation,
    target: &LlamaModel,
    on_gpu: bool,
) -> Result<Option<LlamaModel>, EngineError> {
    let Speculation::Model(path) = speculation else {
        return Ok(None);
    };
    let fail = |reason: String| EngineError::DraftModel {
        path: path.clone(),
        reason,
    };
    crate::model_file::inspect(path).map_err(|e| fail(e.to_string()))?;
    let layers = if on_gpu { 999 } else { 0 };
    let model = crate::worker::load_model(backend, path, layers, None)
        .map_err(|_| fail("llama.cpp could not load it".into()))?;
    if let Some(why) = draft_model::vocabulary_mismatch(target, &model) {
        return Err(fail(format!("its vocabulary is not the model's: {why}")));
    }
    Ok(Some(model))
}

/// What the drafter needs of the engine's context.
pub(crate) struct DraftContext {
    pub n_ctx_seq: u32,
    pub slots: u32,
    pub n_batch: u32,
    pub threads: i32,
    pub flash_attention: bool,
}

/// The drafter: off where the model cannot drop drafts (`allowed`), else
/// as configured.
pub(crate) fn drafter<'d>(
    backend: &LlamaBackend,
    settings: &EngineSettings,
    allowed: bool,
    draft: Option<&'d LlamaModel>,
    c: DraftContext,
) -> Result<Drafter<'d>, EngineError> {
    let speculation = &settings.speculation;
    let most = settings.draft_tokens as usize;
    if most == 0 || *speculation == Speculation::Off {
        return Ok(Drafter::Off);
    }
    if !allowed {
        tracing::info!(
            "speculative decoding is off for this model: its KV cache cannot drop drafted tokens (a recurrent state, or a sliding window without `[engine] swa_full`)"
        );
        return Ok(Drafter::Off);
    }
    let Some(model) = draft else {
        return Ok(Drafter::Lookup { most });
    };
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(c.n_ctx_seq * c.slots))
        .with_n_seq_max(c.slots)
        .with_n_batch(c.n_batch)
        .with_n_ubatch(c.n_batch)
        .with_n_threads(c.threads)
        .with_n_threads_batch(c.threads)
        .with_flash_attention_policy(if c.flash_attention {
            llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED
        } else {
            llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED
        });
    let ctx = model.new_context(backend, params).map_err(|e| {
        let path = match speculation {
            Speculation::Model(p) => p.clone(),
            _ => Default::default(),
        };
        EngineError::DraftModel {
            path,
            reason: format!("no context of {} tokens for it: {e}", c.n_ctx_seq),
        }
    })?;
    let model = DraftModel::new(ctx, c.slots as usize, c.n_batch as usize);
    Ok(Drafter::Model {
        model: Box::new(model),
        most,
    })
}
