//! The engine thread: owns the llama.cpp backend, model and context.
//!
//! It sizes the context and GPU offload for this machine, loads the model,
//! reports readiness (or the error) once, then serves jobs — interactive
//! before background, up to one per KV sequence decoded together (see
//! [`super::batcher`]) — until every [`super::Engine`] handle is gone and
//! the queue is empty. Before it stops it writes the KV cache of its
//! conversations to disk.

use std::num::NonZeroU32;
use std::sync::mpsc::{self as std_mpsc, TryRecvError};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use std::sync::Arc;

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaModel, RopeType};

use super::backends::{self, Backends};
use super::batcher::Batcher;
use super::cache::{CHECKPOINT_EVERY, CacheSettings, Fingerprint, SeqCache};
use super::embed::Embedder;
use super::formats::{self, ModelFamily};
use super::generate::{Admission, Generator, Reuse};
use super::hardware::{self, Fit, FitInput};
use super::pieces;
use super::queue::{PriorityQueue, Waiting};
use super::speculate::setup::{DraftContext, can_speculate, drafter, load_draft_model};
use super::template::{self, ChatTemplate};
use super::vision::Vision;
use super::{EngineError, EngineSettings, Job, ModelInfo, ProgressFn, Work, model_file};

pub(super) fn run(
    settings: EngineSettings,
    progress: Option<ProgressFn>,
    ready: std_mpsc::SyncSender<Result<Ready, EngineError>>,
    jobs: std_mpsc::Receiver<Work>,
    (waiting, board): (Arc<Waiting>, Arc<crate::cache::CacheBoard>),
) {
    super::log::route_to_tracing();
    let fail = |e: EngineError| {
        let _ = ready.send(Err(e));
    };
    let Ok((backend, (model, template, fit, family))) = start(&settings, progress).map_err(&fail)
    else {
        return;
    };
    let threads = hardware::thread_count(settings.threads);
    let slots = settings.slots.max(1);
    let params = context_params(&settings, &fit, threads);
    let Ok(mut ctx) = model.new_context(&backend, params).map_err(|e| {
        tracing::debug!("context creation failed: {e}");
        fail(EngineError::Context {
            n_ctx: fit.n_ctx_seq,
            gpu_layers: fit.gpu_layers,
        })
    }) else {
        return;
    };
    let n_ctx_seq = ctx.n_ctx() / slots;
    let Ok(vision) = projector(&settings, &model, threads, &fit).map_err(&fail) else {
        return;
    };
    let reuse = reuse_policy(&settings, &model);
    let window = sliding_window(&model);
    let checkpoints = checkpoints(&settings, window);
    let on_gpu = fit.gpu_layers > model.n_layer();
    let Ok(draft) =
        load_draft_model(&backend, &settings.speculation, &model, on_gpu).map_err(&fail)
    else {
        return;
    };
    let allowed = can_speculate(&model, window, settings.swa_full);
    let context = draft_context(&settings, &fit, n_ctx_seq, threads);
    let v_transposed = !context.flash_attention; // llama.cpp's layout without it
    let Ok(drafter) = drafter(&backend, &settings, allowed, draft.as_ref(), context).map_err(&fail)
    else {
        return;
    };
    let info = model_info(
        &settings,
        &model,
        (&template, &fit, family, vision.is_some()),
        (threads, n_ctx_seq),
        (&reuse, drafter.describe()),
    );
    tracing::info!(?info, "model loaded");
    let mut cache =
        seq_cache(&settings, &model, (n_ctx_seq, v_transposed), checkpoints).with_board(board);
    let handed = (info, model.clone(), template.clone());
    if ready.send(Ok(handed)).is_err() {
        return;
    }
    let generator = Generator::of(&settings, (&model, &template, family), (reuse, window));
    let batcher = batcher(&settings, checkpoints).with_drafter(drafter);
    let inflow = &mut Inflow {
        jobs: &jobs,
        embedder: &mut Embedder::new(&backend, &model, threads),
        waiting: &waiting,
        vision,
    };
    serve(&mut ctx, &mut cache, &generator, batcher, inflow);
    cache.persist_all(&mut ctx);
    tracing::debug!("engine worker stopped");
}

/// llama.cpp's backends (GPU modules and RPC servers included) and the
/// model, loaded.
fn start(
    settings: &EngineSettings,
    progress: Option<ProgressFn>,
) -> Result<(Arc<LlamaBackend>, Loaded), EngineError> {
    let backend_error = |e: String| EngineError::Backend(e);
    let backends = backends::load(settings.backends_dir.as_deref(), &settings.rpc_servers)
        .map_err(|e| backend_error(e.to_string()))?;
    let backend = super::shared_backend::backend()?;
    let loaded = load(&backend, backends, settings, progress)?;
    Ok((backend, loaded))
}

/// The draft model's context: the engine's, sized and threaded alike.
fn draft_context(
    settings: &EngineSettings,
    fit: &Fit,
    n_ctx_seq: u32,
    threads: i32,
) -> DraftContext {
    DraftContext {
        n_ctx_seq,
        slots: settings.slots.max(1),
        n_batch: settings.batch_size,
        threads,
        flash_attention: settings.flash_attention.unwrap_or(fit.gpu_layers > 0),
    }
}

/// Checkpoints kept per conversation: a window-size cache forgets what is
/// behind the window, and a checkpoint brings an earlier position back.
fn checkpoints(settings: &EngineSettings, window: Option<usize>) -> usize {
    match window {
        Some(_) if !settings.swa_full => settings.swa_checkpoints as usize,
        _ => 0,
    }
}

/// The vision projector, when `[model] mmproj` names one.
fn projector(
    settings: &EngineSettings,
    model: &LlamaModel,
    threads: i32,
    fit: &Fit,
) -> Result<Option<Vision>, EngineError> {
    let Some(path) = settings.mmproj.as_deref() else {
        return Ok(None);
    };
    let gpu = fit.gpu_layers > 0;
    Vision::load(path, model, threads, gpu, settings.image_limits).map(Some)
}

/// The batcher: prompts are read in checkpoint-sized chunks when
/// checkpoints are on.
fn batcher<'m>(settings: &EngineSettings, checkpoints: usize) -> Batcher<'m> {
    let prompt_chunk = match checkpoints {
        0 => settings.batch_size as usize,
        _ => CHECKPOINT_EVERY,
    };
    Batcher::new(settings.batch_size as usize, prompt_chunk)
}

/// What `hearth doctor`, `/status` and the API tell about the loaded model.
fn model_info(
    settings: &EngineSettings,
    model: &LlamaModel,
    (template, fit, family, vision): (&ChatTemplate, &Fit, ModelFamily, bool),
    (threads, n_ctx_seq): (i32, u32),
    (reuse, drafting): (&Reuse, String),
) -> ModelInfo {
    ModelInfo {
        path: settings.model_path.clone(),
        architecture: model
            .meta_val_str("general.architecture")
            .unwrap_or_default(),
        n_params: model.n_params(),
        n_ctx_train: model.n_ctx_train(),
        n_ctx: n_ctx_seq,
        slots: settings.slots.max(1),
        threads,
        n_layers: model.n_layer(),
        gpu_layers: fit.gpu_layers,
        template_origin: template.origin().to_string(),
        family,
        family_configured: settings.tool_format.is_some(),
        reuse_min_chunk: match reuse {
            Reuse::Moved { min_chunk } => *min_chunk as u32,
            Reuse::Off | Reuse::Prefix => 0,
        },
        vision,
        drafting,
    }
}

/// The free memory of the GPUs (llama.cpp spreads the layers over all of
/// them) that can be used at all, capped by `[engine] gpu_memory_mb`. A
/// device whose memory cannot even be read (a CUDA context that found no
/// room) is left out: any use of it aborts inside llama.cpp.
fn usable_gpu(backends: &Backends, cap_mb: Option<u64>) -> Option<u64> {
    let mut usable = backends
        .gpus()
        .filter(|g| g.total_bytes > 0)
        .map(|g| g.free_bytes)
        .peekable();
    usable.peek()?;
    let free: u64 = usable.sum();
    Some(cap_mb.map_or(free, |mb| free.min(mb << 20)))
}

/// Loads the weights with `gpu_layers` on the GPU; with none, no GPU is
/// touched at all (no device in the model's list, so the context creates no
/// GPU backend and allocates nothing there).
pub(super) fn load_model(
    backend: &LlamaBackend,
    path: &std::path::Path,
    gpu_layers: u32,
    progress: Option<ProgressFn>,
) -> Result<LlamaModel, EngineError> {
    let mut params = LlamaModelParams::default().with_n_gpu_layers(gpu_layers);
    if gpu_layers == 0 {
        params = params
            .with_devices(&[])
            .map_err(|e| EngineError::Backend(e.to_string()))?;
    }
    if let Some(mut report) = progress {
        params = params.with_progress_callback(move |p| {
            report(p);
            true
        });
    }
    LlamaModel::load_from_file(backend, path, &params).map_err(|e| {
        tracing::debug!("load_from_file with {gpu_layers} GPU layers: {e}");
        EngineError::ModelLoad {
            path: path.to_path_buf(),
        }
    })
}

/// The context for `slots` conversations of the fitted size, on `threads`.
fn context_params(settings: &EngineSettings, fit: &Fit, threads: i32) -> LlamaContextParams {
    let slots = settings.slots.max(1);
    LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(fit.n_ctx_seq * slots))
        .with_n_seq_max(slots)
        .with_n_batch(settings.batch_size)
        .with_n_ubatch(settings.batch_size)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_swa_full(settings.swa_full)
        .with_flash_attention_policy(if settings.flash_attention.unwrap_or(fit.gpu_layers > 0) {
            llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED
        } else {
            llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED
        })
}

/// How much of a cached prompt a new one may reuse with this model.
fn reuse_policy(settings: &EngineSettings, model: &LlamaModel) -> Reuse {
    match (settings.prompt_cache, settings.reuse_min_chunk) {
        (false, _) => Reuse::Off,
        (true, 0) => Reuse::Prefix,
        (true, _) if !cells_can_move(model) => {
            tracing::debug!("this model's cached cells cannot move; reusing prefixes only");
            Reuse::Prefix
        }
        (true, n) => Reuse::Moved {
            min_chunk: n as usize,
        },
    }
}

/// The conversations' KV cache: slots in the context, RAM and disk behind them.
fn seq_cache(
    settings: &EngineSettings,
    model: &LlamaModel,
    (n_ctx_seq, v_transposed): (u32, bool),
    checkpoints: usize,
) -> SeqCache {
    let fingerprint = Fingerprint {
        model_file: settings
            .model_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        model_size: std::fs::metadata(&settings.model_path).map_or(0, |m| m.len()),
        n_params: model.n_params(),
        n_ctx_seq,
    };
    SeqCache::new(
        CacheSettings {
            slots: settings.slots.max(1) as usize,
            ram_budget: settings.ram_cache_bytes,
            disk_budget: settings.disk_cache_bytes,
            disk_dir: settings.kv_dir.clone(),
            checkpoints,
            v_transposed,
        },
        fingerprint,
    )
}

/// Where the engine thread's work comes from: chat jobs to queue, and
/// embeddings and exclusive work, done as they arrive.
struct Inflow<'a, 'm> {
    jobs: &'a std_mpsc::Receiver<Work>,
    embedder: &'a mut Embedder<'m>,
    waiting: &'a Waiting,
    /// The projector, when the model sees images.
    vision: Option<Vision>,
}

impl Inflow<'_, '_> {
    /// Queues a chat job, or makes embeddings at once.
    fn take(&mut self, work: Work, queue: &mut PriorityQueue<Job>) {
        match work {
            Work::Chat(job) => queue.push(job.request.priority, job),
            Work::Embed(job) => self.embedder.serve(job),
            Work::Exclusive(work) => work(),
        }
    }
}

/// Serves jobs until every handle is gone and nothing is queued.
fn serve<'m>(
    ctx: &mut LlamaContext<'_>,
    cache: &mut SeqCache,
    generator: &Generator<'m>,
    mut batcher: Batcher<'m>,
    work: &mut Inflow<'_, '_>,
) {
    let waiting = work.waiting;
    let mut queue = PriorityQueue::default();
    let mut open = true;
    loop {
        // Everything that has arrived competes by priority.
        loop {
            match work.jobs.try_recv() {
                Ok(job) => work.take(job, &mut queue),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        // Requests join while a sequence is free of replies in flight; a
        // conversation's next request waits for its reply in flight.
        // One that opens like a prompt being read waits a step for it.
        let mut held = Vec::new();
        while batcher.len() < cache.n_slots() {
            let Some(job) = queue.pop_first(|j| !batcher.serves(&j.request.conversation)) else {
                break;
            };
            waiting.remove(job.request.priority);
            let busy = batcher.busy();
            // Only a model whose conversations share prompts waits for one.
            let reading = if generator.shares() {
                batcher.reading(cache)
            } else {
                Vec::new()
            };
            match generator.start(ctx, cache, job, (&busy, &reading), work.vision.as_ref()) {
                Admission::Reply(reply) => batcher.add(*reply),
                Admission::Ended => {}
                Admission::Wait(job) => held.push(*job),
            }
        }
        for job in held {
            waiting.add(job.request.priority);
            queue.push(job.request.priority, job);
        }
        waiting.set_running(batcher.len());
        if !batcher.is_empty() {
            let before = batcher.len();
            batcher.step(ctx, cache, work.vision.as_mut());
            waiting.set_running(batcher.len());
            if batcher.len() < before {
                // A reply ended: its sequence's size is final for now.
                cache.post();
            }
        } else if !queue.is_empty() {
            continue;
        } else if !open {
            break;
        } else {
            match work.jobs.recv() {
                Ok(job) => work.take(job, &mut queue),
                Err(_) => open = false,
            }
        }
    }
}

/// Whether cached cells can take new positions: llama.cpp re-rotates keys
/// only for plain RoPE, and a sliding-window cache has dropped the cells a
/// move would need (it aborts the process when asked to shift one). A
/// recurrent state cannot move at all.
fn cells_can_move(model: &LlamaModel) -> bool {
    matches!(model.rope_type(), Some(RopeType::Norm | RopeType::NeoX))
        && !model.is_recurrent()
        && !model.is_hybrid()
        && sliding_window(model).is_none()
        && architecture(model) != "step35"
}

/// The positions a sliding-window layer attends to (Gemma 2 and 3,
/// gpt-oss), if the model has such layers.
fn sliding_window(model: &LlamaModel) -> Option<usize> {
    model
        .meta_val_str(&format!("{}.attention.sliding_window", architecture(model)))
        .ok()
        .map(|w| w.trim().parse().unwrap_or(usize::MAX))
}

fn architecture(model: &LlamaModel) -> String {
    model
        .meta_val_str("general.architecture")
        .unwrap_or_default()
}

type Loaded = (Arc<LlamaModel>, Arc<ChatTemplate>, Fit, ModelFamily);

/// What a started engine hands its [`super::Engine`]: the model for
/// tokenising and the template for rendering, off the worker.
pub(super) type Ready = (ModelInfo, Arc<LlamaModel>, Arc<ChatTemplate>);

fn load(
    backend: &LlamaBackend,
    backends: &Backends,
    settings: &EngineSettings,
    progress: Option<ProgressFn>,
) -> Result<Loaded, EngineError> {
    let path = &settings.model_path;
    // Check the file ourselves first: llama.cpp is handed only a plausible GGUF.
    let metadata = model_file::inspect(path)?;
    let (source, origin) = template::choose(
        settings.chat_template.as_deref(),
        metadata.chat_template_for_tools(),
    )?;
    let hw_ram = hardware::Hardware::available_ram();
    let fit = hardware::fit(&FitInput {
        model_bytes: std::fs::metadata(path).map_or(0, |m| m.len()),
        n_layers: metadata.arch_uint("block_count").unwrap_or(1) as u32,
        kv_bytes_per_token: metadata.kv_bytes_per_token().unwrap_or(128 << 10),
        n_ctx_train: metadata
            .context_length()
            .unwrap_or(4096)
            .min(u64::from(u32::MAX)) as u32,
        requested_ctx: settings.context_size,
        slots: settings.slots.max(1),
        gpu_free: usable_gpu(backends, settings.gpu_memory_mb),
        available_ram: hw_ram,
        gpu_layers: settings.gpu_layers,
    });
    tracing::debug!(?fit, "hardware fit");

    let mut fit = fit;
    let model = match load_model(backend, path, fit.gpu_layers, progress) {
        Ok(model) => model,
        Err(_) if fit.gpu_layers > 0 => {
            // llama.cpp says only that loading failed; the file itself is
            // checked above, so it is the device that had no room.
            tracing::warn!(
                "the model did not load with {} layers on the GPU (the device could not hold its weights); loading it on the CPU instead. Fix: lower `[model] gpu_layers`, set it to \"auto\", set `[engine] gpu_memory_mb` below what the device can really give, or free GPU memory",
                fit.gpu_layers
            );
            fit.gpu_layers = 0;
            load_model(backend, path, 0, None)?
        }
        Err(e) => return Err(e),
    };
    let vocab = model.vocab();
    // A model without a BOS (or EOS) token answers -1 for it: no text.
    let bos = pieces::text(&model, vocab.bos());
    let eos = pieces::text(&model, vocab.eos());
    let family = settings
        .tool_format
        .unwrap_or_else(|| formats::detect::detect(&source));
    let template = ChatTemplate::new(source, origin, &bos, &eos)?;
    Ok((Arc::new(model), Arc::new(template), fit, family))
}
