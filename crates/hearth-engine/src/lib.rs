//! hearth-engine: llama.cpp in-process, owned by one worker thread, and the
//! [`models`] it runs. The only hearth crate that links llama.cpp; it knows
//! the chat vocabulary of `hearth-core` and nothing above it.
//!
//! llama.cpp's backend, model and context live on a single OS thread
//! ([`worker`]). Everything else talks to it through [`Engine`], a cheap
//! handle that queues requests (interactive before background) and hands
//! back a stream of events. One decode runs at a time, which is what a
//! single GPU (or a small CPU) wants.
//!
//! The parts: [`model_file`] finds and checks the GGUF, [`gguf`] reads its
//! header, [`template`] renders the chat prompt, [`cache`] keeps a KV
//! sequence per conversation (in RAM and on disk when evicted),
//! [`generate`] runs one reply, [`formats`] knows each model family's way
//! of calling tools and reasoning (its grammar and its output splitter),
//! [`sampling`] builds the sampler chain, [`control`] keeps message text
//! from reading as the model's control tokens, [`hardware`] sizes threads, layers
//! and context.

pub mod backends;
mod batcher;
mod cache;
mod call_grammar;
mod coalesce;
mod control;
mod echo;
mod embed;
pub mod embedding_model;
mod error;
pub mod formats;
mod generate;
pub mod gguf;
pub mod hardware;
#[cfg(feature = "dynamic-backends")]
mod idle_modules;
mod image_size;
mod log;
pub mod model_file;
mod pieces;
mod prompt_size;
mod queue;
mod repetition;
mod reply;
mod sampling;
mod shared_backend;
mod speculate;
pub mod template;
pub mod tojson;
mod utf8;
mod vision;
mod worker;

pub mod models;
pub mod rpc;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;

use llama_cpp_2::model::LlamaModel;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use cache::reuse;
pub use cache::{CacheBoard, Cached, Tier};
pub use embedding_model::{EmbeddingInfo, EmbeddingModel, EmbeddingSettings};
pub use error::EngineError;
pub use queue::Waiting;
pub use speculate::Speculation;
pub use vision::ImageLimits;

use hearth_core::chat::{ChatRequest, ChatStream, ProviderError, StreamEvent};
use hearth_core::model::GpuLayers;

/// What the worker needs to load a model and run it.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    pub model_path: PathBuf,
    /// `[model] chat_template`: overrides the model's own when set.
    pub chat_template: Option<String>,
    /// `[model] tool_format`: the family to speak; `None` recognises it
    /// from the template.
    pub tool_format: Option<formats::ModelFamily>,
    /// Tokens per conversation; 0: the model's training context, capped by
    /// what fits in memory.
    pub context_size: u32,
    /// 0: one per physical core.
    pub threads: u32,
    pub batch_size: u32,
    /// Flash attention; `None`: on when layers are offloaded to a GPU (on
    /// the CPU it slows decoding as the context fills).
    pub flash_attention: Option<bool>,
    pub gpu_layers: GpuLayers,
    /// KV-cache sequences kept in the context, one per conversation.
    pub slots: u32,
    /// Bytes of evicted sequences kept in RAM before they spill to disk.
    pub ram_cache_bytes: usize,
    /// Bytes of saved sequences kept on disk.
    pub disk_cache_bytes: u64,
    /// Where saved sequences live; `None` keeps none across restarts.
    pub kv_dir: Option<PathBuf>,
    /// Reuse cached prompt prefixes (turned off only to measure without).
    pub prompt_cache: bool,
    /// Shortest cached run moved to a new position; 0: the prefix only.
    pub reuse_min_chunk: u32,
    /// `[engine] share_prompts`: a new conversation copies another's
    /// cached prompt prefix.
    pub share_prompts: bool,
    /// `[engine] backends_dir`: GPU backend modules kept apart from the binary.
    pub backends_dir: Option<PathBuf>,
    /// `[engine] rpc_servers`: `host:port` of RPC servers whose devices
    /// join this process's.
    pub rpc_servers: Vec<String>,
    /// `[engine] gpu_memory_mb`: the most GPU memory hearth plans to use
    /// (weights, KV cache and margin), whatever is free; `None`: what is free.
    pub gpu_memory_mb: Option<u64>,
    /// `[engine] speculative`: where drafts of a reply's next tokens come
    /// from, checked in the decode that reads the token before them.
    pub speculation: Speculation,
    /// `[engine] draft_tokens`: most tokens drafted at a time.
    pub draft_tokens: u32,
    /// `[engine] swa_full`: a sliding-window model keeps every position.
    pub swa_full: bool,
    /// `[engine] swa_checkpoints`: with a window-size cache, checkpoints
    /// kept per conversation.
    pub swa_checkpoints: u32,
    /// `[model] mmproj`: the vision projector made for this model; `None`
    /// reads text only.
    pub mmproj: Option<PathBuf>,
    /// `[model] image_max_mb`, `image_max_pixels`, `images_per_message`.
    pub image_limits: ImageLimits,
}

/// Facts about the loaded model and how it was placed.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub path: PathBuf,
    pub architecture: String,
    pub n_params: u64,
    pub n_ctx_train: u32,
    /// Context per conversation.
    pub n_ctx: u32,
    pub slots: u32,
    pub threads: i32,
    /// Repeating layers; the output layer is one more when offloading.
    pub n_layers: u32,
    pub gpu_layers: u32,
    pub template_origin: String,
    /// The family whose chat format the engine speaks.
    pub family: formats::ModelFamily,
    /// Whether it was named by `tool_format` rather than recognised.
    pub family_configured: bool,
    /// Shortest run of cached tokens moved to where a template put it; 0
    /// when only common prefixes are reused (so configured, or this
    /// model's cached cells cannot move).
    pub reuse_min_chunk: u32,
    /// Whether a projector lets the model see images.
    pub vision: bool,
    /// How replies are drafted ahead (`[engine] speculative`), in words.
    pub drafting: String,
}

/// Reports model loading progress in `0.0..=1.0`.
pub type ProgressFn = Box<dyn FnMut(f32) + Send>;

/// What the engine thread is sent.
enum Work {
    Chat(Job),
    Embed(embed::EmbedJob),
    /// Other work that must not run while the model decodes (speech on
    /// the same GPU or cores): run between two decode steps.
    Exclusive(Box<dyn FnOnce() + Send>),
}

/// One queued request.
struct Job {
    request: ChatRequest,
    cancel: CancellationToken,
    events: mpsc::Sender<StreamEvent>,
}

/// A handle to the engine worker. Dropping it (or [`Engine::shutdown`])
/// lets the worker finish its queue, save the KV cache and stop.
#[derive(Debug)]
pub struct Engine {
    jobs: Option<std_mpsc::Sender<Work>>,
    thread: Option<JoinHandle<()>>,
    info: ModelInfo,
    /// The loaded model, shared for tokenising only (thread-safe in
    /// llama.cpp); released before the worker, which frees the backend.
    model: Option<Arc<LlamaModel>>,
    /// The chat template, for counting a prompt's tokens off the worker.
    template: Arc<template::ChatTemplate>,
    waiting: Arc<Waiting>,
    /// What the KV cache holds, posted by the worker.
    board: Arc<cache::CacheBoard>,
}

impl Engine {
    /// Starts the worker thread and waits until the model is loaded.
    /// Blocking: call it from `spawn_blocking` in async code.
    pub fn start(
        settings: EngineSettings,
        progress: Option<ProgressFn>,
    ) -> Result<Self, EngineError> {
        let (jobs, job_rx) = std_mpsc::channel();
        let (ready_tx, ready_rx) = std_mpsc::sync_channel(1);
        let waiting = Arc::new(Waiting::default());
        let board = Arc::new(cache::CacheBoard::default());
        let shared = (waiting.clone(), board.clone());
        let thread = std::thread::Builder::new()
            .name("hearth-engine".into())
            .spawn(move || worker::run(settings, progress, ready_tx, job_rx, shared))
            .map_err(|e| EngineError::Backend(format!("cannot start the engine thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok((info, model, template))) => Ok(Self {
                jobs: Some(jobs),
                thread: Some(thread),
                info,
                model: Some(model),
                template,
                waiting,
                board,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(EngineError::WorkerGone)
            }
        }
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Tokens `text` takes with this model's tokenizer (special tokens
    /// parsed, no BOS added).
    pub fn count_tokens(&self, text: &str) -> Option<usize> {
        let model = self.model.as_ref()?;
        Some(model.vocab().tokenize(text.as_bytes(), false, true).len())
    }

    /// Whether the grammar of `family`'s calls for `tools` takes `text`
    /// whole (see [`sampling::grammar_accepts`]).
    pub fn grammar_accepts(
        &self,
        family: formats::ModelFamily,
        tools: &[hearth_core::chat::ToolSpec],
        most_calls: usize,
        text: &str,
    ) -> Result<bool, ProviderError> {
        let model = self
            .model
            .as_ref()
            .ok_or(ProviderError::Failed(EngineError::WorkerGone.to_string()))?;
        sampling::grammar_accepts(model, formats::format(family), (tools, most_calls), text)
    }

    /// The tokens of `text` (special tokens parsed, no BOS added).
    pub fn tokens(&self, text: &str) -> Option<Vec<i32>> {
        let model = self.model.as_ref()?;
        Some(
            model
                .vocab()
                .tokenize(text.as_bytes(), false, true)
                .into_iter()
                .map(|t| t.0)
                .collect(),
        )
    }

    /// The token a reply ends with (the model's end of sequence).
    pub fn end_of_turn(&self) -> Option<i32> {
        Some(self.model.as_ref()?.vocab().eos().0)
    }

    /// Queues a request; its reply streams back on the returned stream.
    /// Requests submitted and not yet taken up, by priority.
    pub fn waiting(&self) -> Arc<Waiting> {
        self.waiting.clone()
    }

    /// What the KV cache holds: each conversation's tier and size.
    pub fn cache_board(&self) -> Arc<cache::CacheBoard> {
        self.board.clone()
    }

    pub fn submit(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let (events, rx) = mpsc::channel(256);
        let priority = request.priority;
        let job = Job {
            request,
            cancel,
            events,
        };
        // Counted before it is sent: the worker may take it up at once.
        self.waiting.add(priority);
        let sent = self
            .jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(Work::Chat(job)).is_ok());
        if sent {
            ChatStream::new(rx)
        } else {
            self.waiting.remove(priority);
            ChatStream::failed(ProviderError::Failed(EngineError::WorkerGone.to_string()))
        }
    }

    /// Embeddings of `inputs` (mean-pooled, of length 1), one per input,
    /// and the tokens they took; stopped between two inputs once `cancel`
    /// is. Blocking: call it from `spawn_blocking`.
    pub fn embed(
        &self,
        inputs: Vec<String>,
        cancel: CancellationToken,
    ) -> Result<(Vec<Vec<f32>>, u32), ProviderError> {
        let (answer, rx) = std_mpsc::sync_channel(1);
        let gone = || ProviderError::Failed(EngineError::WorkerGone.to_string());
        let jobs = self.jobs.as_ref().ok_or_else(gone)?;
        jobs.send(Work::Embed(embed::EmbedJob {
            inputs,
            answer,
            cancel,
        }))
        .map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())?
    }

    /// Runs `work` on the engine's thread between two decode steps, so no
    /// reply decodes while it runs (speech on the same cores or GPU);
    /// resolves to its result. Every reply in flight pauses for its length.
    pub fn exclusive<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> impl std::future::Future<Output = Result<T, ProviderError>> + Send + 'static {
        let (answer, rx) = tokio::sync::oneshot::channel();
        // A panic in `work` must not take the engine's thread with it.
        let sent = self.jobs.as_ref().is_some_and(|jobs| {
            jobs.send(Work::Exclusive(Box::new(move || {
                let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
                let _ = answer.send(done);
            })))
            .is_ok()
        });
        async move {
            let gone = || ProviderError::Failed(EngineError::WorkerGone.to_string());
            if !sent {
                return Err(gone());
            }
            rx.await.map_err(|_| gone())?.map_err(|_| {
                ProviderError::Failed("work run beside the engine failed unexpectedly".into())
            })
        }
    }

    /// Stops taking requests, lets the worker finish and save its cache,
    /// and waits for it.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.model = None;
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("conversation", &self.request.conversation)
            .finish()
    }
}
