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

pub use catalogue::{Catalogue, Model};

/// Largest model recommended for a CPU without a GPU backend, in billions
/// of weights: beyond it replies come at a few tokens a second.
const CPU_MAX_PARAMS_B: f64 = 8.5;

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

    /// The largest model of the catalogue to run here: what fits, and on a
    /// CPU no larger than it answers at a usable speed.
    pub fn recommend<'a>(&self, catalogue: &'a Catalogue) -> Option<&'a Model> {
        catalogue
            .models
            .iter()
            .filter(|m| self.gpu || m.entry.params_b <= CPU_MAX_PARAMS_B)
            .filter(|m| m.entry.params_b >= 1.0 && self.fits(m))
            .max_by(|a, b| a.entry.params_b.total_cmp(&b.entry.params_b))
    }
}

/// Where `hearth models pull` puts models: `<data dir>/models`.
pub fn download_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("models")
}

/// The file of `model` where hearth would find it, if present.
pub fn installed(model: &Model, data_dir: &Path) -> Option<PathBuf> {
    model_file::model_dirs(data_dir)
        .into_iter()
        .map(|d| d.join(&model.entry.file))
        .find(|p| p.is_file())
}
