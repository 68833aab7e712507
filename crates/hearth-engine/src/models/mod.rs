//! Models to run: the catalogue of recommended GGUF files, downloads from a
//! Hugging Face hub that resume and verify, and what fits this machine.
//!
//! `hearth models list|pull|use|rm` (in `cli/`) and `hearth doctor` use it;
//! the engine only ever sees the file that `[model] path` names.

pub mod catalogue;
mod expect;
pub mod hub;
mod transfer;

use std::path::{Path, PathBuf};

use crate::backends::Backends;
use crate::hardware::Hardware;
use crate::model_file;

pub use catalogue::{Catalogue, Kind, Model};

/// Largest model recommended for a CPU without a GPU backend, in billions
/// of weights: beyond it replies come at a few tokens a second.
const CPU_MAX_PARAMS_B: f64 = 8.5;
/// Largest Whisper model recommended for a CPU, in billions of weights.
const CPU_MAX_SPEECH_PARAMS_B: f64 = 0.25;
/// Largest Piper voice recommended for a CPU (a medium one): a high one
/// takes twice the time to speak.
const CPU_MAX_VOICE_PARAMS_B: f64 = 0.02;
/// The largest embedding model recommended on a CPU: BGE small (33M); a
/// question is embedded before every reply.
const CPU_MAX_EMBEDDING_PARAMS_B: f64 = 0.05;

/// The memory a model may take on this machine.
#[derive(Debug, Clone)]
pub struct Budget {
    pub bytes: u64,
    /// `GPU_NAME VRAM` or `RAM`.
    pub on: String,
    pub gpu: bool,
}

impl Budget {
    /// Free VRAM of the first GPU a loaded backend offers, else available RAM.
    pub fn of(backends: Option<&Backends>) -> Self {
        if let Some(gpu) = backends.and_then(|b| b.gpus().next()) {
            return Self {
                bytes: gpu.free_bytes,
                on: format!("{} VRAM", gpu.description),
                gpu: true,
            };
        }
        Self {
            bytes: Hardware::available_ram(),
            on: "RAM".to_string(),
            gpu: false,
        }
    }

    /// Whether `model` fits.
    pub fn fits(&self, model: &Model) -> bool {
        model.needs_bytes() <= self.bytes
    }

    /// The largest chat model of the catalogue to run here: what fits,
    /// and on a CPU no larger than it answers at a usable speed.
    pub fn recommend<'a>(&self, catalogue: &'a Catalogue) -> Option<&'a Model> {
        self.recommend_kind(catalogue, Kind::Chat)
    }

    /// The largest model of `kind` to run here. On a CPU: a chat model up
    /// to [`CPU_MAX_PARAMS_B`], a Whisper model up to
    /// [`CPU_MAX_SPEECH_PARAMS_B`], a voice up to
    /// [`CPU_MAX_VOICE_PARAMS_B`], an embedding model up to
    /// [`CPU_MAX_EMBEDDING_PARAMS_B`]; never a chat test model.
    pub fn recommend_kind<'a>(&self, catalogue: &'a Catalogue, kind: Kind) -> Option<&'a Model> {
        let cpu_max = match kind {
            Kind::Chat | Kind::Vision => CPU_MAX_PARAMS_B,
            Kind::SpeechToText => CPU_MAX_SPEECH_PARAMS_B,
            Kind::TextToSpeech => CPU_MAX_VOICE_PARAMS_B,
            Kind::Embedding => CPU_MAX_EMBEDDING_PARAMS_B,
        };
        let of_kind = || {
            catalogue
                .models
                .iter()
                .filter(move |m| m.entry.kind == kind)
        };
        let largest = |min: f64| {
            // The first of equals, as the catalogue lists them.
            of_kind()
                .filter(|m| self.gpu || m.entry.params_b <= cpu_max)
                .filter(|m| m.entry.params_b >= min && self.fits(m))
                .rev()
                .max_by(|a, b| a.entry.params_b.total_cmp(&b.entry.params_b))
        };
        match kind {
            // The chat test models are not worth recommending.
            Kind::Chat => largest(1.0),
            _ => largest(0.0),
        }
    }
}

/// Where `hearth models pull` puts models: `<data dir>/models`.
pub fn download_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("models")
}

/// The main file of `model` where hearth would find it, if every file of
/// it is there.
pub fn installed(model: &Model, data_dir: &Path) -> Option<PathBuf> {
    let pieces = model.pieces();
    model_file::model_dirs(data_dir)
        .into_iter()
        .find(|d| pieces.iter().all(|p| d.join(&p.local).is_file()))
        .map(|d| d.join(&pieces[0].local))
}
