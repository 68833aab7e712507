//! A sentence-embedding model (memory by meaning) on a thread of its own.
//!
//! It is small (all-MiniLM-L6-v2 is 22M weights) and separate from the
//! chat model: recall can embed a question before a chat model is loaded,
//! and a swap of chat models leaves it alone. It shares llama.cpp's backend
//! with the engine ([`super::shared_backend`]), reads with the file's own
//! pooling and trained length ([`super::embed::Embedder::own_pooling`]),
//! and takes at most [`MOST_THREADS`] threads, so a chat decoding beside
//! it keeps the rest of the machine.

use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;

use hearth_core::chat::ProviderError;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use tokio_util::sync::CancellationToken;

use super::embed::{EmbedJob, Embedder};
use super::{EngineError, backends, hardware, model_file};

/// The most threads an embedding read takes.
pub const MOST_THREADS: i32 = 4;

/// Where the embedding model comes from and what it may use.
#[derive(Debug, Clone)]
pub struct EmbeddingSettings {
    pub path: PathBuf,
    /// `[model] threads` (0: the machine's choice), capped at
    /// [`MOST_THREADS`].
    pub threads: u32,
    /// Where llama.cpp's device modules are (as for the engine).
    pub backends_dir: Option<PathBuf>,
    pub rpc_servers: Vec<String>,
}

/// What the loaded embedding model is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingInfo {
    /// The file's name without `.gguf`: the name `/v1/embeddings` serves.
    pub name: String,
    /// The file's name and size: vectors made by two models never mix.
    pub id: String,
    pub dimensions: usize,
    /// The longest read, in tokens (longer texts are read in pieces).
    pub n_ctx_train: u32,
}

/// A handle to the embedding thread; dropping it stops the thread.
#[derive(Debug)]
pub struct EmbeddingModel {
    jobs: Option<std_mpsc::Sender<EmbedJob>>,
    thread: Option<JoinHandle<()>>,
    info: EmbeddingInfo,
}

impl EmbeddingModel {
    /// Loads the model on its own thread. Blocking: call it from
    /// `spawn_blocking` in async code.
    pub fn start(settings: EmbeddingSettings) -> Result<Self, EngineError> {
        model_file::inspect(&settings.path)?;
        let (jobs, job_rx) = std_mpsc::channel();
        let (ready_tx, ready_rx) = std_mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("hearth-embed".into())
            .spawn(move || run(&settings, &ready_tx, &job_rx))
            .map_err(|e| EngineError::Backend(format!("cannot start the embedding thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(info)) => Ok(Self {
                jobs: Some(jobs),
                thread: Some(thread),
                info,
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

    pub fn info(&self) -> &EmbeddingInfo {
        &self.info
    }

    /// Vectors of length 1, one per input, and the tokens they took;
    /// stopped between two inputs once `cancel` is. Blocking.
    pub fn embed(
        &self,
        inputs: Vec<String>,
        cancel: CancellationToken,
    ) -> Result<(Vec<Vec<f32>>, u32), ProviderError> {
        let (answer, rx) = std_mpsc::sync_channel(1);
        let gone = || ProviderError::Failed("the embedding model has stopped".into());
        let jobs = self.jobs.as_ref().ok_or_else(gone)?;
        jobs.send(EmbedJob {
            inputs,
            answer,
            cancel,
        })
        .map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())?
    }
}

impl Drop for EmbeddingModel {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(
    settings: &EmbeddingSettings,
    ready: &std_mpsc::SyncSender<Result<EmbeddingInfo, EngineError>>,
    jobs: &std_mpsc::Receiver<EmbedJob>,
) {
    super::log::route_to_tracing();
    let loaded = backends::load(settings.backends_dir.as_deref(), &settings.rpc_servers)
        .map_err(|e| EngineError::Backend(e.to_string()))
        .and_then(|_| super::shared_backend::backend())
        .and_then(|backend| {
            let params = LlamaModelParams::default();
            LlamaModel::load_from_file(&backend, &settings.path, &params)
                .map(|model| (backend, model))
                .map_err(|e| {
                    tracing::debug!("embedding model: {e}");
                    EngineError::ModelLoad {
                        path: settings.path.clone(),
                    }
                })
        });
    let (backend, model) = match loaded {
        Ok(loaded) => loaded,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let threads = hardware::thread_count(settings.threads).min(MOST_THREADS);
    let mut embedder = Embedder::own_pooling(&backend, &model, threads);
    let info = EmbeddingInfo {
        name: name_of(&settings.path),
        id: id_of(&settings.path),
        dimensions: embedder.dimensions(),
        n_ctx_train: model.n_ctx_train(),
    };
    tracing::info!(?info, "embedding model loaded");
    if ready.send(Ok(info)).is_err() {
        return;
    }
    while let Ok(job) = jobs.recv() {
        embedder.serve(job);
    }
}

/// The file's name without its folder or `.gguf`.
fn name_of(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.strip_suffix(".gguf").unwrap_or(&file).to_string()
}

/// The file's name and size: a re-downloaded copy of the same model keeps
/// its vectors; another model (or another quantisation) does not.
fn id_of(path: &Path) -> String {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    format!("{}:{size}", name_of(path))
}

/// The seam memory and documents search through.
impl hearth_core::embed::Embed for EmbeddingModel {
    fn model_id(&self) -> &str {
        &self.info().id
    }

    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, hearth_core::embed::EmbedError> {
        let asked = texts.len();
        let (vectors, _) = EmbeddingModel::embed(self, texts, CancellationToken::new())?;
        if vectors.len() != asked {
            return Err(hearth_core::embed::EmbedError::Count {
                asked,
                got: vectors.len(),
            });
        }
        Ok(vectors)
    }
}
