//! The local engine: llama.cpp in-process, owned by one worker thread.
//!
//! llama.cpp's model and context live on a single OS thread
//! ([`worker`]). Everything else talks to it through [`Engine`], a cheap
//! handle that queues requests and hands back a stream of events. One decode
//! runs at a time, which is what a single GPU (or a small CPU) wants.
//!
//! The parts: [`model_file`] finds and checks the GGUF, [`gguf`] reads its
//! header, [`template`] renders the chat prompt, [`generate`] runs one reply,
//! [`sampling`] builds the sampler chain, [`hardware`] sizes threads.

mod error;
mod generate;
pub mod gguf;
pub mod hardware;
mod log;
pub mod model_file;
mod repetition;
mod sampling;
pub mod template;
mod utf8;
mod worker;

use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use error::EngineError;

use crate::config::Config;
use crate::providers::{ChatRequest, ChatStream, ProviderError};

/// What the worker needs to load a model.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    pub model_path: PathBuf,
    /// `[model] chat_template`: overrides the model's own when set.
    pub chat_template: Option<String>,
    /// 0: the model's training context.
    pub context_size: u32,
    /// 0: one per physical core.
    pub threads: u32,
    pub batch_size: u32,
    pub flash_attention: bool,
}

impl EngineSettings {
    /// Settings from the config, with the model file located.
    pub fn from_config(config: &Config) -> Result<Self, EngineError> {
        Ok(Self {
            model_path: model_file::locate(&config.model.path, &config.data_dir)?,
            chat_template: config.model.chat_template.clone(),
            context_size: config.model.context_size,
            threads: config.model.threads,
            batch_size: config.model.batch_size,
            flash_attention: config.model.flash_attention.enabled(),
        })
    }
}

/// Facts about the loaded model.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub path: PathBuf,
    pub architecture: String,
    pub n_params: u64,
    pub n_ctx_train: u32,
    pub n_ctx: u32,
    pub threads: i32,
    pub template_origin: String,
}

/// Reports model loading progress in `0.0..=1.0`.
pub type ProgressFn = Box<dyn FnMut(f32) + Send>;

/// One queued request.
struct Job {
    request: ChatRequest,
    cancel: CancellationToken,
    events: mpsc::Sender<crate::providers::StreamEvent>,
}

/// A handle to the engine worker. Dropping the last handle stops the worker
/// once its current request ends.
#[derive(Debug)]
pub struct Engine {
    jobs: std_mpsc::Sender<Job>,
    info: ModelInfo,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("conversation", &self.request.conversation)
            .finish()
    }
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
        std::thread::Builder::new()
            .name("hearth-engine".into())
            .spawn(move || worker::run(settings, progress, ready_tx, job_rx))
            .map_err(|e| EngineError::Backend(format!("cannot start the engine thread: {e}")))?;
        let info = ready_rx.recv().map_err(|_| EngineError::WorkerGone)??;
        Ok(Self { jobs, info })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Queues a request; its reply streams back on the returned stream.
    pub fn submit(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let (events, rx) = mpsc::channel(256);
        match self.jobs.send(Job {
            request,
            cancel,
            events,
        }) {
            Ok(()) => ChatStream::new(rx),
            Err(_) => {
                ChatStream::failed(ProviderError::Failed(EngineError::WorkerGone.to_string()))
            }
        }
    }
}
