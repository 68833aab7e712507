//! The config's `[model]` and `[engine]` turned into the engine's settings.
//!
//! It lives here, above both: the engine crate does not know the config,
//! and the config does not know the engine.

use crate::config::Config;
use crate::engine::{EngineError, EngineSettings, model_file};

/// Settings from the config, with the model file located.
pub fn engine_settings(config: &Config) -> Result<EngineSettings, EngineError> {
    let e = &config.engine;
    Ok(EngineSettings {
        model_path: model_file::locate(&config.model.path, &config.data_dir)?,
        chat_template: config.model.chat_template.clone(),
        tool_format: config.model.tool_format,
        context_size: config.model.context_size,
        threads: config.model.threads,
        batch_size: config.model.batch_size,
        flash_attention: config.model.flash_attention.enabled(),
        gpu_layers: config.model.gpu_layers,
        slots: e.slots,
        ram_cache_bytes: (e.ram_cache_mb as usize) << 20,
        disk_cache_bytes: e.disk_cache_mb << 20,
        kv_dir: Some(config.data_dir.join("kv")),
        prompt_cache: e.prompt_cache,
        reuse_min_chunk: e.reuse_min_chunk,
        share_prompts: e.share_prompts,
        backends_dir: e.backends_dir.clone(),
        swa_full: e.swa_full,
        swa_checkpoints: e.swa_checkpoints,
    })
}
