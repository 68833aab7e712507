//! The engine thread: owns the llama.cpp backend, model and context.
//!
//! It loads the model, reports readiness (or the error) once, then serves
//! jobs one at a time until every [`super::Engine`] handle is dropped.

use std::num::NonZeroU32;
use std::sync::mpsc as std_mpsc;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;

use super::generate::{Generator, KvState};
use super::template::{self, ChatTemplate};
use super::{EngineError, EngineSettings, Job, ModelInfo, ProgressFn, hardware, model_file};

pub(super) fn run(
    settings: EngineSettings,
    progress: Option<ProgressFn>,
    ready: std_mpsc::SyncSender<Result<ModelInfo, EngineError>>,
    jobs: std_mpsc::Receiver<Job>,
) {
    super::log::route_to_tracing();
    let backend = match LlamaBackend::init() {
        Ok(b) => b,
        Err(e) => {
            let _ = ready.send(Err(EngineError::Backend(e.to_string())));
            return;
        }
    };
    let loaded = match load(&backend, &settings, progress) {
        Ok(l) => l,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let (model, template, threads) = loaded;
    let n_ctx = effective_context(settings.context_size, model.n_ctx_train());
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(settings.batch_size)
        .with_n_ubatch(settings.batch_size)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_flash_attention_policy(if settings.flash_attention {
            llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED
        } else {
            llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED
        });
    let mut ctx = match model.new_context(&backend, params) {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!("context creation failed: {e}");
            let _ = ready.send(Err(EngineError::Context { n_ctx }));
            return;
        }
    };
    let info = ModelInfo {
        path: settings.model_path.clone(),
        architecture: model
            .meta_val_str("general.architecture")
            .unwrap_or_default(),
        n_params: model.n_params(),
        n_ctx_train: model.n_ctx_train(),
        n_ctx,
        threads,
        template_origin: template.origin().to_string(),
    };
    tracing::info!(?info, "model loaded");
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let generator = Generator::new(&model, &template, settings.batch_size as usize);
    let mut kv = KvState::default();
    while let Ok(job) = jobs.recv() {
        generator.serve(&mut ctx, &mut kv, job);
    }
    tracing::debug!("engine worker stopping");
}

type Loaded = (LlamaModel, ChatTemplate, i32);

fn load(
    backend: &LlamaBackend,
    settings: &EngineSettings,
    progress: Option<ProgressFn>,
) -> Result<Loaded, EngineError> {
    let path = &settings.model_path;
    // Check the file ourselves first: llama.cpp is handed only a plausible GGUF.
    let metadata = model_file::inspect(path)?;
    let (source, origin) =
        template::choose(settings.chat_template.as_deref(), metadata.chat_template())?;

    let mut params = LlamaModelParams::default();
    if let Some(mut report) = progress {
        params = params.with_progress_callback(move |p| {
            report(p);
            true
        });
    }
    let model = LlamaModel::load_from_file(backend, path, &params).map_err(|e| {
        tracing::debug!("load_from_file: {e}");
        EngineError::ModelLoad { path: path.clone() }
    })?;
    let vocab = model.vocab();
    let piece = |t| String::from_utf8_lossy(&vocab.token_to_piece(t, true, None)).into_owned();
    let bos = piece(vocab.bos());
    let eos = piece(vocab.eos());
    let template = ChatTemplate::new(source, origin, &bos, &eos)?;
    Ok((model, template, hardware::thread_count(settings.threads)))
}

/// The context size: the configured one, else the model's, never more than
/// the model was trained for.
fn effective_context(configured: u32, n_ctx_train: u32) -> u32 {
    let train = if n_ctx_train == 0 { 4096 } else { n_ctx_train };
    if configured == 0 {
        train
    } else {
        configured.min(train)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn context_is_capped_by_training_context() {
        assert_eq!(super::effective_context(0, 8192), 8192);
        assert_eq!(super::effective_context(4096, 8192), 4096);
        assert_eq!(super::effective_context(32768, 8192), 8192);
        assert_eq!(super::effective_context(0, 0), 4096);
    }
}
