//! Engine errors: each says what went wrong and how to fix it.

use std::path::PathBuf;

use super::gguf::GgufError;
use super::template::TemplateError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("model file `{name}` not found (looked in {}); fix: run `models/fetch` (or `make chat`), or set `[model] path`", .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    ModelNotFound {
        name: String,
        searched: Vec<PathBuf>,
    },
    #[error("model file {} is truncated ({size} of {expected} bytes); fix: run `models/fetch` to fetch it again", .path.display())]
    ModelTruncated {
        path: PathBuf,
        size: u64,
        expected: u64,
    },
    #[error("model file {} is not a usable GGUF model: {source}; fix: run `models/fetch` to fetch it again, or point `[model] path` at a GGUF file", .path.display())]
    ModelInvalid { path: PathBuf, source: GgufError },
    #[error("llama.cpp could not load {} (corrupt, truncated or an unsupported architecture); fix: run `models/fetch` to fetch it again, or choose another `[model] path`", .path.display())]
    ModelLoad { path: PathBuf },
    #[error("{0}")]
    Template(#[from] TemplateError),
    #[error("llama.cpp failed to start: {0}")]
    Backend(String),
    #[error(
        "could not create a llama.cpp context of {n_ctx} tokens{}; fix: lower `[model] context_size`{}",
        if *gpu_layers > 0 { format!(" with {gpu_layers} layers and their KV cache on the GPU") } else { String::new() },
        if *gpu_layers > 0 { ", or put fewer layers on the GPU: a smaller `[model] gpu_layers`, or `[engine] gpu_memory_mb` below what the device reports free" } else { "" }
    )]
    Context { n_ctx: u32, gpu_layers: u32 },
    #[error("the vision projector {} cannot be used: {reason}; fix: set `[model] mmproj` to the projector made for this model, or remove it to read text only", .path.display())]
    Projector { path: PathBuf, reason: String },
    #[error("the draft model {} cannot be used: {reason}; fix: set `[engine] draft_model` to a small model with the same vocabulary (the same family's smaller size), or remove it (prompt-lookup drafts need no second model)", .path.display())]
    DraftModel { path: PathBuf, reason: String },
    #[error("the engine worker has stopped")]
    WorkerGone,
}
