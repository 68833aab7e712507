//! Memory by meaning: the embedding model behind recall.
//!
//! [`Embed`] is the narrow seam the store needs (a model's name and its
//! vectors); [`EmbeddingModel`] is the real one, llama.cpp on a thread of
//! its own. [`locate`] finds the model `[memory] embedding_model` names,
//! or the catalogue's embedding model wherever the chat model could be
//! found, and [`start`] loads it.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::engine::{EmbeddingModel, EmbeddingSettings, EngineError, model_file};
use crate::models::{self, Catalogue, Kind};

pub use hearth_core::embed::{Embed, EmbedError};

/// A configured embedding model that cannot be found.
#[derive(Debug, thiserror::Error)]
#[error("the embedding model `{name}` was not found (looked in {}); fix: `hearth models pull bge-small-en-v1.5 && hearth models use bge-small-en-v1.5`, or set `[memory] embedding_model` to a GGUF file, or to \"off\"", .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
pub struct NotFound {
    pub name: String,
    pub searched: Vec<PathBuf>,
}

/// What `[memory] embedding_model` says to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// `"off"`: memories are found by their words only.
    Off,
    /// Nothing configured, and no catalogue embedding model downloaded.
    NotFound,
    Found(PathBuf),
}

/// The embedding model to load: the configured file (a path, a file name
/// in the models folders, or a catalogue name), else the first catalogue
/// embedding model present in the models folders or beside the chat
/// model. A configured model that is missing is an error naming where it
/// was looked for.
pub fn locate(config: &Config) -> Result<Located, NotFound> {
    let catalogue = Catalogue::builtin();
    match config.memory.embedding_model.as_deref() {
        Some("off") => Ok(Located::Off),
        Some(name) => {
            let file = catalogue
                .get(name)
                .ok()
                .filter(|m| m.entry.kind == Kind::Embedding)
                .map_or_else(|| name.to_string(), |m| m.config_name());
            model_file::locate(&file, &config.data_dir)
                .map(Located::Found)
                .map_err(|e| NotFound {
                    name: name.to_string(),
                    searched: match e {
                        EngineError::ModelNotFound { searched, .. } => searched,
                        _ => Vec::new(),
                    },
                })
        }
        None => {
            let beside_chat = model_file::locate(&config.model.path, &config.data_dir)
                .ok()
                .and_then(|p| p.parent().map(PathBuf::from));
            let found = catalogue
                .models
                .iter()
                .filter(|m| m.entry.kind == Kind::Embedding)
                .find_map(|m| {
                    models::installed(m, &config.data_dir).or_else(|| {
                        let beside = beside_chat.as_ref()?.join(m.config_name());
                        beside.is_file().then_some(beside)
                    })
                });
            Ok(found.map_or(Located::NotFound, Located::Found))
        }
    }
}

/// Why the embedding model did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    NotFound(#[from] NotFound),
    #[error("the embedding model: {0}")]
    Load(#[from] EngineError),
}

/// Loads the embedding model [`locate`] finds; `None` when there is none
/// (memory then works by keywords, as before). Blocking.
pub fn start(config: &Config) -> Result<Option<Arc<EmbeddingModel>>, StartError> {
    let path = match locate(config)? {
        Located::Found(path) => path,
        Located::Off => return Ok(None),
        Located::NotFound => {
            tracing::info!(
                "no embedding model: memories are found by their words only \
                 (fix: hearth models pull bge-small-en-v1.5 && hearth models use bge-small-en-v1.5)"
            );
            return Ok(None);
        }
    };
    let model = EmbeddingModel::start(EmbeddingSettings {
        path,
        threads: config.model.threads,
        backends_dir: config.engine.backends_dir.clone(),
        rpc_servers: config.engine.rpc_servers.clone(),
    })?;
    Ok(Some(Arc::new(model)))
}
