//! The local engine, loaded once and restarted with
//! another GGUF when a route or `/model` names another model. Only one
//! model is ever loaded: the old engine is dropped (its `Drop` blocks while
//! the worker finishes and saves its cache, so inside `spawn_blocking`)
//! before the new one starts.

use std::sync::Arc;

use tokio::sync::Mutex;

use crate::chat::{Priority, ProviderError};
use crate::config::Config;
use crate::engine::{CacheBoard, Engine, ModelInfo, Waiting};
use crate::providers::LocalProvider;

/// The provider name of the in-process engine.
pub const LOCAL: &str = "local";

pub struct LocalModels {
    /// The config the engine settings come from (the model file varies).
    base: Config,
    loaded: Mutex<Option<(String, Arc<LocalProvider>)>>,
    /// The loaded engine's queue, for `/metrics`.
    waiting: std::sync::Mutex<Option<Arc<Waiting>>>,
    /// The loaded model and what its KV cache holds, for the web page.
    view: std::sync::Mutex<Option<EngineView>>,
}

/// What the web page shows of the loaded engine.
#[derive(Clone)]
pub struct EngineView {
    pub info: ModelInfo,
    pub cache: Arc<CacheBoard>,
}

impl LocalModels {
    pub fn new(config: Config) -> Self {
        Self {
            base: config,
            loaded: Mutex::new(None),
            waiting: std::sync::Mutex::new(None),
            view: std::sync::Mutex::new(None),
        }
    }

    /// The loaded model and its KV cache, once one is loaded.
    pub fn view(&self) -> Option<EngineView> {
        self.view.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Requests waiting for the loaded model, by priority (none before one
    /// is loaded).
    pub fn queue_depth(&self) -> Vec<(Priority, usize)> {
        let waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.as_ref().map(|w| w.depth()).unwrap_or_default()
    }

    /// Whether the engine has nothing to decode (true before one is
    /// loaded): background work goes now without slowing a reply.
    pub fn idle(&self) -> bool {
        let waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.as_ref().is_none_or(|w| w.idle())
    }

    /// [`Self::idle`], for background work that holds on to it.
    pub fn idle_fn(models: &Arc<Self>) -> crate::memory::indexer::Idle {
        let models = models.clone();
        Arc::new(move || models.idle())
    }

    /// Loads `model_file` unless it is the loaded one.
    pub async fn ensure(&self, model_file: &str) -> Result<Arc<LocalProvider>, ProviderError> {
        let mut loaded = self.loaded.lock().await;
        if let Some((file, provider)) = loaded.as_ref()
            && file == model_file
        {
            return Ok(provider.clone());
        }
        if let Some((file, old)) = loaded.take() {
            tracing::info!(from = file, to = model_file, "switching the local model");
            // Wait until replies still using the old engine let go of it,
            // then drop it off the async threads.
            tokio::task::spawn_blocking(move || {
                let mut old = old;
                loop {
                    match Arc::try_unwrap(old) {
                        Ok(provider) => break drop(provider),
                        Err(still_shared) => {
                            old = still_shared;
                            std::thread::sleep(std::time::Duration::from_millis(50));
                        }
                    }
                }
            })
            .await
            .map_err(|e| ProviderError::Failed(format!("unloading the model failed: {e}")))?;
        }
        let mut config = self.base.clone();
        config.model.path = model_file.to_string();
        let settings = crate::engine_setup::engine_settings(&config)
            .map_err(|e| ProviderError::InvalidRequest(e.to_string()))?;
        let engine = tokio::task::spawn_blocking(move || Engine::start(settings, None))
            .await
            .map_err(|e| ProviderError::Failed(format!("loading the model failed: {e}")))?
            .map_err(|e| ProviderError::Failed(e.to_string()))?;
        *self.waiting.lock().unwrap_or_else(|e| e.into_inner()) = Some(engine.waiting());
        *self.view.lock().unwrap_or_else(|e| e.into_inner()) = Some(EngineView {
            info: engine.info().clone(),
            cache: engine.cache_board(),
        });
        let provider = Arc::new(LocalProvider::new(engine));
        *loaded = Some((model_file.to_string(), provider.clone()));
        Ok(provider)
    }

    /// The loaded model, or the default one loaded now: for background
    /// work, which must not make the engine switch models.
    pub async fn loaded_or_default(&self) -> Result<Arc<LocalProvider>, ProviderError> {
        if let Some((_, provider)) = self.loaded.lock().await.as_ref() {
            return Ok(provider.clone());
        }
        self.ensure(&self.base.model.path).await
    }

    /// Unloads the model, letting the engine save its cache.
    pub async fn shutdown(&self) {
        if let Some((_, provider)) = self.loaded.lock().await.take() {
            let _ = tokio::task::spawn_blocking(move || drop(provider)).await;
        }
    }
}
